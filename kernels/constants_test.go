// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kquant/kquant/internal/quant/element"
)

// TestCUDAConstantsMatchElement pins the numbers the CUDA sources write as
// literals to internal/quant/element, the reference's owner of each
// format's range: a kernel whose literal drifted from the reference would
// compute other bytes. Each rule names the literal's context in the source,
// so every copy is checked; a rule that matches nothing fails too (the
// source was rewritten and the rule must follow it).
func TestCUDAConstantsMatchElement(t *testing.T) {
	e4m3, e5m2, e2m1 := element.E4M3.MaxFinite(), element.E5M2.MaxFinite(), element.E2M1.MaxFinite()
	rules := []struct {
		name string
		// re's submatches are float literals, each checked against the
		// value of the same position in want.
		re   *regexp.Regexp
		want []float32
	}{
		{"FP8 max finite, by format", regexp.MustCompile(`(?:FMT == 0|fmt == KQ_E4M3) \? ([0-9.]+)f : ([0-9.]+)f`), []float32{e4m3, e5m2}},
		{"float32(1/FP8 max finite), by format", regexp.MustCompile(`fmt == KQ_E4M3 \? (0x[0-9A-F]+)u : (0x[0-9A-F]+)u`), []float32{1 / e4m3, 1 / e5m2}},
		{"NVFP4 tensor scale numerator, E4M3 max x E2M1 max", regexp.MustCompile(`__fdiv_rn\(([0-9.]+)f, amax\)`), []float32{e4m3 * e2m1}},
		{"E2M1 max finite, clamp", regexp.MustCompile(`fminf\(fabsf\(y\), ([0-9.]+)f\)`), []float32{e2m1}},
		{"E2M1 max finite, block scale divisor", regexp.MustCompile(`__fdiv_rn\(s, ([0-9.]+)f\)`), []float32{e2m1}},
	}
	sources := readSources(t)
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			var found int
			for name, text := range sources {
				for _, m := range r.re.FindAllStringSubmatch(text, -1) {
					found++
					for i, lit := range m[1:] {
						if got := literal(t, lit); got != r.want[i] {
							t.Errorf("%s: %q is %v; element says %v", name, m[0], got, r.want[i])
						}
					}
				}
			}
			if found == 0 {
				t.Errorf("no source matches %s: update the rule with the source", r.re)
			}
		})
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

// literal is the float32 a CUDA literal denotes: a decimal float, or the
// bits of one in hexadecimal (for __uint_as_float).
func literal(t *testing.T, s string) float32 {
	t.Helper()
	if strings.HasPrefix(s, "0x") {
		bits, err := strconv.ParseUint(s[2:], 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		return math.Float32frombits(uint32(bits))
	}
	v, err := strconv.ParseFloat(s, 32)
	if err != nil {
		t.Fatal(err)
	}
	return float32(v)
}
