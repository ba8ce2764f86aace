// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import (
	"errors"
	"fmt"
)

// result is a CUresult.
type result int32

// resultSuccess is CUDA_SUCCESS.
const resultSuccess result = 0

var (
	// errNoDriver is wrapped by every error that means "this machine has
	// no usable CUDA driver", so callers can fall back to the reference.
	errNoDriver = errors.New("no CUDA driver")
	// ErrClosed is returned for work submitted to a closed Device.
	ErrClosed = errors.New("cuda: device closed")
)

// IsNoDriver reports whether err says that no CUDA driver could be loaded.
func IsNoDriver(err error) bool { return errors.Is(err, errNoDriver) }

// Error is a failed driver call: the operation, the CUresult code and the
// driver's own name and description of it (cuGetErrorName/String).
type Error struct {
	Op   string // what kquant was doing, e.g. "cuMemAlloc_v2(1048576)"
	Code int    // the CUresult
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Text string // e.g. "out of memory"
	Log  string // the JIT error log, for module loads
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%s, code %d)", e.Op, e.Text, e.Name, e.Code)
	if e.Log != "" {
		s += ": " + e.Log
	}
	return s
}

// check turns a CUresult into an *Error carrying the driver's wording.
func (l *lib) check(r result, op string, args ...any) error {
	if r == resultSuccess {
		return nil
	}
	if len(args) > 0 {
		op = fmt.Sprintf(op, args...)
	}
	return &Error{Op: op, Code: int(r), Name: l.errorName(r), Text: l.errorString(r)}
}
