// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHeaderFollowsTheSpec(t *testing.T) {
	cases := []struct {
		name     string
		descr    string
		shape    []int
		wantDict string
	}{
		{"2d float32", DescrFloat32, []int{3, 4}, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"},
		{"1d uint8", DescrUint8, []int{5}, "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }"},
		{"scalar", DescrFloat32, nil, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"},
		{"empty rows", DescrUint8, []int{0, 512}, "{'descr': '|u1', 'fortran_order': False, 'shape': (0, 512), }"},
		{"huge dims", DescrFloat32, []int{1048576, 1048576, 7}, "{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576, 7), }"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Header(tc.descr, tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(h[:6]); got != "\x93NUMPY" {
				t.Errorf("magic = %q", got)
			}
			if h[6] != 1 || h[7] != 0 {
				t.Errorf("version = %d.%d, want 1.0", h[6], h[7])
			}
			hlen := int(binary.LittleEndian.Uint16(h[8:10]))
			if hlen != len(h)-10 {
				t.Errorf("header length field %d, header is %d bytes", hlen, len(h)-10)
			}
			if len(h)%64 != 0 {
				t.Errorf("data starts at %d, not a multiple of 64", len(h))
			}
			if h[len(h)-1] != '\n' {
				t.Errorf("header does not end in a newline")
			}
			dict := strings.TrimRight(string(h[10:len(h)-1]), " ")
			if dict != tc.wantDict {
				t.Errorf("dict = %q, want %q", dict, tc.wantDict)
			}
			if strings.ContainsAny(string(h[10 : len(h)-1])[len(dict):], "\n\t") {
				t.Errorf("padding is not spaces only")
			}
		})
	}
}

func TestHeaderRefusesWhatItCannotWrite(t *testing.T) {
	if _, err := Header("<f8", []int{1}); err == nil {
		t.Error("float64 descr accepted")
	}
	if _, err := Header(DescrUint8, []int{-1}); err == nil {
		t.Error("negative dimension accepted")
	}
}

func TestFloat32RoundTrip(t *testing.T) {
	data := []float32{0, -0, 1, -1.5, 3.4e38, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-45, 0.1, 7, 8, 9}
	var buf bytes.Buffer
	if err := WriteFloat32(&buf, []int{3, 4}, data); err != nil {
		t.Fatal(err)
	}
	if (buf.Len()-12*4)%64 != 0 {
		t.Errorf("file of %d bytes: data not 64-aligned", buf.Len())
	}
	a, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if a.HeaderLen%64 != 0 {
		t.Errorf("HeaderLen = %d", a.HeaderLen)
	}
	got, err := a.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{3, 4}, a.Shape); diff != "" {
		t.Errorf("shape (-want +got):\n%s", diff)
	}
	for i := range data {
		if math.Float32bits(got[i]) != math.Float32bits(data[i]) {
			t.Errorf("element %d: got %x, want %x", i, math.Float32bits(got[i]), math.Float32bits(data[i]))
		}
	}
	// NaN payloads survive bit for bit.
	buf.Reset()
	nan := math.Float32frombits(0x7FC00001)
	if err := WriteFloat32(&buf, []int{1}, []float32{nan}); err != nil {
		t.Fatal(err)
	}
	a, err = Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(a.Data); got != 0x7FC00001 {
		t.Errorf("NaN bits = %x", got)
	}
}

func TestUint8RoundTrip(t *testing.T) {
	data := []byte{0, 1, 0x7F, 0x80, 0xFF, 42}
	var buf bytes.Buffer
	if err := WriteUint8(&buf, []int{6}, data); err != nil {
		t.Fatal(err)
	}
	a, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if a.Descr != DescrUint8 {
		t.Errorf("descr = %q", a.Descr)
	}
	if diff := cmp.Diff(data, a.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	if _, err := a.Float32s(); err == nil {
		t.Error("Float32s of a uint8 array succeeded")
	}
}

func TestWriteChecksTheShape(t *testing.T) {
	if err := WriteUint8(&bytes.Buffer{}, []int{2, 2}, []byte{1, 2, 3}); err == nil {
		t.Error("3 bytes written as 2x2")
	}
	if err := WriteFloat32(&bytes.Buffer{}, []int{2}, []float32{1, 2, 3}); err == nil {
		t.Error("3 floats written as [2]")
	}
}

// TestReadNumPyWrittenFile reads bytes as NumPy 1.26 writes
// np.save(f, np.arange(3, dtype=np.uint8)), typed in by hand so that the
// reader is checked against a writer other than ours.
func TestReadNumPyWrittenFile(t *testing.T) {
	dict := "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"
	h := append([]byte("\x93NUMPY\x01\x00"), 0, 0)
	pad := 64 - (10+len(dict)+1)%64
	body := dict + strings.Repeat(" ", pad) + "\n"
	binary.LittleEndian.PutUint16(h[8:], uint16(len(body)))
	file := append(append(h, body...), 0, 1, 2)
	a, err := Read(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]byte{0, 1, 2}, a.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
}

func TestReadRefusesMalformedFiles(t *testing.T) {
	good, _ := Header(DescrUint8, []int{2})
	cases := map[string][]byte{
		"empty":        nil,
		"bad magic":    append([]byte("\x93NUMPZ"), good[6:]...),
		"version 3":    append(append([]byte{}, good[:6]...), append([]byte{3, 0}, good[8:]...)...),
		"short data":   append(append([]byte{}, good...), 1),
		"long data":    append(append([]byte{}, good...), 1, 2, 3),
		"huge shape":   mustHeader(t, DescrFloat32, []int{1 << 40, 1 << 40}),
		"no newline":   []byte("\x93NUMPY\x01\x00\x04\x00{}  "),
		"missing keys": []byte("\x93NUMPY\x01\x00\x03\x00{}\n"),
	}
	for name, file := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Read(bytes.NewReader(file)); err == nil {
				t.Error("no error")
			}
		})
	}
}

func mustHeader(t *testing.T, descr string, shape []int) []byte {
	t.Helper()
	h, err := Header(descr, shape)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func FuzzRead(f *testing.F) {
	good, _ := Header(DescrFloat32, []int{1, 2})
	f.Add(append(good, make([]byte, 8)...))
	f.Add([]byte("\x93NUMPY\x01\x00\x03\x00{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		if a.Descr == DescrFloat32 {
			if _, err := a.Float32s(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
