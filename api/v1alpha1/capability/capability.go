// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package capability

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kquant/kquant/api/v1alpha1"
)

// Version is a major.minor pair: a compute capability (9.0) or a CUDA
// version (12.9). The zero Version means unknown.
type Version struct {
	Major, Minor int
}

// V is shorthand for Version{major, minor}.
func V(major, minor int) Version { return Version{Major: major, Minor: minor} }

// String formats the version as "major.minor".
func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// IsZero reports whether the version is unknown.
func (v Version) IsZero() bool { return v.Major == 0 && v.Minor == 0 }

// AtLeast reports whether v >= o.
func (v Version) AtLeast(o Version) bool {
	if v.Major != o.Major {
		return v.Major > o.Major
	}
	return v.Minor >= o.Minor
}

// Parse reads "major.minor" (as written in GPUNodeProfile).
func Parse(s string) (Version, error) {
	majorText, minorText, ok := strings.Cut(strings.TrimSpace(s), ".")
	if !ok {
		return Version{}, fmt.Errorf("version %q is not major.minor", s)
	}
	major, err := strconv.Atoi(majorText)
	if err != nil || major < 0 {
		return Version{}, fmt.Errorf("version %q: bad major %q", s, majorText)
	}
	minor, err := strconv.Atoi(minorText)
	if err != nil || minor < 0 {
		return Version{}, fmt.Errorf("version %q: bad minor %q", s, minorText)
	}
	return Version{Major: major, Minor: minor}, nil
}

// CUDAFromNVML converts NVML's CUDA driver version integer (1000*major +
// 10*minor, for example 12090) to a Version.
func CUDAFromNVML(v int) Version {
	if v <= 0 {
		return Version{}
	}
	return Version{Major: v / 1000, Minor: (v % 1000) / 10}
}

// Architecture names the family of a compute capability. It is for people
// and placement filters; capability rules never look at it.
func Architecture(cc Version) v1alpha1.Architecture {
	switch {
	case cc.Major == 8 && cc.Minor == 9:
		return v1alpha1.ArchitectureAda
	case cc.Major == 8:
		return v1alpha1.ArchitectureAmpere
	case cc.Major == 9:
		return v1alpha1.ArchitectureHopper
	case cc.Major >= 10 && cc.Major <= 12:
		return v1alpha1.ArchitectureBlackwell
	default:
		return v1alpha1.ArchitectureUnknown
	}
}
