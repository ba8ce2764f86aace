// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import "unsafe"

// Plain is the element types that can be copied to and from the device as
// raw bytes (no pointers inside).
type Plain interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~uint64 | ~int64 | ~float32 | ~float64
}

// Bytes views a slice of plain values as its bytes, without copying.
func Bytes[T Plain](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

// Upload copies src into dst.
func Upload[T Plain](c *Ctx, dst Buffer, src []T) error { return c.CopyToDevice(dst, Bytes(src)) }

// Download copies the start of src into dst.
func Download[T Plain](c *Ctx, dst []T, src Buffer) error { return c.CopyToHost(Bytes(dst), src) }
