// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package runoutcome carries how a run ended through its run pod's
// termination message, the one channel from a pod to the manager that needs
// no API write: the kubelet copies the container's /dev/termination-log into
// the pod's status when the container ends. A run pod whose final status
// write never landed (the API server was away for longer than the run's time
// limit allowed it to retry) still leaves its outcome there, and the
// execution controller records it from the pod.
//
// The message is two lines, at most MaxBytes (the kubelet's limit per
// container) in all:
//
//	<Reason>: <message>
//	{"phase":"Succeeded","message":"...","results":{...},"dropped":["shapes"]}
//
// The first line is for people (`kubectl describe pod` shows the message
// as is) and for older managers, which read "<Reason>: <message>"; it is cut
// to SummaryBytes. The second is the Document, compact JSON. Its results
// never carry numbers: they mirror the headline decimals, and every writer
// of results derives them again (apply.RunResults). When the results do not
// fit, Encode drops parts of them in a fixed order, least needed first, and
// lists what it dropped in the document's dropped field:
//
//  1. shapes: the per-shape results (the headline figures summarise them);
//  2. baselines: the GPU's reference costs (the next run measures them again);
//  3. details: usage, capability and graph, keeping the headline;
//  4. headline: overhead, performance and accuracy at the largest shape
//     (and so the numbers), keeping backend, verdict and reason;
//  5. results: all of them (only a verdict reason of kilobytes gets here).
//
// The phase, the run's reason and its message (cut to MessageBytes) always
// fit; the results' verdict and reason fit unless they are kilobytes long.
package runoutcome
