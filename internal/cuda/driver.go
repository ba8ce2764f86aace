// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import (
	"fmt"
)

// Driver is the loaded and initialised CUDA driver library. Make one with
// Open; it is safe for concurrent use and lives as long as the process.
type Driver struct {
	lib     *lib
	version int
}

// Open loads libcuda.so.1, resolves the entry points kquant uses and calls
// cuInit. On a machine without a driver the error starts with
// "no CUDA driver:" (IsNoDriver reports true) and nothing else happens.
func Open() (*Driver, error) {
	l, err := loadLib()
	if err != nil {
		return nil, err
	}
	// cuInit fails with CUDA_ERROR_NO_DEVICE on a machine that has the
	// library but no GPU; that too means "no usable driver" to callers.
	if err := l.check(l.init(0), "cuInit"); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoDriver, err)
	}
	v, r := l.driverVersion()
	if err := l.check(r, "cuDriverGetVersion"); err != nil {
		return nil, err
	}
	return &Driver{lib: l, version: v}, nil
}

// Available reports whether a CUDA driver can be opened here and, if not,
// why ("no CUDA driver: libcuda.so.1: cannot open shared object file...").
func Available() (bool, string) {
	if _, err := Open(); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// Version is the CUDA version the driver supports, as
// 1000*major + 10*minor (13000 for CUDA 13.0).
func (d *Driver) Version() int { return d.version }

// VersionString formats Version as "13.0".
func (d *Driver) VersionString() string {
	return fmt.Sprintf("%d.%d", d.version/1000, d.version%1000/10)
}

// DeviceCount is the number of CUDA devices visible to this process.
func (d *Driver) DeviceCount() (int, error) {
	n, r := d.lib.deviceCount()
	return n, d.lib.check(r, "cuDeviceGetCount")
}
