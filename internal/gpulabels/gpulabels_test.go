// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpulabels

import "testing"

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		names   Names
		wantErr bool
	}{
		{name: "current names", names: Default()},
		{name: "an older exporter's", names: Names{Hostname: "Hostname", UUID: "uuid"}},
		{name: "not a label name", names: Names{Hostname: "host-name", UUID: "UUID"}, wantErr: true},
		{name: "reserved by Prometheus", names: Names{Hostname: "__name__", UUID: "UUID"}, wantErr: true},
		{name: "the index's name", names: Names{Hostname: "hostname", UUID: GPU}, wantErr: true},
		{name: "a series' own label", names: Names{Hostname: "recipe", UUID: "UUID"}, wantErr: true},
		{name: "the same name twice", names: Names{Hostname: "x", UUID: "x"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.names.Validate("recipe"); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, want an error: %t", err, tt.wantErr)
			}
		})
	}
}

func TestInstanceProfile(t *testing.T) {
	for in, want := range map[string]string{"1g.10gb": "1g.10gb", "1c.2g.20gb": "2g.20gb", "7g.80gb": "7g.80gb", "": ""} {
		if got := InstanceProfile(in); got != want {
			t.Errorf("InstanceProfile(%q) = %q, want %q", in, got, want)
		}
	}
}
