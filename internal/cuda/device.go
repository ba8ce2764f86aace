// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import (
	"fmt"
	"runtime"
	"sync"
)

// Device attribute numbers (CUdevice_attribute), stable across releases.
const (
	attrMaxThreadsPerBlock        = 1
	attrClockRateKHz              = 13
	attrMultiprocessorCount       = 16
	attrMemoryClockRateKHz        = 36
	attrGlobalMemoryBusWidth      = 37
	attrL2CacheSize               = 38
	attrComputeCapabilityMajor    = 75
	attrComputeCapabilityMinor    = 76
	attrMaxSharedMemPerBlockOptin = 97
)

// DeviceInfo is what the driver says about a device.
type DeviceInfo struct {
	Ordinal int
	Name    string
	// UUID is the device's UUID as NVML and nvidia-smi write it ("GPU-...").
	UUID string
	// Major and Minor are the compute capability (9.0 for Hopper).
	Major, Minor int
	// SMs is the number of multiprocessors.
	SMs                int
	TotalMemBytes      uint64
	L2Bytes            int
	MaxThreadsPerBlock int
	// MaxSharedPerBlockOptin is the shared memory a block may use after
	// raising its dynamic limit.
	MaxSharedPerBlockOptin int
	ClockKHz               int
	MemClockKHz            int
	MemBusWidthBits        int
}

// PeakMemoryBandwidthGBps is the device memory's theoretical bandwidth in
// GB/s (10^9 bytes per second): two transfers per memory clock over the
// whole bus, the figure datasheets and published kernel results (TE,
// FlashInfer, torchao) divide by, for example 3352 GB/s on an H100 SXM.
// It is 0 when the driver reported no memory clock or bus width. A copy
// reaches 86-91% of it (H200, H100), which is why kquant's own figures are given
// against a measured copy as well.
func (i DeviceInfo) PeakMemoryBandwidthGBps() float64 {
	return 2 * float64(i.MemClockKHz) * 1e3 * float64(i.MemBusWidthBits) / 8 / 1e9
}

// ComputeCapability formats Major.Minor as "9.0".
func (i DeviceInfo) ComputeCapability() string { return fmt.Sprintf("%d.%d", i.Major, i.Minor) }

// Device is one GPU with its primary context, owned by a goroutine locked
// to one OS thread. All its methods are safe for concurrent use; work from
// several goroutines is run one function at a time.
type Device struct {
	drv  *Driver
	info DeviceInfo
	// h hands functions to the owner thread (see handoff for why it
	// spins before it sleeps).
	h    *handoff
	done chan struct{}
	once sync.Once
	ctx  *Ctx
}

// OpenDevice starts the owner thread of device ordinal, retains its primary
// context and makes it current there.
func (d *Driver) OpenDevice(ordinal int) (*Device, error) {
	dev := &Device{
		drv:  d,
		h:    newHandoff(),
		done: make(chan struct{}),
	}
	ready := make(chan error, 1)
	go dev.loop(ordinal, ready)
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("opening CUDA device %d: %w", ordinal, err)
	}
	return dev, nil
}

// loop is the owner thread. It never unlocks the OS thread: when it returns,
// the runtime ends the thread, and with it any driver state bound to it.
func (dev *Device) loop(ordinal int, ready chan<- error) {
	runtime.LockOSThread()
	defer close(dev.done)
	l := dev.drv.lib
	h, r := l.deviceGet(ordinal)
	if err := l.check(r, "cuDeviceGet(%d)", ordinal); err != nil {
		ready <- err
		return
	}
	cctx, r := l.primaryCtxRetain(h)
	if err := l.check(r, "cuDevicePrimaryCtxRetain"); err != nil {
		ready <- err
		return
	}
	defer l.primaryCtxRelease(h)
	if err := l.check(l.ctxSetCurrent(cctx), "cuCtxSetCurrent"); err != nil {
		ready <- err
		return
	}
	info, err := queryInfo(l, h, ordinal)
	if err != nil {
		ready <- err
		return
	}
	dev.info = info
	dev.ctx = &Ctx{lib: l, dev: dev}
	ready <- nil
	dev.h.loop()
	// Let queued frees and destroys finish first: the context is released
	// right after.
	l.ctxSynchronize()
}

func queryInfo(l *lib, h int32, ordinal int) (DeviceInfo, error) {
	info := DeviceInfo{Ordinal: ordinal}
	var r result
	info.Name, r = l.deviceName(h)
	if err := l.check(r, "cuDeviceGetName"); err != nil {
		return info, err
	}
	u, r := l.deviceUUID(h)
	if err := l.check(r, "cuDeviceGetUuid"); err != nil {
		return info, err
	}
	info.UUID = fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
	info.TotalMemBytes, r = l.deviceTotalMem(h)
	if err := l.check(r, "cuDeviceTotalMem_v2"); err != nil {
		return info, err
	}
	for _, a := range []struct {
		attr int
		dst  *int
	}{
		{attrComputeCapabilityMajor, &info.Major},
		{attrComputeCapabilityMinor, &info.Minor},
		{attrMultiprocessorCount, &info.SMs},
		{attrL2CacheSize, &info.L2Bytes},
		{attrMaxThreadsPerBlock, &info.MaxThreadsPerBlock},
		{attrMaxSharedMemPerBlockOptin, &info.MaxSharedPerBlockOptin},
		{attrClockRateKHz, &info.ClockKHz},
		{attrMemoryClockRateKHz, &info.MemClockKHz},
		{attrGlobalMemoryBusWidth, &info.MemBusWidthBits},
	} {
		v, r := l.deviceAttr(a.attr, h)
		if err := l.check(r, "cuDeviceGetAttribute(%d)", a.attr); err != nil {
			return info, err
		}
		*a.dst = v
	}
	return info, nil
}

// Info describes the device.
func (dev *Device) Info() DeviceInfo { return dev.info }

// Driver is the driver the device was opened with.
func (dev *Device) Driver() *Driver { return dev.drv }

// Do runs fn on the device's owner thread and returns its error. A panic in
// fn is returned as an error rather than killing the owner thread. fn must
// not call Do on the same Device (it would wait for itself); it should not
// keep c after it returns.
//
// Batch a whole step's launches into one Do: each Do is a hand-off between
// threads (well under a microsecond while both sides spin, a futex round
// trip when the device thread was idle).
func (dev *Device) Do(fn func(c *Ctx) error) error {
	return dev.h.do(func() error { return fn(dev.ctx) })
}

// Close stops the owner thread after the work already accepted and releases
// the primary context. Memory and other handles should be freed first;
// the driver frees what is left when the process's last context goes.
func (dev *Device) Close() error {
	dev.once.Do(dev.h.close)
	<-dev.done
	return nil
}
