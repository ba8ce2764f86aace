// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runoutcome

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
)

// results returns a run's results with shapes shapes, and baselines if
// asked.
func results(shapes int, baselines bool) *v1alpha1.RunResults {
	r := &v1alpha1.RunResults{
		Backend:     "cuda",
		Verdict:     v1alpha1.VerdictPass,
		Reason:      "WithinTolerance",
		Performance: &v1alpha1.Performance{GPUMicros: "12.5", BandwidthGBps: "2900.1"},
		Accuracy:    &v1alpha1.Accuracy{SNRdB: "31.2", MaxAbsError: "0.0001"},
	}
	for i := range shapes {
		r.Shapes = append(r.Shapes, v1alpha1.ShapeResult{
			Rows: int64(1024 * (i + 1)), Cols: 8192,
			Performance: &v1alpha1.Performance{GPUMicros: "123.456789", BandwidthGBps: "2345.678901", FractionOfCopyBandwidth: "0.812345"},
			Accuracy:    &v1alpha1.Accuracy{SNRdB: "31.234567", MaxAbsError: "0.000123456"},
			Overhead:    &v1alpha1.Overhead{HostEagerMicros: "45.678901", HostGraphMicros: "12.345678", KernelsPerStep: 3},
		})
	}
	if baselines {
		r.Baselines = &v1alpha1.Baselines{LaunchMicros: "4.5", GraphLaunchMicros: "1.2", CopyBandwidthGBps: "3000"}
	}
	r.Numbers = v1alpha1.NumbersOf(r)
	return r
}

// changedResults is results(16, true) changed by change after its
// numbers were computed.
func changedResults(change func(*v1alpha1.RunResults)) *v1alpha1.RunResults {
	r := results(16, true)
	change(r)
	return r
}

