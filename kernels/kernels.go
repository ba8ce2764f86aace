// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ulikunitz/xz"
)

// StampPrefix starts the first line of every generated PTX file and of
// every decompressed cubin file (a line Cubin strips before the ELF); the
// sha256 of the source follows it (the .cu file followed by every
// kernels/*.cuh in name order: the headers the sources include).
const StampPrefix = "// kquant-source-sha256: "

// Module names (the .cu file each PTX came from, without extension).
const (
	// ModuleQuantize holds the quantize, scale and dequantize kernels.
	ModuleQuantize = "quantize"
)

// PTXDirEnv, when set, names a directory whose <module>.ptx.xz files (and
// ptx80/<module>.ptx.xz for the compute_80 target, sass/<SM>/<module>.cubin.xz
// for machine code) are used instead of the embedded ones: for trying
// freshly generated code (hack/gen-kernels.sh's output directory) on a GPU
// machine without rebuilding. A module with no cubin there loads its PTX
// from there.
const PTXDirEnv = "KQUANT_PTX_DIR"

// Target is the virtual architecture a module's PTX was generated for.
// hack/gen-kernels.sh builds every module for both; the kernels compute the
// same bytes on either.
type Target string

const (
	// TargetHopper is compute_90: Hopper and newer GPUs (the driver
	// JIT-compiles it for Blackwell), with the hardware FP8 conversions.
	TargetHopper Target = "compute_90"
	// TargetAmpere is compute_80: Ampere (8.0, 8.6, 8.7) and Ada (8.9),
	// with the FP8 conversions in software (kq_fp8_sw.cuh) and sm_90's
	// 16x2 integer max as two 16-bit maxima.
	TargetAmpere Target = "compute_80"
)

// PTXTargetEnv, when set to a Target, loads that target's PTX whatever the
// device, JIT-compiled by the driver, and never a cubin: compute_80 on a
// Hopper GPU runs the software conversions there, which is how the GPU
// suite checks them bit for bit, and compute_90 checks the PTX that GPUs
// without a cubin of their own JIT-compile.
const PTXTargetEnv = "KQUANT_PTX_TARGET"

// TargetFor is the PTX target of a device of compute capability
// major.minor: Hopper's from 9.0, Ampere's from 8.0; older devices have
// none.
func TargetFor(major, minor int) (Target, error) {
	switch {
	case major >= 9:
		return TargetHopper, nil
	case major == 8:
		return TargetAmpere, nil
	}
	return "", fmt.Errorf("compute capability %d.%d: the kernels need 8.0 or higher", major, minor)
}

// deviceTarget is the target Load uses on a device of compute capability
// major.minor: PTXTargetEnv when set (forced is then true: PTX only), else
// TargetFor's.
func deviceTarget(major, minor int) (t Target, forced bool, err error) {
	switch t := Target(os.Getenv(PTXTargetEnv)); t {
	case "":
		t, err := TargetFor(major, minor)
		return t, false, err
	case TargetHopper, TargetAmpere:
		return t, true, nil
	default:
		return "", false, fmt.Errorf("%s=%q: want %s or %s", PTXTargetEnv, t, TargetHopper, TargetAmpere)
	}
}

// SMFor is the machine code target of a device of compute capability
// major.minor ("sm_90" for 9.0): the directory of kernels/sass that holds
// its cubins. A cubin runs only on the SM it names here (Load takes no
// other SM's), so a GPU of another compute capability JIT-compiles the PTX.
func SMFor(major, minor int) string { return fmt.Sprintf("sm_%d%d", major, minor) }

// codeExt ends the name of every file of generated code: PTX and cubins
// are committed xz-compressed (PTX shrinks about twelvefold, machine code
// about ninefold), which keeps the checkout small enough to travel to a GPU
// machine beside its test binaries; readCode decompresses them.
const codeExt = ".xz"

// cubinPath is module's cubin for sm, relative to the kernels directory (or
// PTXDirEnv's).
func cubinPath(module, sm string) string { return "sass/" + sm + "/" + module + ".cubin" + codeExt }

// ptxPath is module's PTX file for target t, relative to the kernels
// directory (or PTXDirEnv's).
func ptxPath(module string, t Target) string {
	if t == TargetAmpere {
		return "ptx80/" + module + ".ptx" + codeExt
	}
	return module + ".ptx" + codeExt
}

// PTX returns the PTX text of a module for target t.
func PTX(module string, t Target) ([]byte, error) {
	b, err := readCode(ptxPath(module, t))
	if err != nil {
		return nil, fmt.Errorf("PTX of module %q (%s): %w", module, t, err)
	}
	return b, nil
}

// stampedCubin returns the decompressed cubin file of module for sm, its
// stamp line first; an error wrapping fs.ErrNotExist when there is none.
func stampedCubin(module, sm string) ([]byte, error) {
	b, err := readCode(cubinPath(module, sm))
	if err != nil {
		return nil, fmt.Errorf("cubin of module %q (%s): %w", module, sm, err)
	}
	return b, nil
}

// Cubin returns the machine code of module for sm (SMFor), an ELF image
// for cuModuleLoadData, with the stamp line stripped; an error wrapping
// fs.ErrNotExist when there is none.
func Cubin(module, sm string) ([]byte, error) {
	b, err := stampedCubin(module, sm)
	if err != nil {
		return nil, err
	}
	if SourceHash(b) == "" {
		return nil, fmt.Errorf("cubin of module %q (%s) has no stamp line", module, sm)
	}
	return b[bytes.IndexByte(b, '\n')+1:], nil
}

// readCode reads a file of generated code, name relative to the kernels
// directory, from PTXDirEnv's directory when set, else from the embedded
// files, and decompresses it.
func readCode(name string) ([]byte, error) {
	var b []byte
	var err error
	if dir := os.Getenv(PTXDirEnv); dir != "" {
		if b, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			return nil, fmt.Errorf("reading %s from %s: %w", name, PTXDirEnv, err)
		}
	} else if b, err = codeFS.ReadFile(name); err != nil {
		return nil, fmt.Errorf("not embedded: %w", err)
	}
	return decompress(name, b)
}

// decompress returns the contents of the xz stream b, the file name.
func decompress(name string, b []byte) ([]byte, error) {
	zr, err := xz.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("decompressing %s: %w", name, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("decompressing %s: %w", name, err)
	}
	return out, nil
}

// SourceHash returns the source sha256 stamped on a PTX text, or "" if the
// text has no stamp.
func SourceHash(ptx []byte) string {
	line, _, _ := bufio.NewReader(bytes.NewReader(ptx)).ReadLine()
	s := string(line)
	if !strings.HasPrefix(s, StampPrefix) {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(s, StampPrefix))
}
