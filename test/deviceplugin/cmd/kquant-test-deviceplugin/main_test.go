// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kquant/kquant/internal/logging"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("NODE_NAME", "from-env")
	c, err := parseFlags([]string{"--simulate", "H100:4"})
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeName != "from-env" || c.resourceName != "nvidia.com/gpu" || c.dir != "/var/lib/kubelet/device-plugins/" ||
		c.pollInterval != time.Second || c.Kubeconfig != "" || c.Log.Format != logging.FormatJSON {
		t.Errorf("defaults: %+v", c)
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "no --simulate", args: []string{"--node-name=n"}, want: "--simulate is required"},
		{name: "unknown product", args: []string{"--simulate=V100:1", "--node-name=n"}, want: "unknown product"},
		{name: "unknown flag", args: []string{"--no-such-flag"}, want: "not defined"},
		{name: "stray argument", args: []string{"--simulate=H100:1", "extra"}, want: "unexpected arguments"},
		{name: "bad log format", args: []string{"--simulate=H100:1", "--log-format=xml"}, want: "log format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}
