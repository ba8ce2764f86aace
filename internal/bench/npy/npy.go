// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Magic is the first six bytes of every .npy file.
const Magic = "\x93NUMPY"

// The descr strings of the supported element types.
const (
	DescrFloat32 = "<f4"
	DescrUint8   = "|u1"
)

// headerAlign is the alignment of the data offset. NumPy 1.x wrote 16;
// since NumPy 1.14 it writes 64, which is what the brief and current NumPy
// readers expect, and it lets readers memory-map the data aligned.
const headerAlign = 64

// prefixLen is magic + 2 version bytes + the uint16 header length.
const prefixLen = len(Magic) + 2 + 2

// maxHeaderLen is the largest header version 1.0 can describe (uint16).
const maxHeaderLen = math.MaxUint16

// Header returns the complete bytes before the data of a version 1.0 file:
// magic, version, header length and the padded dict.
func Header(descr string, shape []int) ([]byte, error) {
	if descr != DescrFloat32 && descr != DescrUint8 {
		return nil, fmt.Errorf("npy: unsupported descr %q", descr)
	}
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("npy: negative dimension in shape %v", shape)
		}
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shapeTuple(shape))
	// The dict, at least one pad byte... then '\n', so that the total is a
	// multiple of headerAlign.
	total := prefixLen + len(dict) + 1
	pad := (headerAlign - total%headerAlign) % headerAlign
	hlen := len(dict) + pad + 1
	if hlen > maxHeaderLen {
		return nil, fmt.Errorf("npy: header of %d bytes does not fit format version 1.0", hlen)
	}
	b := make([]byte, 0, prefixLen+hlen)
	b = append(b, Magic...)
	b = append(b, 1, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(hlen))
	b = append(b, dict...)
	b = append(b, bytes.Repeat([]byte{' '}, pad)...)
	b = append(b, '\n')
	return b, nil
}

// shapeTuple spells a shape as Python does: "()", "(3,)", "(3, 4)".
func shapeTuple(shape []int) string {
	switch len(shape) {
	case 0:
		return "()"
	case 1:
		return "(" + strconv.Itoa(shape[0]) + ",)"
	}
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// writeHeader checks that shape holds the n elements to write and writes
// the header of an array of descr.
func writeHeader(w io.Writer, descr string, shape []int, n int) error {
	if want := elements(shape); want != n {
		return fmt.Errorf("npy: shape %v needs %d elements, have %d", shape, want, n)
	}
	h, err := Header(descr, shape)
	if err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return fmt.Errorf("npy: writing header: %w", err)
	}
	return nil
}

// WriteFloat32 writes data as a float32 array of the given shape.
func WriteFloat32(w io.Writer, shape []int, data []float32) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := writeHeader(bw, DescrFloat32, shape, len(data)); err != nil {
		return err
	}
	var buf [4]byte
	for _, v := range data {
		binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
		if _, err := bw.Write(buf[:]); err != nil {
			return fmt.Errorf("npy: writing data: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("npy: writing data: %w", err)
	}
	return nil
}

// WriteUint8 writes data as a uint8 array of the given shape.
func WriteUint8(w io.Writer, shape []int, data []byte) error {
	if err := writeHeader(w, DescrUint8, shape, len(data)); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("npy: writing data: %w", err)
	}
	return nil
}

// checkedElements is elements without overflow: ok is false when the
// shape's byte count (elements × size) does not fit an int.
func checkedElements(shape []int, size int) (int, bool) {
	n := 1
	for _, d := range shape {
		if d != 0 && n > math.MaxInt/size/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// Array is a decoded .npy file.
type Array struct {
	Descr        string
	FortranOrder bool
	Shape        []int
	// HeaderLen is the number of bytes before the data.
	HeaderLen int
	// Data is the raw little-endian element bytes.
	Data []byte
}

// Float32s decodes the data of a '<f4' array.
func (a *Array) Float32s() ([]float32, error) {
	if a.Descr != DescrFloat32 {
		return nil, fmt.Errorf("npy: array is %q, not %q", a.Descr, DescrFloat32)
	}
	out := make([]float32, len(a.Data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:]))
	}
	return out, nil
}

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("npy: malformed file")

