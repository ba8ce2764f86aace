// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantcronjob

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// HostnameLabel is the Node label a driver-triggered job selects its node by.
const HostnameLabel = "kubernetes.io/hostname"

// DriverChanges compares the driver versions last seen (seen) with the
// profiles' and returns the nodes whose versions changed, sorted, and the new
// record. A node seen for the first time is recorded without a change; a node
// whose profile is gone keeps its record (a re-registered node is compared
// with what it ran before); a profile with no driver version yet is skipped.
func DriverChanges(seen []kquantv1alpha1.NodeDriver, profiles []kquantv1alpha1.GPUNodeProfile) (changed []kquantv1alpha1.NodeDriver, record []kquantv1alpha1.NodeDriver) {
	record = slices.Clone(seen)
	for i := range profiles {
		p := &profiles[i]
		cur := kquantv1alpha1.NodeDriver{NodeName: p.Name, DriverVersion: p.Status.DriverVersion, CUDADriverVersion: p.Status.CUDADriverVersion}
		if cur.DriverVersion == "" && cur.CUDADriverVersion == "" {
			continue
		}
		idx := slices.IndexFunc(record, func(d kquantv1alpha1.NodeDriver) bool { return d.NodeName == p.Name })
		switch {
		case idx < 0:
			record = append(record, cur)
		case record[idx] != cur:
			record[idx] = cur
			changed = append(changed, cur)
		}
	}
	slices.SortFunc(record, func(a, b kquantv1alpha1.NodeDriver) int { return strings.Compare(a.NodeName, b.NodeName) })
	slices.SortFunc(changed, func(a, b kquantv1alpha1.NodeDriver) int { return strings.Compare(a.NodeName, b.NodeName) })
	return changed, record
}

// DriverJobName is the deterministic name of the job that validates d.
func DriverJobName(cronJob string, d kquantv1alpha1.NodeDriver) string {
	h := sha256.Sum256([]byte(d.NodeName + "\x00" + d.DriverVersion + "\x00" + d.CUDADriverVersion))
	return cronJob + "-driver-" + hex.EncodeToString(h[:5])
}

// keepRecords returns record with the nodes of skipped set back to what
// seen held for them, so that their changes are found again by the next
// DriverChanges.
func keepRecords(record, seen, skipped []kquantv1alpha1.NodeDriver) []kquantv1alpha1.NodeDriver {
	out := slices.Clone(record)
	for _, d := range skipped {
		idx := slices.IndexFunc(out, func(r kquantv1alpha1.NodeDriver) bool { return r.NodeName == d.NodeName })
		old := slices.IndexFunc(seen, func(r kquantv1alpha1.NodeDriver) bool { return r.NodeName == d.NodeName })
		if idx >= 0 && old >= 0 {
			out[idx] = seen[old]
		}
	}
	return out
}
