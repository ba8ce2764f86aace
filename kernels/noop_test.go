// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"regexp"
	"strings"
	"testing"
)

// kernelDef matches a kernel's name in its definition, with the token
// pasting of the macros that stamp one kernel per input type.
var kernelDef = regexp.MustCompile(`__global__ void (?:__launch_bounds__\((?:[^()]|\([^()]*\))*\) )?(kq_\w+?)(?:##(?:SUF|sfx))?\(`)

// TestNoOpParameterMatchesSources holds the module table's noOp lists to
// the sources: launch appends the flag to exactly the kernels the table
// marks, and a kernel given one parameter too few reads a pointer the
// launch never passed. For every kernel of every module, the table must
// say it takes the flag exactly when its definition's last parameter is
// `const float *noop`.
func TestNoOpParameterMatchesSources(t *testing.T) {
	sources := readSources(t)
	// takes maps each definition's name (a macro's without its pasted
	// type suffix, "kq_amax_") to whether its last parameter is the flag.
	takes := map[string]bool{}
	for name, text := range sources {
		for _, loc := range kernelDef.FindAllStringSubmatchIndex(text, -1) {
			def := text[loc[2]:loc[3]]
			params, ok := parameters(text[loc[1]:])
			if !ok {
				t.Fatalf("%s: no parameter list closes the definition of %s", name, def)
			}
			takes[def] = strings.HasSuffix(strings.TrimSpace(params), "const float *noop")
		}
	}
	var checked int
	for _, m := range moduleTable() {
		for _, n := range append(m.required(), m.optional...) {
			def, ok := definitionOf(n, takes)
			if !ok {
				t.Errorf("module %s: kernel %s has no definition in the sources", m.name, n)
				continue
			}
			checked++
			if got, want := m.takesNoOp(n), takes[def]; got != want {
				t.Errorf("module %s: the table says %s takes the no-op flag: %v; its definition (%s) says %v", m.name, n, got, def, want)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no kernel checked")
	}
}

// parameters returns the text of a parameter list that starts at s (just
// after its opening parenthesis), up to its closing one.
func parameters(s string) (string, bool) {
	depth := 1
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return strings.ReplaceAll(s[:i], "\\\n", " "), true
			}
		}
	}
	return "", false
}

// definitionOf is the name of kernel n's definition in takes: n itself,
// or n without its input type's suffix.
func definitionOf(n string, takes map[string]bool) (string, bool) {
	if _, ok := takes[n]; ok {
		return n, true
	}
	for _, d := range []DType{F32, BF16, F16} {
		if base, ok := strings.CutSuffix(n, d.suffix()); ok {
			if _, ok := takes[base]; ok {
				return base, true
			}
		}
	}
	return "", false
}