// Read decodes a whole .npy file of version 1.0 (or 2.0, whose only
// difference is a uint32 header length).
func Read(r io.Reader) (*Array, error) {
	pre := make([]byte, len(Magic)+2)
	if _, err := io.ReadFull(r, pre); err != nil {
		return nil, fmt.Errorf("%w: reading magic: %w", ErrFormat, err)
	}
	if string(pre[:len(Magic)]) != Magic {
		return nil, fmt.Errorf("%w: bad magic %q", ErrFormat, pre[:len(Magic)])
	}
	var hlen int
	switch major := pre[len(Magic)]; major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("%w: reading header length: %w", ErrFormat, err)
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("%w: reading header length: %w", ErrFormat, err)
		}
		hlen = int(binary.LittleEndian.Uint32(b[:]))
		if hlen > 1<<20 {
			return nil, fmt.Errorf("%w: header length %d is implausible", ErrFormat, hlen)
		}
	default:
		return nil, fmt.Errorf("%w: unsupported version %d.%d", ErrFormat, major, pre[len(Magic)+1])
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("%w: reading header: %w", ErrFormat, err)
	}
	a, err := parseHeader(string(hdr))
	if err != nil {
		return nil, err
	}
	a.HeaderLen = len(pre) + hlen + 2
	if pre[len(Magic)] == 2 {
		a.HeaderLen += 2
	}
	size := 1
	if a.Descr == DescrFloat32 {
		size = 4
	}
	n, ok := checkedElements(a.Shape, size)
	if !ok {
		return nil, fmt.Errorf("%w: shape %v is too large", ErrFormat, a.Shape)
	}
	// Read what is there and compare, rather than trusting the header with
	// an allocation of its size.
	data, err := io.ReadAll(io.LimitReader(r, int64(n*size)+1))
	if err != nil {
		return nil, fmt.Errorf("npy: reading data: %w", err)
	}
	if len(data) != n*size {
		return nil, fmt.Errorf("%w: shape %v needs %d data bytes, file has %d or more", ErrFormat, a.Shape, n*size, len(data))
	}
	a.Data = data
	return a, nil
}

// parseHeader parses the dict literal. It accepts the keys in any order
// and the spacing NumPy produces, nothing more general.
func parseHeader(h string) (*Array, error) {
	if !strings.HasSuffix(h, "\n") {
		return nil, fmt.Errorf("%w: header does not end in a newline", ErrFormat)
	}
	s := strings.TrimSpace(h)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("%w: header %q is not a dict", ErrFormat, s)
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	a := &Array{}
	seen := map[string]bool{}
	for s != "" {
		key, rest, err := quoted(s)
		if err != nil {
			return nil, err
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, ":") {
			return nil, fmt.Errorf("%w: no ':' after key %q", ErrFormat, key)
		}
		rest = strings.TrimSpace(rest[1:])
		switch key {
		case "descr":
			a.Descr, rest, err = quoted(rest)
			if err == nil && a.Descr != DescrFloat32 && a.Descr != DescrUint8 {
				// NumPy writes uint8 as '|u1'; '<u1' means the same.
				if a.Descr == "<u1" {
					a.Descr = DescrUint8
				} else {
					err = fmt.Errorf("%w: unsupported descr %q", ErrFormat, a.Descr)
				}
			}
		case "fortran_order":
			switch {
			case strings.HasPrefix(rest, "False"):
				rest = rest[len("False"):]
			case strings.HasPrefix(rest, "True"):
				a.FortranOrder, rest = true, rest[len("True"):]
			default:
				err = fmt.Errorf("%w: fortran_order is not True or False", ErrFormat)
			}
		case "shape":
			a.Shape, rest, err = tuple(rest)
		default:
			err = fmt.Errorf("%w: unknown header key %q", ErrFormat, key)
		}
		if err != nil {
			return nil, err
		}
		seen[key] = true
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, ",") {
			rest = strings.TrimSpace(rest[1:])
		} else if rest != "" {
			return nil, fmt.Errorf("%w: expected ',' in header at %q", ErrFormat, rest)
		}
		s = rest
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return nil, fmt.Errorf("%w: header lacks %q", ErrFormat, k)
		}
	}
	if a.FortranOrder {
		return nil, fmt.Errorf("%w: Fortran-order arrays are not supported", ErrFormat)
	}
	return a, nil
}

func quoted(s string) (string, string, error) {
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') {
		return "", "", fmt.Errorf("%w: expected a quoted string at %q", ErrFormat, s)
	}
	end := strings.IndexByte(s[1:], s[0])
	if end < 0 {
		return "", "", fmt.Errorf("%w: unterminated string at %q", ErrFormat, s)
	}
	return s[1 : 1+end], s[2+end:], nil
}

func tuple(s string) ([]int, string, error) {
	if !strings.HasPrefix(s, "(") {
		return nil, "", fmt.Errorf("%w: shape is not a tuple", ErrFormat)
	}
	end := strings.IndexByte(s, ')')
	if end < 0 {
		return nil, "", fmt.Errorf("%w: unterminated shape tuple", ErrFormat)
	}
	shape := []int{}
	for _, p := range strings.Split(s[1:end], ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		d, err := strconv.Atoi(strings.TrimSuffix(p, "L"))
		if err != nil || d < 0 {
			return nil, "", fmt.Errorf("%w: bad dimension %q", ErrFormat, p)
		}
		shape = append(shape, d)
	}
	return shape, s[end+1:], nil
}
