// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package npy writes and reads NumPy .npy files, format version 1.0, as
// NumPy's format specification (numpy.lib.format) defines them: the magic
// "\x93NUMPY", the version bytes 1 and 0, a little-endian uint16 header
// length, and an ASCII Python dict literal with the keys 'descr',
// 'fortran_order' and 'shape', padded with spaces and ended by '\n' so that
// the data starts at a multiple of 64 bytes. Data is C order (row-major).
//
// Only the two element types kquant dumps are supported: little-endian
// float32 ('<f4') and uint8 ('|u1'). The reader exists so that tests can
// check what the writer produced without depending on NumPy; it accepts the
// files this package writes and the common variants NumPy writes for these
// types, and refuses everything else with an error.
//
// Why not a library (github.com/sbinet/npyio, the maintained Go one, read
// at its npy/writer.go and npy/array.go): its Write takes the shape from the
// Go value's nesting, so a flat []float32 of a rows x cols tensor becomes a
// 1-D array unless it is copied into [][]float32 (gigabytes for the Extended
// shapes) or into a gonum mat.Dense (float64, the wrong dtype); its Array
// type cannot be built with a shape from outside the package; it pads the
// header to 16 bytes where NumPy 1.x aligns the data at 64; it writes each
// element with its own Write call; and it brings gonum along. Writing the
// format ourselves is about 100 lines, checked against NumPy's specification
// by the reader and the tests.
package npy
