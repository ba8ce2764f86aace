// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package cuda

import (
	"bytes"
	"strings"
	"testing"
)

// These tests need a GPU and its driver: build with -tags gpu and run on
// the GPU machine.

func openDevice(t *testing.T) *Device {
	t.Helper()
	drv, err := Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	dev, err := drv.OpenDevice(0)
	if err != nil {
		t.Fatalf("OpenDevice(0): %v", err)
	}
	t.Cleanup(func() { _ = dev.Close() })
	return dev
}

func TestDeviceInfo(t *testing.T) {
	dev := openDevice(t)
	info := dev.Info()
	t.Logf("driver CUDA %s; device %d: %s, CC %s, %d SMs, %d MiB, L2 %d KiB, clock %d MHz, memory clock %d MHz x %d bits",
		dev.Driver().VersionString(), info.Ordinal, info.Name, info.ComputeCapability(), info.SMs,
		info.TotalMemBytes>>20, info.L2Bytes>>10, info.ClockKHz/1000, info.MemClockKHz/1000, info.MemBusWidthBits)
	if info.Major < 7 || info.SMs == 0 || info.TotalMemBytes == 0 || info.Name == "" {
		t.Errorf("implausible device info %+v", info)
	}
	n, err := dev.Driver().DeviceCount()
	if err != nil || n < 1 {
		t.Errorf("DeviceCount() = %d, %v", n, err)
	}
}

func TestMemoryRoundTrip(t *testing.T) {
	dev := openDevice(t)
	src := make([]byte, 1<<20+3)
	for i := range src {
		src[i] = byte(i * 7)
	}
	got := make([]byte, len(src))
	err := dev.Do(func(c *Ctx) error {
		a, err := c.Alloc(len(src))
		if err != nil {
			return err
		}
		defer c.Free(a)
		b, err := c.Alloc(len(src))
		if err != nil {
			return err
		}
		defer c.Free(b)
		s, err := c.NewStream()
		if err != nil {
			return err
		}
		defer c.DestroyStream(s)
		if err := c.CopyToDevice(a, src); err != nil {
			return err
		}
		if err := c.Memset(b, 0x5A); err != nil {
			return err
		}
		// Copy all but the first 16 bytes through a graph, so capture,
		// instantiate and launch are exercised too.
		g, err := c.Capture(s, func() error {
			return c.CopyAsync(b.Slice(16, len(src)-16), a.Slice(16, len(src)-16), len(src)-16, s)
		})
		if err != nil {
			return err
		}
		defer c.DestroyGraphExec(g)
		if err := c.LaunchGraph(g, s); err != nil {
			return err
		}
		if err := c.StreamSynchronize(s); err != nil {
			return err
		}
		return c.CopyToHost(got, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Repeat([]byte{0x5A}, 16), src[16:]...)
	if !bytes.Equal(got, want) {
		t.Error("device round trip changed the data")
	}
}

func TestErrorsCarryDriverText(t *testing.T) {
	dev := openDevice(t)
	err := dev.Do(func(c *Ctx) error {
		_, err := c.LoadModule([]byte(".version 8.0\n.target sm_90\n.address_size 64\nthis is not ptx\n"))
		return err
	})
	if err == nil {
		t.Fatal("loading broken PTX succeeded")
	}
	t.Logf("broken PTX: %v", err)
	if !strings.Contains(err.Error(), "CUDA_ERROR_") {
		t.Errorf("error %q lacks the driver's error name", err)
	}
	err = dev.Do(func(c *Ctx) error {
		_, err := c.Alloc(1 << 62)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY") {
		t.Errorf("huge Alloc: err = %v, want CUDA_ERROR_OUT_OF_MEMORY", err)
	}
	// A panic on the device thread is an error, and the thread survives.
	if err := dev.Do(func(*Ctx) error { panic("boom") }); err == nil {
		t.Error("panic in Do was not reported")
	}
	if err := dev.Do(func(c *Ctx) error { return c.Synchronize() }); err != nil {
		t.Errorf("device thread unusable after a panic: %v", err)
	}
}
