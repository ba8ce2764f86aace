// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package preflight

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/runoutcome"
)

// Parts of the document that TerminationMessage may drop, in the order it
// drops them.
const (
	// DroppedResults: every check's results (its verdict, reason and
	// message stay).
	DroppedResults = "results"
	// DroppedPassed: the checks that passed (the others stay).
	DroppedPassed = "passed"
	// DroppedMessages: every check's message.
	DroppedMessages = "messages"
	// DroppedChecks: every check (the verdict, reason and message of the
	// whole stay).
	DroppedChecks = "checks"
)

// Document is the preflight's verdict as its termination message carries
// it, the second line after runoutcome's "<Reason>: <message>" summary:
// the shape of a run pod's outcome (internal/runoutcome), with a check per
// recipe and GPU in place of one run's results.
type Document struct {
	Verdict        v1alpha1.Verdict `json:"verdict"`
	Reason         string           `json:"reason,omitempty"`
	Message        string           `json:"message,omitempty"`
	GPUs           []string         `json:"gpus,omitempty"`
	CompletionTime *metav1.Time     `json:"completionTime,omitempty"`
	Checks         []Check          `json:"checks,omitempty"`
	// Dropped names the parts left out to fit runoutcome.MaxBytes (Dropped*
	// constants, in the order they were dropped).
	Dropped []string `json:"dropped,omitempty"`
}

// droppers remove one part of a document each, in order.
var droppers = []struct {
	name string
	drop func(d *Document)
}{
	{DroppedResults, func(d *Document) {
		for i := range d.Checks {
			d.Checks[i].Results = nil
		}
	}},
	{DroppedPassed, func(d *Document) {
		kept := d.Checks[:0]
		for _, c := range d.Checks {
			if c.Verdict != v1alpha1.VerdictPass {
				kept = append(kept, c)
			}
		}
		d.Checks = kept
	}},
	{DroppedMessages, func(d *Document) {
		for i := range d.Checks {
			d.Checks[i].Message = ""
		}
	}},
	{DroppedChecks, func(d *Document) { d.Checks = nil }},
}

// TerminationMessage is o as the container's termination message, at most
// runoutcome.MaxBytes: the summary line, then the Document as compact JSON,
// dropping what does not fit in the order of the Dropped* constants, and at
// last halving the message.
func (o Outcome) TerminationMessage() string {
	summary := runoutcome.Summary(o.Reason, o.Message)
	d := Document{
		Verdict: o.Verdict, Reason: o.Reason, Message: runoutcome.Truncate(o.Message, runoutcome.MessageBytes),
		GPUs: o.GPUs, Checks: make([]Check, len(o.Checks)),
	}
	if !o.CompletionTime.IsZero() {
		d.CompletionTime = o.CompletionTime.DeepCopy()
	}
	for i, c := range o.Checks {
		c.Results = c.Results.DeepCopy()
		if c.Results != nil {
			// The numbers mirror the decimals; the decimals are what a
			// person reads.
			c.Results.Numbers = nil
		}
		d.Checks[i] = c
	}
	budget := runoutcome.MaxBytes - len(summary) - 1
	next := 0
	for {
		b := marshal(d)
		switch {
		case len(b) <= budget:
			return summary + "\n" + string(b)
		case next < len(droppers):
			droppers[next].drop(&d)
			d.Dropped = append(d.Dropped, droppers[next].name)
			next++
		case len(d.GPUs) > 0:
			d.GPUs = nil
		case d.Message != "":
			d.Message = runoutcome.Truncate(d.Message, len(d.Message)/2)
		default:
			return summary
		}
	}
}

// marshal is d as runoutcome's compact JSON. A Document holds only
// strings, numbers and API structs, which always encode.
func marshal(d Document) []byte {
	b, err := runoutcome.CompactJSON(d)
	if err != nil {
		return []byte(fmt.Sprintf(`{"verdict":%q}`, d.Verdict))
	}
	return b
}

// DecodeTerminationMessage reads the Document of a termination message
// written by TerminationMessage.
func DecodeTerminationMessage(message string) (Document, error) {
	_, body, ok := bytes.Cut(bytes.TrimSpace([]byte(message)), []byte("\n"))
	if !ok || !bytes.HasPrefix(body, []byte("{")) {
		return Document{}, fmt.Errorf("termination message holds no preflight document")
	}
	var d Document
	if err := json.Unmarshal(body, &d); err != nil {
		return Document{}, fmt.Errorf("decoding the preflight document: %w", err)
	}
	return d, nil
}
