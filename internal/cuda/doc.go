// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package cuda is kquant's thin binding of the CUDA driver API.
//
// The driver library is opened at run time with dlopen("libcuda.so.1"), so
// the agent builds and runs on machines without CUDA headers, toolkits or
// GPUs: Open returns an error starting with "no CUDA driver:" there, and
// Available reports the same reason without panicking. Only the versioned
// entry points that kquant needs are resolved (cuMemAlloc_v2,
// cuStreamBeginCapture_v2, ...), against our own minimal C declarations.
//
// A CUDA context is bound to an OS thread, so each opened Device runs one
// goroutine locked to its OS thread that holds the device's primary context.
// All work reaches that goroutine over a channel: Device.Do runs a function
// on the device thread and hands it a *Ctx, the only value through which
// driver calls are made. Batching several calls into one Do keeps the
// goroutine hand-off (an OS-thread wake-up) out of per-launch costs.
//
// Handles (Buffer, Stream, Event, Module, Function, Graph, GraphExec) are
// plain values; they are only meaningful on the Device that created them.
// Ctx.ResidentBlocks asks the driver how many blocks of a Function an SM
// holds at once, from the registers and shared memory the JIT gave it, so
// that grids are sized from the compiled kernel rather than from a guess.
//
// Typical use:
//
//	drv, err := cuda.Open()
//	dev, err := drv.OpenDevice(0)
//	defer dev.Close()
//	err = dev.Do(func(c *cuda.Ctx) error {
//		buf, err := c.Alloc(1 << 20)
//		...
//		return c.Launch(fn, cuda.Dim(blocks), cuda.Dim(256), 0, stream, cuda.NewArgs().Buffer(buf).U32(n))
//	})
package cuda
