// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kquant/kquant/internal/quant/element"
)

var updateCUDAConstants = flag.Bool("update-cuda-constants", false, "rewrite "+constantsHeader+" from internal/quant/element")

// constantsHeader is the one CUDA header that holds the formats' limits.
const constantsHeader = "kq_constants.cuh"

// cudaConstant is one #define of constantsHeader: a float32 the kernels
// compute with, written as a decimal literal or, where the kernels take
// its bits (__uint_as_float), as hexadecimal bits.
type cudaConstant struct {
	name  string
	doc   string
	value float32
	bits  bool
}

// cudaConstants are the header's values, each from element, the
// reference's owner of each format's range.
func cudaConstants() []cudaConstant {
	e4m3, e5m2, e2m1 := element.E4M3.MaxFinite(), element.E5M2.MaxFinite(), element.E2M1.MaxFinite()
	return []cudaConstant{
		{name: "KQ_E4M3_MAX", doc: "FP8 E4M3's largest finite magnitude: the saturation bound and the scale numerator.", value: e4m3},
		{name: "KQ_E5M2_MAX", doc: "FP8 E5M2's largest finite magnitude.", value: e5m2},
		{name: "KQ_E4M3_MAX_INV_BITS", doc: "float32(1/KQ_E4M3_MAX), rounded to nearest even, as bits: MXFP8's\n// E8M0 rule multiplies by it rather than divide once a block.", value: 1 / e4m3, bits: true},
		{name: "KQ_E5M2_MAX_INV_BITS", doc: "float32(1/KQ_E5M2_MAX), likewise.", value: 1 / e5m2, bits: true},
		{name: "KQ_E2M1_MAX", doc: "FP4 E2M1's largest magnitude: NVFP4's clamp and block-scale divisor.", value: e2m1},
		{name: "KQ_NVFP4_TENSOR_NUM", doc: "KQ_E4M3_MAX x KQ_E2M1_MAX, the numerator of NVFP4's per-tensor scale.", value: e4m3 * e2m1},
	}
}

// literal is c as CUDA source writes it.
func (c cudaConstant) literal() string {
	if c.bits {
		return fmt.Sprintf("0x%08Xu", math.Float32bits(c.value))
	}
	s := strconv.FormatFloat(float64(c.value), 'f', -1, 32)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s + "f"
}

// renderConstantsHeader is constantsHeader's text.
func renderConstantsHeader() string {
	var b strings.Builder
	b.WriteString(`// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kq_constants.cuh: the format limits the kernels compute with, written
// from internal/quant/element by
//   go test ./kernels -run TestCUDAConstants -update-cuda-constants
// A kernel that used another value than the reference would compute other
// bytes, so the sources name these and never write the numbers:
// TestCUDAConstants fails when this file and element disagree, and
// TestCUDAConstantsOnlyInHeader when a source writes one as a literal.
#pragma once
`)
	for _, c := range cudaConstants() {
		fmt.Fprintf(&b, "\n// %s\n#define %s %s\n", c.doc, c.name, c.literal())
	}
	return b.String()
}

// TestCUDAConstants checks constantsHeader against element (rewriting it
// with -update-cuda-constants).
func TestCUDAConstants(t *testing.T) {
	want := renderConstantsHeader()
	if *updateCUDAConstants {
		if err := os.WriteFile(constantsHeader, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(constantsHeader)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("not running in the kernels package directory")
	}
	if err != nil {
		t.Fatalf("reading %s: %v", constantsHeader, err)
	}
	if string(got) != want {
		t.Errorf("%s differs from what internal/quant/element gives; rerun with -update-cuda-constants and regenerate the PTX (hack/gen-kernels.sh)", constantsHeader)
	}
}

// TestCUDAConstantsOnlyInHeader fails when a kernel source writes one of
// constantsHeader's values as a literal (in code or a comment: a comment
// that quotes the number drifts with it) instead of naming it.
func TestCUDAConstantsOnlyInHeader(t *testing.T) {
	sources := readSources(t)
	for _, c := range cudaConstants() {
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(c.literal()))
		for name, text := range sources {
			if name == constantsHeader {
				continue
			}
			for _, line := range strings.Split(text, "\n") {
				if re.MatchString(line) {
					t.Errorf("%s writes %s (%s) as a literal: %q", name, c.literal(), c.name, strings.TrimSpace(line))
				}
			}
		}
	}
}

// readSources returns the text of every kernel source and header by name.
func readSources(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".cu") || strings.HasSuffix(name, ".cuh") {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = string(b)
		}
	}
	if len(out) == 0 {
		t.Skip("not running in the kernels package directory")
	}
	return out
}
