// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package simnode

import (
	"flag"
	"strings"
	"testing"

	"github.com/kquant/kquant/internal/logging"
)

func parse(args ...string) (*Flags, error) {
	f := &Flags{}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.AddFlags(fs, "kubeconfig")
	return f, f.Parse(fs, args)
}

func TestFlags(t *testing.T) {
	t.Setenv("NODE_NAME", "from-env")
	f, err := parse("--simulate", "H100:2")
	if err != nil {
		t.Fatal(err)
	}
	if f.NodeName != "from-env" || f.Kubeconfig != "" || f.Log.Format != logging.FormatJSON {
		t.Errorf("defaults: %+v", f)
	}
	n, err := f.Setup("test")
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Products()) != 2 || n.Client != nil {
		t.Errorf("Setup without --kubeconfig: %d GPUs, client %v", len(n.Spec.Products()), n.Client)
	}
}

func TestFlagsRejectBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "no --simulate", args: []string{"--node-name=n"}, want: "--simulate is required"},
		{name: "unknown product", args: []string{"--simulate=V100:1"}, want: "unknown product"},
		{name: "stray argument", args: []string{"--simulate=H100:1", "extra"}, want: "unexpected arguments"},
		{name: "bad log format", args: []string{"--simulate=H100:1", "--log-format=xml"}, want: "log format"},
		{name: "missing kubeconfig", args: []string{"--simulate=H100:1", "--kubeconfig=/nonexistent"}, want: "loading kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parse(tc.args...)
			if err == nil {
				_, err = f.Setup("test")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}
