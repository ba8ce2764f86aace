// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import "testing"

func TestGoMemoryLimit(t *testing.T) {
	tests := []struct {
		name           string
		containerLimit string
		goMemLimitEnv  string
		want           int64
		wantSet        bool
		wantErr        bool
	}{
		{name: "no limit given: the runtime's default", containerLimit: ""},
		{name: "the downward API's bytes", containerLimit: "1073741824", want: 966367620, wantSet: true},
		{name: "a quantity with a suffix", containerLimit: "512Mi", want: 483183810, wantSet: true},
		{name: "GOMEMLIMIT set by hand wins", containerLimit: "1Gi", goMemLimitEnv: "700MiB"},
		{name: "not a quantity", containerLimit: "lots", wantErr: true},
		{name: "zero", containerLimit: "0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, set, err := goMemoryLimit(tt.containerLimit, tt.goMemLimitEnv)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want || set != tt.wantSet {
				t.Errorf("goMemoryLimit(%q, %q) = %d, %v; want %d, %v", tt.containerLimit, tt.goMemLimitEnv, got, set, tt.want, tt.wantSet)
			}
		})
	}
}
