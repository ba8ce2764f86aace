// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Buffer is a range of device memory. Slices of a Buffer share its memory;
// only a Buffer returned by Ctx.Alloc may be freed.
type Buffer struct {
	ptr  uint64
	size int
}

// Ptr is the device address, as kernels see it.
func (b Buffer) Ptr() uint64 { return b.ptr }

// Size is the length in bytes.
func (b Buffer) Size() int { return b.size }

// Slice is the n bytes of b starting at off. It panics when out of range,
// as slicing a Go slice does.
func (b Buffer) Slice(off, n int) Buffer {
	if off < 0 || n < 0 || off+n > b.size {
		panic(fmt.Sprintf("cuda: Buffer.Slice(%d, %d) of %d bytes", off, n, b.size))
	}
	return Buffer{ptr: b.ptr + uint64(off), size: n}
}

// Stream is a CUDA stream (created non-blocking with respect to the legacy
// default stream, so that capture on it is never broken by other work).
type Stream struct{ h uintptr }

// Event is a CUDA event, with timing enabled.
type Event struct{ h uintptr }

// Module is a loaded PTX module.
type Module struct{ h uintptr }

// Function is a kernel of a Module.
type Function struct {
	h    uintptr
	name string
}

// Name is the kernel's symbol name.
func (f Function) Name() string { return f.name }

// Graph is a captured, not yet instantiated, CUDA graph.
type Graph struct{ h uintptr }

// GraphExec is an instantiated graph, ready to launch.
type GraphExec struct{ h uintptr }

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// Dim is a one-dimensional shape of x.
func Dim(x int) Dim3 { return Dim3{X: uint32(x), Y: 1, Z: 1} }

// Dim2 is a two-dimensional shape.
func Dim2(x, y int) Dim3 { return Dim3{X: uint32(x), Y: uint32(y), Z: 1} }

// Args collects kernel parameters in declaration order. Each parameter takes
// one 8-byte slot; values narrower than 8 bytes sit in its low bytes, which
// is what the driver reads on a little-endian host. The methods return the
// receiver so that arguments chain: NewArgs().Buffer(x).U32(n).
//
// One parameter may instead be a by-value struct of up to MaxStructBytes
// (Struct): the kernel-parameter payload that carries small host data to
// the device inside the launch itself.
type Args struct {
	slots [maxArgs]uint64
	n     int
	err   error
	// blob holds the struct parameter's bytes; uint64 words keep it
	// 8-byte aligned like the struct it stands for.
	blob      [MaxStructBytes / 8]uint64
	blobWords int
	blobIdx   int
}

// MaxStructBytes is the largest by-value struct parameter Args takes: a
// 2 KiB payload plus its header, well inside the driver's 4 KiB
// kernel-parameter limit together with the slots.
const MaxStructBytes = 2560

// NewArgs returns an empty argument list.
func NewArgs() *Args { return &Args{blobIdx: -1} }

// Reset empties the list for reuse without allocating.
func (a *Args) Reset() *Args {
	a.n, a.err = 0, nil
	a.blobWords, a.blobIdx = 0, -1
	return a
}

// Struct appends a by-value struct parameter whose bytes are b (its size
// must be the struct's sizeof, a multiple of 8 bytes). The bytes are
// copied, so b may be reused at once; only one Struct per launch.
func (a *Args) Struct(b []byte) *Args {
	switch {
	case a.blobIdx >= 0 && a.blobWords > 0:
		a.err = fmt.Errorf("cuda: more than one struct kernel argument")
		return a
	case len(b) > MaxStructBytes || len(b)%8 != 0 || len(b) == 0:
		a.err = fmt.Errorf("cuda: struct kernel argument of %d bytes (want a multiple of 8 up to %d)", len(b), MaxStructBytes)
		return a
	}
	words := len(b) / 8
	for i := range words {
		a.blob[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	idx := a.n
	a.push(0)
	a.blobWords, a.blobIdx = words, idx
	return a
}

func (a *Args) push(v uint64) *Args {
	if a.n == len(a.slots) {
		a.err = fmt.Errorf("cuda: more than %d kernel arguments", len(a.slots))
		return a
	}
	a.slots[a.n] = v
	a.n++
	return a
}

// Buffer appends a device pointer parameter (T* in the kernel).
func (a *Args) Buffer(b Buffer) *Args { return a.push(b.ptr) }

// Ptr appends a raw device address.
func (a *Args) Ptr(p uint64) *Args { return a.push(p) }

// U32 appends an unsigned int parameter.
func (a *Args) U32(v uint32) *Args { return a.push(uint64(v)) }

// I32 appends an int parameter.
func (a *Args) I32(v int32) *Args { return a.push(uint64(uint32(v))) }

// U64 appends an unsigned long long parameter.
func (a *Args) U64(v uint64) *Args { return a.push(v) }

// I64 appends a long long parameter.
func (a *Args) I64(v int64) *Args { return a.push(uint64(v)) }

// F32 appends a float parameter.
func (a *Args) F32(v float32) *Args { return a.push(uint64(math.Float32bits(v))) }

// Len is the number of parameters.
func (a *Args) Len() int { return a.n }
