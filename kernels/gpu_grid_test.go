// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"os"
	"slices"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/kernels"
)

// TestResidentPerSM: each module's load read every kernel's occupancy
// from the driver, at least one block of 256 threads a SM each (a kernel
// that fits none could not launch). It logs the NVFP4 amax kernel's, whose
// one-wave grid is sized from it (nvfp4AmaxShare), and the rowwise
// kernel's, and what each module loaded from.
func TestResidentPerSM(t *testing.T) {
	if err := dev.Do(set.LoadAll); err != nil {
		t.Fatal(err)
	}
	for _, m := range set.Loaded() {
		t.Logf("module %s: %s, loaded in %v", m.Name, m.Code, m.Took)
	}
	perSM := set.ResidentPerSM()
	if len(perSM) == 0 {
		t.Fatal("no occupancy read at Load")
	}
	for name, n := range perSM {
		if n < 1 {
			t.Errorf("%s: %d blocks a SM", name, n)
		}
	}
	for _, name := range []string{"kq_nvf4_amax_bf16", "kq_nvf4_amax_f16", "kq_nvf4_amax_f32", "kq_nvf4_row_bf16", "kq_nvf4_row_f32"} {
		t.Logf("%s: %d blocks a SM", name, perSM[name])
	}
}

// TestLazyModules: a fresh Set loads the payload module alone (Load's
// check that the driver takes the code), then each module on the first use
// of one of its kernels, from the cubin of the device's SM when there is
// one (unless kernels.PTXTargetEnv forces the PTX).
func TestLazyModules(t *testing.T) {
	info := dev.Info()
	want := kernels.SMFor(info.Major, info.Minor)
	if _, err := kernels.Cubin(kernels.ModuleTiming, want); err != nil {
		want = string(set.Target())
	}
	if forced := os.Getenv(kernels.PTXTargetEnv); forced != "" {
		want = forced
	}
	names := func(mods []kernels.LoadedModule) []string {
		var out []string
		for _, m := range mods {
			if m.Code != want {
				t.Errorf("module %s loaded from %s, want %s", m.Name, m.Code, want)
			}
			out = append(out, m.Name)
		}
		return out
	}
	err := dev.Do(func(c *cuda.Ctx) error {
		s, err := kernels.Load(c)
		if err != nil {
			return err
		}
		defer func() { _ = s.Close(c) }()
		if got := names(s.Loaded()); !slices.Equal(got, []string{kernels.ModulePayload}) {
			t.Errorf("Load loaded %v, want the payload module alone", got)
		}
		lead, err := s.NewLeadIn(c)
		if err != nil {
			return err
		}
		defer func() { _ = lead.Free(c) }()
		if err := lead.Queue(c, stream); err != nil {
			return err
		}
		if got := names(s.Loaded()); !slices.Equal(got, []string{kernels.ModulePayload, kernels.ModuleTiming}) {
			t.Errorf("after a lead-in: loaded %v, want the payload and timing modules", got)
		}
		return c.StreamSynchronize(stream)
	})
	if err != nil {
		t.Fatal(err)
	}
}
