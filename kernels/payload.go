// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// PayloadChunk is the most host data one kernel-parameter payload launch
// carries; larger payloads take several launches.
const PayloadChunk = 2048

// payloadParamBytes is sizeof(struct kq_payload<2048>) in payload.cu: an
// 8-byte destination, a 4-byte length, 4 bytes of padding and the data.
const payloadParamBytes = 16 + PayloadChunk

// payloadClasses are the data sizes of payload.cu's kernels, smallest
// first. The driver copies a kernel's whole parameter block at each launch,
// so a payload goes through the smallest kernel that holds it: 1 pointer
// sends 80 bytes of parameters, not 2064.
var payloadClasses = []struct {
	bytes  int
	kernel string
}{{64, "kq_payload_copy_64"}, {256, "kq_payload_copy_256"}, {512, "kq_payload_copy_512"}, {1024, "kq_payload_copy_1024"}, {PayloadChunk, "kq_payload_copy"}}

func payloadClassKernels() []string {
	var out []string
	for _, c := range payloadClasses[:len(payloadClasses)-1] {
		out = append(out, c.kernel)
	}
	return out
}

// payloadKernel returns the smallest payload kernel of the module holding
// n bytes and its data size.
func (s *Set) payloadKernel(c *cuda.Ctx, n int) (cuda.Function, int, error) {
	var err error
	for _, class := range payloadClasses {
		if class.bytes < n {
			continue
		}
		var f cuda.Function
		if f, err = s.kernel(c, class.kernel); err == nil {
			return f, class.bytes, nil
		}
	}
	if err == nil {
		err = fmt.Errorf("the largest holds %d", PayloadChunk)
	}
	return cuda.Function{}, 0, fmt.Errorf("kernels: no payload kernel for %d bytes: %w", n, err)
}

// CopyViaParams copies src to the start of dst inside the parameters of
// ceil(len(src)/PayloadChunk) launches on st: no host-to-device copy, no
// pinned memory. src may be reused as soon as it returns (the driver copies
// launch parameters at the launch), and a captured call replays the bytes
// it was captured with. Each launch takes the smallest size class holding
// its bytes and hands the driver the parameter block as one buffer
// (cuda.Ctx.LaunchPacked): one copy of the data on the host, into the
// block.
func (s *Set) CopyViaParams(c *cuda.Ctx, st cuda.Stream, dst cuda.Buffer, src []byte) error {
	if len(src) > dst.Size() {
		return fmt.Errorf("kernels: payload of %d bytes into %d", len(src), dst.Size())
	}
	for off := 0; off < len(src); off += PayloadChunk {
		n := min(PayloadChunk, len(src)-off)
		f, class, err := s.payloadKernel(c, n)
		if err != nil {
			return err
		}
		p := s.payload[:16+class]
		binary.LittleEndian.PutUint64(p[0:], dst.Ptr()+uint64(off))
		binary.LittleEndian.PutUint32(p[8:], uint32(n))
		binary.LittleEndian.PutUint32(p[12:], 0)
		copy(p[16:], src[off:off+n])
		// The unused tail of the class is whatever the last payload left:
		// the kernel reads only n bytes.
		if err := c.LaunchPacked(f, cuda.Dim(1), cuda.Dim(threads), 0, st, p); err != nil {
			return fmt.Errorf("kernels: payload bytes [%d, %d): %w", off, off+n, err)
		}
	}
	return nil
}

// CopyViaParamsArgs is CopyViaParams through the general launch path: the
// 2064-byte kernel whatever the size, its struct copied into cuda.Args and
// passed as one pointer per parameter. It is kept to measure the packed,
// size-classed launch against.
func (s *Set) CopyViaParamsArgs(c *cuda.Ctx, st cuda.Stream, dst cuda.Buffer, src []byte) error {
	if len(src) > dst.Size() {
		return fmt.Errorf("kernels: payload of %d bytes into %d", len(src), dst.Size())
	}
	for off := 0; off < len(src); off += PayloadChunk {
		n := min(PayloadChunk, len(src)-off)
		p := s.payload[:]
		binary.LittleEndian.PutUint64(p[0:], dst.Ptr()+uint64(off))
		binary.LittleEndian.PutUint32(p[8:], uint32(n))
		copy(p[16:], src[off:off+n])
		s.args.Reset().Struct(p)
		if err := s.launch(c, "kq_payload_copy", cuda.Dim(1), cuda.Dim(threads), st); err != nil {
			return fmt.Errorf("kernels: payload bytes [%d, %d): %w", off, off+n, err)
		}
	}
	return nil
}

// LaunchNop launches the smallest payload kernel with an empty payload
// (n = 0: the kernel writes nothing): the cheapest launch there is, to
// compare host launch costs with.
func (s *Set) LaunchNop(c *cuda.Ctx, st cuda.Stream) error {
	f, class, err := s.payloadKernel(c, 0)
	if err != nil {
		return err
	}
	p := s.payload[:16+class]
	clear(p[:16])
	return c.LaunchPacked(f, cuda.Dim(1), cuda.Dim(threads), 0, st, p)
}

// GEMM computes y = x . w^T in float32 for x [m, k], w [n, k], y [m, n]
// (the QuantizedLinear check's GEMM of dequantized operands). One launch.
func (s *Set) GEMM(c *cuda.Ctx, st cuda.Stream, x, w, y cuda.Buffer, m, n, k int) error {
	if err := need("GEMM output", y, 4*m*n); err != nil {
		return err
	}
	if ceilDiv(m, 64) > 65535 {
		return fmt.Errorf("kernels: GEMM of %d rows: too many", m)
	}
	s.args.Reset().Buffer(x).Buffer(w).Buffer(y).I32(int32(m)).I32(int32(n)).I32(int32(k))
	return s.launch(c, "kq_sgemm_nt", cuda.Dim2(ceilDiv(n, 64), ceilDiv(m, 64)), cuda.Dim(threads), st)
}
