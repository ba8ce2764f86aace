// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"testing"
)

func TestPrintEnv(t *testing.T) {
	t.Setenv("KQUANT_PAUSE_TEST", "GPU-1,GPU-2")
	var out bytes.Buffer
	printEnv(&out, []string{"KQUANT_PAUSE_TEST", "KQUANT_PAUSE_TEST_MISSING"})
	if want := "KQUANT_PAUSE_TEST=GPU-1,GPU-2\nKQUANT_PAUSE_TEST_MISSING unset\n"; out.String() != want {
		t.Errorf("printEnv wrote %q, want %q", out.String(), want)
	}
}
