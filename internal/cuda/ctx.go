// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// Stream capture modes (CUstreamCaptureMode).
const captureModeThreadLocal = 1

// Flags.
const (
	streamNonBlocking = 1 // CU_STREAM_NON_BLOCKING
	eventDefault      = 0 // CU_EVENT_DEFAULT: timing enabled
)

// Ctx is the device's context as seen from its owner thread: every driver
// call goes through it. A Ctx is handed to the function given to
// Device.Do and is valid only during that call.
type Ctx struct {
	lib *lib
	dev *Device
}

// Info describes the device.
func (c *Ctx) Info() DeviceInfo { return c.dev.info }

// Synchronize waits for all work on the device.
func (c *Ctx) Synchronize() error {
	return c.lib.check(c.lib.ctxSynchronize(), "cuCtxSynchronize")
}

// Alloc allocates n bytes of device memory (uninitialised).
func (c *Ctx) Alloc(n int) (Buffer, error) {
	if n <= 0 {
		return Buffer{}, fmt.Errorf("cuda: Alloc(%d): size must be positive", n)
	}
	p, r := c.lib.memAlloc(n)
	if err := c.lib.check(r, "cuMemAlloc_v2(%d)", n); err != nil {
		return Buffer{}, err
	}
	return Buffer{ptr: p, size: n}, nil
}

// Free releases memory returned by Alloc. Freeing the zero Buffer is a no-op.
func (c *Ctx) Free(b Buffer) error {
	if b.ptr == 0 {
		return nil
	}
	return c.lib.check(c.lib.memFree(b.ptr), "cuMemFree_v2")
}

// The synchronous copies and Memset are device-wide sync points. The driver
// runs them on the legacy default stream, which does not order itself with
// kquant's non-blocking streams, and a copy from pageable host memory may
// return before its DMA lands; so each waits for all queued work before
// (no kernel still reads what it overwrites or writes what it reads) and
// after (the data is in place when it returns). Use them for setup and
// checks, never inside a timed or captured step.

// CopyToDevice copies src into the start of dst. It waits for all work on
// the device before and after the copy.
func (c *Ctx) CopyToDevice(dst Buffer, src []byte) error {
	return c.copySync("CopyToDevice", "into", len(src), dst.size, func() error {
		if err := c.lib.check(c.lib.memcpyHtoD(dst.ptr, unsafe.Pointer(&src[0]), len(src)), "cuMemcpyHtoD_v2(%d)", len(src)); err != nil {
			return err
		}
		return c.Synchronize()
	})
}

// CopyToHost copies the start of src into dst once all work queued on the
// device has finished.
func (c *Ctx) CopyToHost(dst []byte, src Buffer) error {
	return c.copySync("CopyToHost", "from", len(dst), src.size, func() error {
		return c.lib.check(c.lib.memcpyDtoH(unsafe.Pointer(&dst[0]), src.ptr, len(dst)), "cuMemcpyDtoH_v2(%d)", len(dst))
	})
}

// copySync runs do, op's synchronous copy of n bytes to or from (dir) a
// buffer of size bytes, once all work queued on the device has finished.
// An empty copy does nothing.
func (c *Ctx) copySync(op, dir string, n, size int, do func() error) error {
	if n > size {
		return fmt.Errorf("cuda: %s of %d bytes %s %d", op, n, dir, size)
	}
	if n == 0 {
		return nil
	}
	if err := c.Synchronize(); err != nil {
		return err
	}
	return do()
}

// CopyAsync copies n bytes from src to dst on stream s (capturable).
func (c *Ctx) CopyAsync(dst, src Buffer, n int, s Stream) error {
	if n > dst.size || n > src.size {
		return fmt.Errorf("cuda: CopyAsync of %d bytes between %d and %d", n, src.size, dst.size)
	}
	return c.lib.check(c.lib.memcpyDtoDAsync(dst.ptr, src.ptr, n, s.h), "cuMemcpyDtoDAsync_v2")
}

// Memset sets every byte of b to v. Like CopyToDevice it waits for all
// work on the device before and after.
func (c *Ctx) Memset(b Buffer, v byte) error {
	if err := c.Synchronize(); err != nil {
		return err
	}
	if err := c.lib.check(c.lib.memsetD8(b.ptr, v, b.size), "cuMemsetD8_v2"); err != nil {
		return err
	}
	return c.Synchronize()
}

