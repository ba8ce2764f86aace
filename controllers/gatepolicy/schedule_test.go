// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gatepolicy

import (
	"testing"
	"time"
)

func TestDue(t *testing.T) {
	created := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		now       time.Time
		period    time.Duration
		wantIndex int64
		wantNext  time.Time
	}{
		{name: "no period: one job per generation", now: created.Add(100 * time.Hour)},
		{name: "at creation: the first period", now: created, period: time.Hour, wantNext: created.Add(time.Hour)},
		{name: "inside the third period", now: created.Add(2*time.Hour + time.Minute), period: time.Hour, wantIndex: 2, wantNext: created.Add(3 * time.Hour)},
		{name: "a clock behind the creation time counts as the first period", now: created.Add(-time.Minute), period: time.Hour, wantNext: created.Add(time.Hour)},
		{name: "the longest period a century on", now: created.Add(100 * 8760 * time.Hour), period: 8760 * time.Hour, wantIndex: 100, wantNext: created.Add(101 * 8760 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index, next := Due(created, tt.now, tt.period)
			if index != tt.wantIndex || !next.Equal(tt.wantNext) {
				t.Errorf("Due = %d, %s; want %d, %s", index, next, tt.wantIndex, tt.wantNext)
			}
		})
	}
}

func TestParseJobName(t *testing.T) {
	tests := []struct {
		name, policy, job string
		wantGen, wantIdx  int64
		wantOK            bool
	}{
		{name: "a policy's job", policy: "fp8-nightly", job: "fp8-nightly-3-17", wantGen: 3, wantIdx: 17, wantOK: true},
		{name: "another policy's prefix", policy: "fp8", job: "fp8-nightly-3-17"},
		{name: "not a number", policy: "fp8", job: "fp8-x-1"},
		{name: "leading zeros are not JobName's", policy: "fp8", job: "fp8-01-1"},
		{name: "too many parts", policy: "fp8", job: "fp8-1-2-3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen, idx, ok := ParseJobName(tt.policy, tt.job)
			if gen != tt.wantGen || idx != tt.wantIdx || ok != tt.wantOK {
				t.Errorf("ParseJobName = %d, %d, %t; want %d, %d, %t", gen, idx, ok, tt.wantGen, tt.wantIdx, tt.wantOK)
			}
		})
	}
}
