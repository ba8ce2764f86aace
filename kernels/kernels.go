package kernels

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

//go:embed *.ptx ptx80/*.ptx.gz
var ptxFS embed.FS

// StampPrefix starts the first line of every generated PTX file; the sha256
// of the source follows it (the .cu file followed by every kernels/*.cuh in
// name order: the headers the sources include).
const StampPrefix = "// kquant-source-sha256: "

// Module names (the .cu file each PTX came from, without extension).
const (
	// ModuleQuantize holds the quantize, scale and dequantize kernels.
	ModuleQuantize = "quantize"
)

// PTXDirEnv, when set, names a directory whose <module>.ptx files (and
// ptx80/<module>.ptx.gz for the compute_80 target) are used instead of the
// embedded ones: for trying freshly generated PTX on a GPU machine without
// rebuilding.
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
// device: compute_80 on a Hopper GPU runs the software conversions there,
// which is how the GPU suite checks them bit for bit.
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
// major.minor: PTXTargetEnv when set, else TargetFor's.
func deviceTarget(major, minor int) (Target, error) {
	switch t := Target(os.Getenv(PTXTargetEnv)); t {
	case "":
		return TargetFor(major, minor)
	case TargetHopper, TargetAmpere:
		return t, nil
	default:
		return "", fmt.Errorf("%s=%q: want %s or %s", PTXTargetEnv, t, TargetHopper, TargetAmpere)
	}
}

// ptxPath is module's PTX file for target t, relative to the kernels
// directory (or PTXDirEnv's). The compute_80 PTX is gzipped: it is about
// twice the size of compute_90's (the software conversions are inlined)
// and compresses tenfold.
func ptxPath(module string, t Target) string {
	if t == TargetAmpere {
		return "ptx80/" + module + ".ptx.gz"
	}
	return module + ".ptx"
}

// PTX returns the PTX text of a module for target t.
func PTX(module string, t Target) ([]byte, error) {
	name := ptxPath(module, t)
	var b []byte
	var err error
	if dir := os.Getenv(PTXDirEnv); dir != "" {
		if b, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			return nil, fmt.Errorf("reading PTX of %s (%s) from %s: %w", module, t, PTXDirEnv, err)
		}
	} else if b, err = ptxFS.ReadFile(name); err != nil {
		return nil, fmt.Errorf("no embedded PTX for module %q (%s): %w", module, t, err)
	}
	if !strings.HasSuffix(name, ".gz") {
		return b, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("PTX of %s (%s): %w", module, t, err)
	}
	if b, err = io.ReadAll(zr); err != nil {
		return nil, fmt.Errorf("PTX of %s (%s): %w", module, t, err)
	}
	return b, nil
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
