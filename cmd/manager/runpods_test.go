// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kquant/kquant/domain/runpod"
)

func TestRunPodFlags(t *testing.T) {
	cases := map[string]struct {
		args           []string
		wantAllocation runpod.Allocation
		wantErr        string
	}{
		"the safe default needs the agent image": {args: nil, wantErr: "needs --run-image"},
		"device plugin": {
			args:           []string{"--run-image=agent:v1"},
			wantAllocation: runpod.AllocationDevicePlugin,
		},
		"DRA with a test driver's class and domain": {
			args:           []string{"--gpu-allocation=DRA", "--run-image=agent:v1", "--dra-device-class=gpu.example.com", "--dra-uuid-attribute-domain=gpu.example.com"},
			wantAllocation: runpod.AllocationDRA,
		},
		"in-agent execution": {args: []string{"--gpu-allocation=None"}},
		"unknown allocation": {args: []string{"--gpu-allocation=Magic", "--run-image=a"}, wantErr: "want DevicePlugin, DRA or None"},
		"bad resources":      {args: []string{"--run-image=a", "--run-resources={"}, wantErr: "--run-resources"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var f runPodFlags
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			f.addFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			opts, err := f.options()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("options() error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := opts.Execution.RunPod.Allocation; got != tc.wantAllocation {
				t.Errorf("allocation %q, want %q", got, tc.wantAllocation)
			}
		})
	}

	var f runPodFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.addFlags(fs)
	if err := fs.Parse([]string{"--run-image=agent:v1", "--allow-shared-gpus", "--kueue-queue-name=benchmarks",
		`--run-resources={"requests":{"cpu":"500m"}}`, `--run-tolerations=[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]`,
		"--run-extra-arg=-v=1", "--run-extra-arg=--log-format=json"}); err != nil {
		t.Fatal(err)
	}
	opts, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	cfg := opts.Execution.RunPod
	if !opts.AllowSharedGPUs || cfg.KueueQueueName != "benchmarks" || cfg.Resources.Requests.Cpu().String() != "500m" ||
		len(cfg.Tolerations) != 1 || cfg.Tolerations[0].Effect != corev1.TaintEffectNoSchedule || len(cfg.ExtraArgs) != 2 ||
		cfg.GPUResourceName != runpod.DefaultGPUResourceName || cfg.UUIDAttributeDomain != runpod.DefaultUUIDAttributeDomain {
		t.Errorf("options %+v", opts)
	}
}
