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
package npy
