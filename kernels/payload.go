package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/kquant/kquant/agent/cuda"
)

// PayloadChunk is the most host data one kernel-parameter payload launch
// carries; larger payloads take several launches.
const PayloadChunk = 2048

// payloadParamBytes is sizeof(struct kq_payload) in payload.cu: an 8-byte
// destination, a 4-byte length, 4 bytes of padding and the data.
const payloadParamBytes = 16 + PayloadChunk

// CopyViaParams copies src to the start of dst inside the parameters of
// ceil(len(src)/PayloadChunk) launches on st: no host-to-device copy, no
// pinned memory. src may be reused as soon as it returns (the driver copies
// launch parameters at the launch), and a captured call replays the bytes
// it was captured with.
func (s *Set) CopyViaParams(c *cuda.Ctx, st cuda.Stream, dst cuda.Buffer, src []byte) error {
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