func TestEncodeKeepsWhatFitsInOrder(t *testing.T) {
	long := strings.Repeat("x", 3000)
	tests := []struct {
		name         string
		doc          Document
		wantDropped  []string
		wantShapes   int
		wantVerdict  bool
		wantHeadline bool
		// noResults is set when the document keeps no results at all.
		noResults bool
	}{
		{name: "failed run, no results", doc: Document{Phase: v1alpha1.RunPhaseFailed, Reason: v1alpha1.RunReasonGPUInUse, Message: "another process holds the GPU"}},
		{name: "all results fit", doc: Document{Phase: v1alpha1.RunPhaseSucceeded, Message: "finished", Results: results(3, true)},
			wantShapes: 3, wantVerdict: true, wantHeadline: true},
		{name: "too many shapes: shapes dropped first", doc: Document{Phase: v1alpha1.RunPhaseSucceeded, Message: "finished", Results: results(16, true)},
			wantDropped: []string{DroppedShapes}, wantVerdict: true, wantHeadline: true},
		{name: "long message and details: details dropped, headline kept", doc: Document{Phase: v1alpha1.RunPhaseSucceeded, Message: long,
			Results: changedResults(func(r *v1alpha1.RunResults) { r.Capability = &v1alpha1.Capability{Reason: strings.Repeat("c", 3000)} })},
			wantDropped: []string{DroppedShapes, DroppedBaselines, DroppedDetails}, wantVerdict: true, wantHeadline: true},
		{name: "long headline: headline dropped, verdict kept", doc: Document{Phase: v1alpha1.RunPhaseSucceeded, Message: long,
			Results: changedResults(func(r *v1alpha1.RunResults) { r.Performance.GPUMicros = strings.Repeat("9", 3000) })},
			wantDropped: []string{DroppedShapes, DroppedBaselines, DroppedDetails, DroppedHeadline}, wantVerdict: true},
		{name: "huge verdict reason: results dropped", doc: Document{Phase: v1alpha1.RunPhaseSucceeded, Message: long,
			Results: changedResults(func(r *v1alpha1.RunResults) { r.Reason = strings.Repeat("R", 4000) })},
			wantDropped: []string{DroppedShapes, DroppedBaselines, DroppedDetails, DroppedHeadline, DroppedResults}, noResults: true},
		{name: "message of control characters: halved until it fits", doc: Document{Phase: v1alpha1.RunPhaseFailed,
			Reason: v1alpha1.RunReasonRunPodFailed, Message: strings.Repeat("\x01", 3000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fmt.Sprint(tt.doc.Results)
			msg, err := Encode(tt.doc)
			if err != nil {
				t.Fatalf("Encode() error = %v", err)
			}
			if len(msg) > MaxBytes {
				t.Errorf("Encode() is %d bytes, want at most %d", len(msg), MaxBytes)
			}
			if fmt.Sprint(tt.doc.Results) != before {
				t.Errorf("Encode() modified its input")
			}
			first, _, _ := strings.Cut(msg, "\n")
			if want := Summary(tt.doc.Reason, tt.doc.Message); first != want || len(first) > SummaryBytes {
				t.Errorf("first line = %q, want %q (at most %d bytes)", first, want, SummaryBytes)
			}
			got, err := Decode(msg)
			if err != nil {
				t.Fatalf("Decode() error = %v", err)
			}
			if got.Phase != tt.doc.Phase || got.Reason != tt.doc.Reason || !strings.HasPrefix(tt.doc.Message, strings.TrimSuffix(got.Message, "…")) {
				t.Errorf("Decode() = %s %s %q, want %s %s %q", got.Phase, got.Reason, got.Message, tt.doc.Phase, tt.doc.Reason, tt.doc.Message)
			}
			if !slices.Equal(got.Dropped, tt.wantDropped) {
				t.Errorf("dropped = %v, want %v", got.Dropped, tt.wantDropped)
			}
			if tt.doc.Results == nil || tt.noResults {
				if got.Results != nil {
					t.Errorf("results = %+v, want none", got.Results)
				}
				return
			}
			if got.Results == nil {
				t.Fatal("results dropped entirely")
			}
			if len(got.Results.Shapes) != tt.wantShapes {
				t.Errorf("%d shapes kept, want %d", len(got.Results.Shapes), tt.wantShapes)
			}
			if (got.Results.Verdict == tt.doc.Results.Verdict && got.Results.Reason == tt.doc.Results.Reason) != tt.wantVerdict {
				t.Errorf("verdict %s %s, want kept = %v", got.Results.Verdict, got.Results.Reason, tt.wantVerdict)
			}
			if got.Results.Numbers != nil {
				t.Errorf("numbers = %+v, want none: the writer derives them", got.Results.Numbers)
			}
			if (got.Results.Performance != nil && got.Results.Accuracy != nil) != tt.wantHeadline {
				t.Errorf("performance %+v, accuracy %+v, want kept = %v", got.Results.Performance, got.Results.Accuracy, tt.wantHeadline)
			}
		})
	}
}

func TestEncodeRefusesANonTerminalPhase(t *testing.T) {
	if _, err := Encode(Document{Phase: v1alpha1.RunPhaseRunning}); err == nil {
		t.Error("Encode(Running) succeeded, want an error")
	}
}

func TestDecodeWithoutDocument(t *testing.T) {
	for _, msg := range []string{
		"",
		"GPUInUse: another process holds the GPU",
		"panic: runtime error\ngoroutine 1 [running]:",
		"Reason: message\n{not json",
		"Reason: message\n{\"phase\":\"Running\"}",
	} {
		if _, err := Decode(msg); !errors.Is(err, ErrNoDocument) {
			t.Errorf("Decode(%q) error = %v, want ErrNoDocument", msg, err)
		}
	}
}

func TestSummaryIsOneShortLine(t *testing.T) {
	tests := []struct{ reason, message, want string }{
		{"", "finished on GPU GPU-1", "finished on GPU GPU-1"},
		{"RunPodFailed", "line one\nline two", "RunPodFailed: line one line two"},
		{"RunPodFailed", strings.Repeat("é", 200), "RunPodFailed: " + strings.Repeat("é", (SummaryBytes-len("RunPodFailed: ")-len("…"))/2) + "…"},
	}
	for _, tt := range tests {
		if got := Summary(tt.reason, tt.message); got != tt.want || len(got) > SummaryBytes {
			t.Errorf("Summary(%q, %q) = %q, want %q", tt.reason, tt.message, got, tt.want)
		}
	}
}
