// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"strings"
	"testing"
)

func TestFlagsAndLevels(t *testing.T) {
	cases := map[string]struct {
		args        []string
		wantDebug   bool
		wantJSON    bool
		wantErrText string
	}{
		"defaults: json, info only":    {wantJSON: true},
		"debug shows V(1)":             {args: []string{"-v=1"}, wantDebug: true, wantJSON: true},
		"text format":                  {args: []string{"--log-format=text"}},
		"an unknown format is refused": {args: []string{"--log-format=xml"}, wantErrText: "log format"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var o Options
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			log, err := o.New(&buf)
			if tc.wantErrText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrText) {
					t.Fatalf("New() error = %v, want %q", err, tc.wantErrText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx := IntoContext(context.Background(), log)
			FromContext(ctx, "node", "n1").Info("Shown")
			FromContext(ctx).V(Debug).Info("Debug")
			out := buf.String()
			if got := strings.Contains(out, "Debug"); got != tc.wantDebug {
				t.Errorf("V(Debug) logged = %v, want %v:\n%s", got, tc.wantDebug, out)
			}
			first := strings.SplitN(out, "\n", 2)[0]
			if got := json.Valid([]byte(first)); got != tc.wantJSON {
				t.Errorf("JSON = %v, want %v: %s", got, tc.wantJSON, first)
			}
			if !strings.Contains(first, "n1") {
				t.Errorf("FromContext's values missing: %s", first)
			}
		})
	}
}

func TestFromContextWithoutLoggerDiscards(t *testing.T) {
	FromContext(context.Background()).Info("Nowhere") // must not panic
}
