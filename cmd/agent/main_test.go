// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"
	"time"

	"github.com/kquant/kquant/agent/podresources"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("NODE_NAME", "from-env")
	cases := []struct {
		name        string
		args        []string
		wantNode    string
		wantMetrics string
		wantProbe   string
	}{
		{name: "defaults on a real node", args: nil, wantNode: "from-env", wantMetrics: ":8080", wantProbe: ":8081"},
		{name: "simulated nodes serve nothing by default", args: []string{"--simulate=H100:8", "--node-name=sim-0"},
			wantNode: "sim-0", wantMetrics: "0", wantProbe: "0"},
		{name: "explicit addresses win", args: []string{"--simulate=H100:8", "--metrics-bind-address=:9090", "--health-probe-bind-address=:9091"},
			wantNode: "from-env", wantMetrics: ":9090", wantProbe: ":9091"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if c.nodeName != tc.wantNode || c.metricsAddr != tc.wantMetrics || c.probeAddr != tc.wantProbe {
				t.Errorf("node %q metrics %q probe %q", c.nodeName, c.metricsAddr, c.probeAddr)
			}
			if c.namespace != "kquant-system" || c.backend != "auto" || c.shutdownGrace != 20*time.Second || c.execution != "RunPod" {
				t.Errorf("defaults: %+v", c)
			}
			// A simulated node has no kubelet to ask.
			if wantSocket := map[bool]string{true: "", false: podresources.DefaultSocket}[c.simulate != ""]; c.podResources != wantSocket {
				t.Errorf("pod resources socket %q, want %q", c.podResources, wantSocket)
			}
		})
	}
}

func TestParseRunFlags(t *testing.T) {
	t.Setenv("POD_NAME", "run-1")
	t.Setenv("POD_UID", "uid-1")
	t.Setenv("NODE_NAME", "node-a")
	c, err := parseRunFlags([]string{"--run=ns/run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.pod.Name != "run-1" || c.pod.UID != "uid-1" || c.pod.Node != "node-a" || c.allocation != "DevicePlugin" || c.terminationLog != defaultTerminationLog {
		t.Errorf("run flags: %+v", c)
	}
	for _, bad := range [][]string{nil, {"--run=no-namespace"}, {"--run=ns/r", "--allocation=Magic"}} {
		if _, err := parseRunFlags(bad); err == nil {
			t.Errorf("parseRunFlags(%q) accepted", bad)
		}
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	if err := run([]string{"--simulate=V100:1", "--node-name=n"}); err == nil {
		t.Error("unknown simulated product accepted")
	}
	if err := run([]string{"--no-such-flag"}); err == nil {
		t.Error("unknown flag accepted")
	}
	if err := run([]string{"--version"}); err != nil {
		t.Errorf("--version: %v", err)
	}
}
