// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package execution

// Remembered is how many runs this process keeps pod bookkeeping for (seen
// or created run pods): what a long-lived manager must not let grow.
func (r *Reconciler) Remembered() int {
	return r.seen.Len() + r.created.Len()
}

// TimeLeft is timeLeft, for table tests of the time limit.
var TimeLeft = timeLeft
