// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gatepolicy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Due returns the index of the period that now falls in, counted from
// created, and when the next one starts; with no period (0), index 0 and a
// zero next. Admission bounds the period to [10m, 8760h], so the arithmetic
// cannot overflow.
func Due(created, now time.Time, period time.Duration) (index int64, next time.Time) {
	if period <= 0 {
		return 0, time.Time{}
	}
	if now.After(created) {
		index = int64(now.Sub(created) / period)
	}
	return index, created.Add(time.Duration(index+1) * period)
}

// JobName is the name of policy's validation job of generation and period
// index.
func JobName(policy string, generation, index int64) string {
	return fmt.Sprintf("%s-%d-%d", policy, generation, index)
}

// ParseJobName returns the generation and period index of a job that
// JobName named for policy; ok is false for any other name.
func ParseJobName(policy, name string) (generation, index int64, ok bool) {
	rest, found := strings.CutPrefix(name, policy+"-")
	if !found {
		return 0, 0, false
	}
	g, i, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	generation, err1 := strconv.ParseInt(g, 10, 64)
	index, err2 := strconv.ParseInt(i, 10, 64)
	if err1 != nil || err2 != nil || JobName(policy, generation, index) != name {
		return 0, 0, false
	}
	return generation, index, true
}
