// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Number is a measured number serialised as a JSON number, kept in Go as the
// decimal text it was written with (no float64 in the API types).
//
// The measured results are decimal strings by design, and they stay the
// authoritative values. Number exists only for their numeric mirrors
// (ResultNumbers): the API server's table convertor renders a printer column
// of type number only when the JSON value is a number (a decimal string
// leaves the cell empty, "<none>"), and kubectl --sort-by compares JSON
// strings as text ("10.5" before "9.2"). The API server stores a number as a
// float64, so a mirror may come back in its shortest spelling ("12.30" as
// 12.3); nothing but printing and sorting reads a mirror.
//
// +kubebuilder:validation:Type=number
type Number string

// NumberOf is s as a Number when s is a finite decimal, else "".
func NumberOf(s string) Number {
	if s == "" || len(s) > 64 {
		return ""
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return ""
	}
	if !json.Valid([]byte(s)) {
		// ParseFloat accepts spellings JSON does not: "+1", ".5", "Inf", "0x1p3".
		return ""
	}
	return Number(s)
}

// MarshalJSON writes n as a JSON number; an empty Number is null.
func (n Number) MarshalJSON() ([]byte, error) {
	if n == "" {
		return []byte("null"), nil
	}
	if NumberOf(string(n)) == "" {
		return nil, fmt.Errorf("number %q is not a finite JSON number", string(n))
	}
	return []byte(n), nil
}

// UnmarshalJSON reads a JSON number (or null) and keeps its text.
func (n *Number) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*n = ""
		return nil
	}
	if NumberOf(string(b)) == "" {
		return fmt.Errorf("number: %q is not a JSON number", string(b))
	}
	*n = Number(b)
	return nil
}

// ResultNumbers are numeric mirrors of a run's or a job's headline decimal
// strings, for printer columns of type number and kubectl --sort-by. They are
// derived: the writer fills them from the strings, which stay authoritative.
type ResultNumbers struct {
	// hostEagerMicros mirrors overhead.hostEagerMicros (microseconds).
	// +optional
	HostEagerMicros Number `json:"hostEagerMicros,omitempty"`
	// hostGraphMicros mirrors overhead.hostGraphMicros (microseconds).
	// +optional
	HostGraphMicros Number `json:"hostGraphMicros,omitempty"`
	// bandwidthGBps mirrors performance.bandwidthGBps (GB/s).
	// +optional
	BandwidthGBps Number `json:"bandwidthGBps,omitempty"`
	// snrDB mirrors accuracy.snrDB (dB).
	// +optional
	SNRdB Number `json:"snrDB,omitempty"`
}

// MarshalJSON encodes n with its numbers as JSON numbers. It exists for
// runtime.DefaultUnstructuredConverter, which writes a string-kind field such
// as Number as a JSON string without asking its MarshalJSON but does ask a
// struct's: through this method every Number reaches unstructured content
// (and so the API server, whose schema says number) as a number.
func (n ResultNumbers) MarshalJSON() ([]byte, error) {
	return json.Marshal(plainNumbers(n))
}

// UnmarshalJSON is MarshalJSON's counterpart, for the same converter's
// FromUnstructured, which cannot put an int64 into a string-kind field.
func (n *ResultNumbers) UnmarshalJSON(b []byte) error {
	return json.Unmarshal(b, (*plainNumbers)(n))
}

// plainNumbers is ResultNumbers without its JSON methods.
type plainNumbers ResultNumbers

// NumbersOf mirrors r's headline decimals; nil when r has none of them.
func NumbersOf(r *RunResults) *ResultNumbers {
	if r == nil {
		return nil
	}
	var n ResultNumbers
	if o := r.Overhead; o != nil {
		n.HostEagerMicros, n.HostGraphMicros = NumberOf(o.HostEagerMicros), NumberOf(o.HostGraphMicros)
	}
	if p := r.Performance; p != nil {
		n.BandwidthGBps = NumberOf(p.BandwidthGBps)
	}
	if a := r.Accuracy; a != nil {
		n.SNRdB = NumberOf(a.SNRdB)
	}
	if n == (ResultNumbers{}) {
		return nil
	}
	return &n
}
