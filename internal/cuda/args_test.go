// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package cuda

import (
	"encoding/binary"
	"strings"
	"testing"
)

func TestArgsStruct(t *testing.T) {
	payload := make([]byte, 24)
	for i := range payload {
		payload[i] = byte(i + 1)
	}
	a := NewArgs().U32(7).Struct(payload).I32(-1)
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.Len() != 3 || a.blobIdx != 1 || a.blobWords != 3 {
		t.Fatalf("got len %d, struct at %d with %d words; want 3, 1, 3", a.Len(), a.blobIdx, a.blobWords)
	}
	// The bytes are copied: changing the caller's buffer changes nothing.
	payload[0] = 0xFF
	if got := binary.LittleEndian.Uint64(binaryWords(a.blob[:1])); got&0xFF != 1 {
		t.Errorf("struct bytes follow the caller's buffer: first byte %#x", got&0xFF)
	}
	a.Reset()
	if a.blobIdx != -1 || a.blobWords != 0 || a.Len() != 0 {
		t.Errorf("Reset left struct state %d/%d", a.blobIdx, a.blobWords)
	}
}

func TestArgsStructErrors(t *testing.T) {
	cases := []struct {
		name    string
		args    *Args
		wantErr string
	}{
		{"not a multiple of 8", NewArgs().Struct(make([]byte, 12)), "multiple of 8"},
		{"too large", NewArgs().Struct(make([]byte, MaxStructBytes+8)), "multiple of 8"},
		{"two structs", NewArgs().Struct(make([]byte, 8)).Struct(make([]byte, 8)), "more than one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.args.err == nil || !strings.Contains(c.args.err.Error(), c.wantErr) {
				t.Errorf("err %v, want one containing %q", c.args.err, c.wantErr)
			}
		})
	}
}

func binaryWords(w []uint64) []byte {
	b := make([]byte, 8*len(w))
	for i, v := range w {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}