// MemsetAsync sets every byte of b to v on stream s (capturable).
func (c *Ctx) MemsetAsync(b Buffer, v byte, s Stream) error {
	return c.lib.check(c.lib.memsetD8Async(b.ptr, v, b.size, s.h), "cuMemsetD8Async")
}

// NewStream creates a non-blocking stream.
func (c *Ctx) NewStream() (Stream, error) {
	h, r := c.lib.streamCreate(streamNonBlocking)
	return Stream{h: h}, c.lib.check(r, "cuStreamCreate")
}

// StreamSynchronize waits for the work queued on s.
func (c *Ctx) StreamSynchronize(s Stream) error {
	return c.lib.check(c.lib.streamSynchronize(s.h), "cuStreamSynchronize")
}

// DestroyStream destroys s once its work is done.
func (c *Ctx) DestroyStream(s Stream) error {
	return c.lib.check(c.lib.streamDestroy(s.h), "cuStreamDestroy_v2")
}

// NewEvent creates a timing event.
func (c *Ctx) NewEvent() (Event, error) {
	h, r := c.lib.eventCreate(eventDefault)
	return Event{h: h}, c.lib.check(r, "cuEventCreate")
}

// Record records e on s.
func (c *Ctx) Record(e Event, s Stream) error {
	return c.lib.check(c.lib.eventRecord(e.h, s.h), "cuEventRecord")
}

// EventSynchronize waits for e.
func (c *Ctx) EventSynchronize(e Event) error {
	return c.lib.check(c.lib.eventSynchronize(e.h), "cuEventSynchronize")
}

// ElapsedMillis is the GPU time between two recorded, completed events.
func (c *Ctx) ElapsedMillis(start, end Event) (float32, error) {
	ms, r := c.lib.eventElapsed(start.h, end.h)
	return ms, c.lib.check(r, "cuEventElapsedTime")
}

// DestroyEvent destroys e.
func (c *Ctx) DestroyEvent(e Event) error {
	return c.lib.check(c.lib.eventDestroy(e.h), "cuEventDestroy_v2")
}

// LoadModule JIT-compiles PTX text for this device. On failure the error
// carries the JIT compiler's log.
func (c *Ctx) LoadModule(ptx []byte) (Module, error) {
	h, log, r := c.lib.moduleLoad(ptx)
	if err := c.lib.check(r, "cuModuleLoadDataEx"); err != nil {
		if cerr := (*Error)(nil); errors.As(err, &cerr) {
			cerr.Log = log
		}
		return Module{}, err
	}
	return Module{h: h}, nil
}

// Function looks a kernel up by its (extern "C") name.
func (c *Ctx) Function(m Module, name string) (Function, error) {
	h, r := c.lib.moduleGetFunction(m.h, name)
	return Function{h: h, name: name}, c.lib.check(r, "cuModuleGetFunction(%q)", name)
}

// ResidentBlocks is how many blocks of f, launched with blockThreads
// threads and dynamicSharedBytes of dynamic shared memory, one SM of this
// device holds at once (the driver's occupancy calculation from f's
// registers and shared memory as the JIT compiled it): what a grid-stride
// kernel's grid is sized from so that its blocks run in whole waves.
func (c *Ctx) ResidentBlocks(f Function, blockThreads, dynamicSharedBytes int) (int, error) {
	n, r := c.lib.maxActiveBlocks(f.h, blockThreads, dynamicSharedBytes)
	return n, c.lib.check(r, "cuOccupancyMaxActiveBlocksPerMultiprocessor(%q)", f.name)
}

// UnloadModule unloads m; its Functions become invalid.
func (c *Ctx) UnloadModule(m Module) error {
	return c.lib.check(c.lib.moduleUnload(m.h), "cuModuleUnload")
}

