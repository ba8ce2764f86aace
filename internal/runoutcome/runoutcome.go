// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runoutcome

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/api/v1alpha1"
)

// Sizes of the termination message.
const (
	// MaxBytes is the most the kubelet keeps of a container's termination
	// message.
	MaxBytes = 4096
	// SummaryBytes bounds the first, human-readable line.
	SummaryBytes = 256
	// MessageBytes bounds the run's message inside the document: a run's
	// message is a sentence or an error chain, rarely longer.
	MessageBytes = 1024
)

// Parts of the results Encode may drop, in the order it drops them.
const (
	DroppedShapes    = "shapes"
	DroppedBaselines = "baselines"
	DroppedDetails   = "details"
	DroppedHeadline  = "headline"
	DroppedResults   = "results"
)

// Document is the run's outcome as the run pod ended it.
type Document struct {
	// Phase is Succeeded or Failed.
	Phase v1alpha1.RunPhase `json:"phase"`
	// Reason is a RunReason* for a Failed run.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// CompletionTime is when the run ended in the pod.
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Results are what fit of the run's results.
	Results *v1alpha1.RunResults `json:"results,omitempty"`
	// Dropped names the parts of the results left out to fit MaxBytes
	// (Dropped* constants, in the order they were dropped).
	Dropped []string `json:"dropped,omitempty"`
}

// ErrNoDocument is returned by Decode for a message without a document: one
// written by an older run pod, by a pod that ran nothing, or by the kubelet
// from the container's log (FallbackToLogsOnError).
var ErrNoDocument = errors.New("termination message holds no run outcome")

// Summary is the first line: "<Reason>: <message>" for a failed run, the
// message otherwise, on one line and cut to SummaryBytes.
func Summary(reason, message string) string {
	s := message
	if reason != "" {
		s = reason + ": " + message
	}
	return Truncate(strings.Join(strings.Fields(s), " "), SummaryBytes)
}

// Encode is d as a termination message of at most MaxBytes, dropping what
// does not fit as the package documentation says. d is not modified.
func Encode(d Document) (string, error) {
	if !d.Phase.IsTerminal() {
		return "", fmt.Errorf("encoding a run outcome of phase %q: only Succeeded or Failed is an outcome", d.Phase)
	}
	summary := Summary(d.Reason, d.Message)
	d.Message = Truncate(d.Message, MessageBytes)
	d.Dropped = nil
	if d.Results != nil {
		d.Results = d.Results.DeepCopy()
		d.Results.Numbers = nil
	}
	budget := MaxBytes - len(summary) - 1
	for _, drop := range droppers {
		b, err := marshal(d)
		if err != nil {
			return "", err
		}
		if len(b) <= budget {
			return summary + "\n" + string(b), nil
		}
		if d.Results != nil && drop.drop(&d) {
			d.Dropped = append(d.Dropped, drop.name)
		}
	}
	// Without results, only a message that escapes long in JSON (control
	// characters take six bytes each) is still too long: halve it.
	for {
		b, err := marshal(d)
		if err != nil {
			return "", err
		}
		if len(b) <= budget || d.Message == "" {
			return summary + "\n" + string(b), nil
		}
		d.Message = Truncate(d.Message, len(d.Message)/2)
	}
}

// marshal is d as compact JSON (CompactJSON).
func marshal(d Document) ([]byte, error) {
	b, err := CompactJSON(d)
	if err != nil {
		return nil, fmt.Errorf("encoding the outcome of a %s run: %w", d.Phase, err)
	}
	return b, nil
}

// CompactJSON is v as one line of JSON, with <, > and & as they are:
// nothing reads a termination message as HTML, and escaping them would
// triple their size within MaxBytes.
func CompactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// dropper removes one part of a document's results, reporting whether
// there was any.
type dropper struct {
	name string
	drop func(d *Document) bool
}

// droppers are tried in order; the last one drops nothing, so that Encode
// measures the document once more after the last drop.
var droppers = []dropper{
	{DroppedShapes, func(d *Document) bool {
		had := len(d.Results.Shapes) > 0
		d.Results.Shapes = nil
		return had
	}},
	{DroppedBaselines, func(d *Document) bool {
		had := d.Results.Baselines != nil
		d.Results.Baselines = nil
		return had
	}},
	{DroppedDetails, func(d *Document) bool {
		r := d.Results
		d.Results = &v1alpha1.RunResults{Backend: r.Backend, Overhead: r.Overhead, Performance: r.Performance, Accuracy: r.Accuracy,
			Verdict: r.Verdict, Reason: r.Reason}
		return true
	}},
	{DroppedHeadline, func(d *Document) bool {
		r := d.Results
		d.Results = &v1alpha1.RunResults{Backend: r.Backend, Verdict: r.Verdict, Reason: r.Reason}
		return true
	}},
	{DroppedResults, func(d *Document) bool {
		d.Results = nil
		return true
	}},
	{"", func(*Document) bool { return false }},
}

// Decode reads the document of a termination message written by Encode.
func Decode(message string) (Document, error) {
	_, body, ok := strings.Cut(strings.TrimSpace(message), "\n")
	if !ok || !strings.HasPrefix(body, "{") {
		return Document{}, ErrNoDocument
	}
	var d Document
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		return Document{}, fmt.Errorf("%w: decoding it: %w", ErrNoDocument, err)
	}
	if !d.Phase.IsTerminal() {
		return Document{}, fmt.Errorf("%w: phase %q is not an outcome", ErrNoDocument, d.Phase)
	}
	return d, nil
}

// Truncate cuts s to at most n bytes on a rune boundary, marking the cut
// with an ellipsis.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	s = s[:n-len(ellipsis)]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + ellipsis
}