// Launch queues kernel f on s. Launch errors (bad shape, too many
// resources) are reported here; faults inside the kernel surface at the next
// synchronising call.
func (c *Ctx) Launch(f Function, grid, block Dim3, sharedBytes uint32, s Stream, args *Args) error {
	if args.err != nil {
		return fmt.Errorf("launching %s: %w", f.name, args.err)
	}
	r := c.lib.launch(f.h, grid, block, sharedBytes, s.h, args.slots[:args.n], args.blob[:args.blobWords], args.blobIdx)
	if r != resultSuccess {
		return fmt.Errorf("launching %s grid %v block %v: %w", f.name, grid, block, c.lib.check(r, "cuLaunchKernel"))
	}
	return nil
}

// LaunchPacked queues kernel f on s with params as its whole parameter
// block, laid out as the kernel's parameter list is in memory (each
// parameter at its natural alignment; for a kernel whose only parameter is
// a struct, the struct's bytes). The driver copies the block once at the
// launch, so params may be reused as soon as LaunchPacked returns, and a
// stream capture stores the values. Unlike Launch it needs no Args and
// copies nothing on the host: the cheapest launch for a kernel-parameter
// payload.
func (c *Ctx) LaunchPacked(f Function, grid, block Dim3, sharedBytes uint32, s Stream, params []byte) error {
	if len(params) == 0 || len(params) > maxParamBytes {
		return fmt.Errorf("launching %s: %d bytes of parameters (want 1 to %d)", f.name, len(params), maxParamBytes)
	}
	r := c.lib.launchPacked(f.h, grid, block, sharedBytes, s.h, params)
	if r != resultSuccess {
		return fmt.Errorf("launching %s grid %v block %v: %w", f.name, grid, block, c.lib.check(r, "cuLaunchKernel"))
	}
	return nil
}

// maxParamBytes is the driver's kernel-parameter limit on compute
// capability 7.0 and later (4 KiB; CUDA 12.1 raised it to 32 KiB for
// Volta+, but 4 KiB holds on every driver kquant supports).
const maxParamBytes = 4096

// Nop makes one empty cgo call: what the binding's own crossing into C
// costs, without the driver (for host-overhead measurements).
func (c *Ctx) Nop() { c.lib.nop() }

// BeginCapture starts capturing s into a graph. The mode is thread-local:
// only this (owner) thread's calls are checked for capture safety, so other
// devices' threads in the process are unaffected.
func (c *Ctx) BeginCapture(s Stream) error {
	return c.lib.check(c.lib.beginCapture(s.h, captureModeThreadLocal), "cuStreamBeginCapture_v2")
}

// EndCapture ends the capture of s and returns the captured graph.
func (c *Ctx) EndCapture(s Stream) (Graph, error) {
	h, r := c.lib.endCapture(s.h)
	return Graph{h: h}, c.lib.check(r, "cuStreamEndCapture")
}

// Instantiate makes a launchable graph of g.
func (c *Ctx) Instantiate(g Graph) (GraphExec, error) {
	h, r := c.lib.graphInstantiate(g.h, 0)
	return GraphExec{h: h}, c.lib.check(r, "cuGraphInstantiateWithFlags")
}

// LaunchGraph queues an instantiated graph on s.
func (c *Ctx) LaunchGraph(g GraphExec, s Stream) error {
	return c.lib.check(c.lib.graphLaunch(g.h, s.h), "cuGraphLaunch")
}

// DestroyGraphExec destroys an instantiated graph.
func (c *Ctx) DestroyGraphExec(g GraphExec) error {
	return c.lib.check(c.lib.graphExecDestroy(g.h), "cuGraphExecDestroy")
}

// DestroyGraph destroys a captured graph (instantiations stay valid).
func (c *Ctx) DestroyGraph(g Graph) error {
	return c.lib.check(c.lib.graphDestroy(g.h), "cuGraphDestroy")
}

// Capture captures everything fn queues on s into a graph and instantiates
// it. When fn fails, the capture is ended and discarded.
func (c *Ctx) Capture(s Stream, fn func() error) (GraphExec, error) {
	if err := c.BeginCapture(s); err != nil {
		return GraphExec{}, err
	}
	ferr := fn()
	g, err := c.EndCapture(s)
	if ferr != nil {
		if err == nil {
			_ = c.DestroyGraph(g)
		}
		return GraphExec{}, fmt.Errorf("capturing: %w", ferr)
	}
	if err != nil {
		return GraphExec{}, err
	}
	defer func() { _ = c.DestroyGraph(g) }()
	return c.Instantiate(g)
}
