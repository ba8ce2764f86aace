// kquant quantize kernels: amax, per-tensor scales (current and delayed
// scaling), per-tensor FP8 cast (rowwise, and fused cast+transpose for the
// columnwise operand), MXFP8 rowwise and columnwise (TE and OCP scale
// rounding), and the matching dequantize kernels.
//
// The numbers these kernels produce are fixed by
// docs/quantization-formats.md and must equal the pure-Go reference
// (internal/quant) bit for bit. Hence the build flags in hack/gen-kernels.sh
// keep IEEE float32 semantics (no fast math, no flush to zero, correctly
// rounded division, no FMA contraction), and every arithmetic step that the
// contract names is written with an explicitly rounded intrinsic.
//
// Graph safety: every kernel reads its scale from device memory and writes
// its results there; reductions finish in the last block to arrive (a ticket
// counter) and reset their own accumulators, so a step is a fixed sequence
// of launches that can be captured once and replayed.
//
// The shared prelude (types, formats, state words) is kq_common.cuh; the
// hash stamped on quantize.ptx covers it and every other kernels/*.cuh.

#include "kq_common.cuh"

// Four consecutive float32 elements from a 4-element-aligned group g.
KQ_DEV void kq_load4(const float *x, long long g, float v[4]) {
	float4 q = reinterpret_cast<const float4 *>(x)[g];
	v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
KQ_DEV float kq_fp8_max(int fmt) { return fmt == KQ_E4M3 ? 448.0f : 57344.0f; }

// kq_cvt2 converts two floats with one rounding, round to nearest even,
// saturating (satfinite: finite overflow and +-inf become +-max, NaN becomes
// 0x7F). lo lands in the low byte: the lower-index element goes first in
// memory. PTX puts its first source operand in the upper half.
KQ_DEV u32 kq_cvt2(float lo, float hi, int fmt) { return kq_fp8x2(lo, hi, fmt == KQ_E4M3); }
KQ_DEV u32 kq_cvt1(float x, int fmt) { return kq_cvt2(x, 0.0f, fmt) & 0xFFu; }

// kq_cvt1_sw is the same conversion in integer arithmetic, written from the
// contract (kq_fp8_sw.cuh); kq_cvt_check compares it with the hardware over
// every float32 bit pattern, which pins down the contract's rules exactly.
KQ_DEV u32 kq_cvt1_sw(float x, int fmt) { return kq_fp8_sw(x, fmt == KQ_E4M3); }

// kq_fp8_decode widens an FP8 byte to float32 exactly; NaN bytes become a
// quiet NaN with the byte's sign.
KQ_DEV float kq_fp8_decode(u32 b, int fmt) {
	u32 s = (b & 0x80u) << 24;
	if (fmt == KQ_E4M3) {
		u32 e = (b >> 3) & 0xFu, m = b & 7u;
		if (e == 15u && m == 7u) return __uint_as_float(s | KQ_QNAN_BITS);
		if (e == 0u) return __uint_as_float(s | __float_as_uint(__fmul_rn((float)m, 0.001953125f)));
		return __uint_as_float(s | ((e + 120u) << 23) | (m << 20));
	}
	u32 e = (b >> 2) & 0x1Fu, m = b & 3u;
	if (e == 31u) return __uint_as_float(s | (m ? KQ_QNAN_BITS : 0x7F800000u));
	if (e == 0u) return __uint_as_float(s | __float_as_uint(__fmul_rn((float)m, 1.52587890625e-05f)));
	return __uint_as_float(s | ((e + 112u) << 23) | (m << 21));
}

// Eight consecutive elements from an 8-element-aligned group g (16-byte
// loads for 16-bit inputs, two for float32), and their conversion with one
// factor each into 8 bytes (one 8-byte store). The vectorised kernels use
// them where the shape and alignment allow; the scalar paths compute the
// same bytes.
KQ_DEV void kq_load8(const float *x, long long g, float v[8]) {
	kq_load4(x, 2 * g, v);
	kq_load4(x, 2 * g + 1, v + 4);
}
KQ_DEV void kq_load8(const kq_bf16 *x, long long g, float v[8]) {
	uint4 q = reinterpret_cast<const uint4 *>(x)[g];
	u32 w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
	for (int k = 0; k < 4; k++) {
		v[2 * k] = kq_bf16_to_f32(w[k] & 0xFFFFu);
		v[2 * k + 1] = kq_bf16_to_f32(w[k] >> 16);
	}
}
KQ_DEV void kq_load8(const kq_f16 *x, long long g, float v[8]) {
	uint4 q = reinterpret_cast<const uint4 *>(x)[g];
	u32 w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
	for (int k = 0; k < 4; k++) {
		v[2 * k] = kq_f16_to_f32(w[k] & 0xFFFFu);
		v[2 * k + 1] = kq_f16_to_f32(w[k] >> 16);
	}
}
KQ_DEV void kq_zero8(float v[8]) {
#pragma unroll
	for (int k = 0; k < 8; k++) v[k] = 0.0f;
}
// An 8-element group as raw bits (one 16-byte word for 16-bit inputs, two
// for float32), so that a thread can hold several loads in flight in half
// the registers of their float32 values, and its widening to float32.
KQ_DEV void kq_ldraw8(const float *x, long long g, uint4 q[2]) {
	q[0] = reinterpret_cast<const uint4 *>(x)[2 * g];
	q[1] = reinterpret_cast<const uint4 *>(x)[2 * g + 1];
}
template <typename T>
KQ_DEV void kq_ldraw8(const T *x, long long g, uint4 q[2]) {
	q[0] = reinterpret_cast<const uint4 *>(x)[g];
	q[1] = q[0];
}
KQ_DEV void kq_unpack8(const float *, const uint4 q[2], float v[8]) {
	u32 w[8] = {q[0].x, q[0].y, q[0].z, q[0].w, q[1].x, q[1].y, q[1].z, q[1].w};
#pragma unroll
	for (int k = 0; k < 8; k++) v[k] = __uint_as_float(w[k]);
}
KQ_DEV void kq_unpack8(const kq_bf16 *, const uint4 q[2], float v[8]) {
	u32 w[4] = {q[0].x, q[0].y, q[0].z, q[0].w};
#pragma unroll
	for (int k = 0; k < 4; k++) {
		v[2 * k] = kq_bf16_to_f32(w[k] & 0xFFFFu);
		v[2 * k + 1] = kq_bf16_to_f32(w[k] >> 16);
	}
}
KQ_DEV void kq_unpack8(const kq_f16 *, const uint4 q[2], float v[8]) {
	u32 w[4] = {q[0].x, q[0].y, q[0].z, q[0].w};
#pragma unroll
	for (int k = 0; k < 4; k++) {
		v[2 * k] = kq_f16_to_f32(w[k] & 0xFFFFu);
		v[2 * k + 1] = kq_f16_to_f32(w[k] >> 16);
	}
}
// Independent 8-element groups a thread loads before it uses the first, in
// the grid-stride kernels (amax, cast, MXFP8 rowwise).
#define KQ_UNROLL 4
KQ_DEV uint2 kq_cvt8(const float v[8], const float f[8], int fmt) {
	uint2 o;
	o.x = kq_cvt2(__fmul_rn(v[0], f[0]), __fmul_rn(v[1], f[1]), fmt) |
	      (kq_cvt2(__fmul_rn(v[2], f[2]), __fmul_rn(v[3], f[3]), fmt) << 16);
	o.y = kq_cvt2(__fmul_rn(v[4], f[4]), __fmul_rn(v[5], f[5]), fmt) |
	      (kq_cvt2(__fmul_rn(v[6], f[6]), __fmul_rn(v[7], f[7]), fmt) << 16);
	return o;
}

#include "kq_mx.cuh"

// ---- current scaling: amax, then the scale, in one launch -------------------

template <typename T>
KQ_DEV void kq_amax_impl(const T *x, long long n, u32 *st, float fp8max, float eps, int pow2) {
	long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	float m = 0.0f;
	// 8 elements per group: one 16-byte load for 16-bit inputs. Each thread
	// issues KQ_UNROLL independent loads before it uses the first, so that
	// enough bytes are in flight to cover the memory latency at the
	// launcher's 4 blocks per SM (one load per thread reached ~80% of copy
	// bandwidth).
	bool vec = (((u64)x) & 15u) == 0u;
	long long ngroups = vec ? n / 8 : 0;
	for (long long g0 = tid; g0 < ngroups; g0 += KQ_UNROLL * nthreads) {
		float v[KQ_UNROLL][8];
#pragma unroll
		for (int u = 0; u < KQ_UNROLL; u++) {
			long long g = g0 + u * nthreads;
			if (g < ngroups) kq_load8(x, g, v[u]);
			else kq_zero8(v[u]);
		}
#pragma unroll
		for (int u = 0; u < KQ_UNROLL; u++)
#pragma unroll
			for (int k = 0; k < 8; k++) m = fmaxf(m, fabsf(v[u][k]));
	}
	for (long long i = ngroups * 8 + tid; i < n; i += nthreads) m = fmaxf(m, fabsf(kq_f32(x[i])));
	m = kq_block_max(m);
	if (threadIdx.x != 0) return;
	float amax = kq_amax_commit(m, st);
	if (amax < 0.0f) return;
	// Contract, "Per-tensor scale from an amax". The state keeps the raw
	// amax (as TE's amax tensor does); the epsilon only enters the scale.
	float *stf = reinterpret_cast<float *>(st);
	float a = fmaxf(amax, eps);
	float scale;
	if (a == 0.0f || !kq_finite(a)) {
		scale = 1.0f;
	} else {
		scale = __fdiv_rn(fp8max, a);
		if (!kq_finite(scale)) scale = __uint_as_float(KQ_FLT_MAX_BITS);
	}
	if (pow2) scale = __uint_as_float(__float_as_uint(scale) & 0xFF800000u);
	stf[KQ_ST_AMAX] = amax;
	stf[KQ_ST_SCALE] = scale;
	stf[KQ_ST_SCALE_INV] = __fdiv_rn(1.0f, scale);
}

// ---- per-tensor FP8 cast ----------------------------------------------------

// kq_cast_finish writes the decode factor of this cast and, when the amax
// is fused (delayed scaling: history != 0), the tensor's amax into history
// entry 0 and the state.
KQ_DEV void kq_cast_finish(float m, float scale, u32 *st, float *scale_inv, float *history) {
	if (history == 0) {
		if (threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0 && blockIdx.y == 0 && scale_inv != 0)
			*scale_inv = __fdiv_rn(1.0f, scale);
		return;
	}
	m = kq_block_max(m);
	if (threadIdx.x != 0 || threadIdx.y != 0) return;
	if (blockIdx.x == 0 && blockIdx.y == 0 && scale_inv != 0) *scale_inv = __fdiv_rn(1.0f, scale);
	float amax = kq_amax_commit(m, st);
	if (amax < 0.0f) return;
	// Several quantizes of one tensor in a step (before the update) keep
	// the largest amax, as quant.State.RecordAmax does.
	history[0] = fmaxf(history[0], amax);
	reinterpret_cast<float *>(st)[KQ_ST_AMAX] = amax;
}

template <typename T>
KQ_DEV void kq_cast_impl(const T *x, long long n, u32 *st, u8 *out, float *scale_inv, float *history, int fmt) {
	float scale = reinterpret_cast<const float *>(st)[KQ_ST_SCALE];
	long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	float m = 0.0f;
	// 8 elements per group: 16-byte loads of 16-bit inputs, 8-byte stores,
	// KQ_UNROLL loads in flight per thread. The groups go from the end of
	// the tensor to its start: in current scaling the amax pass has just
	// read the tensor front to back, so its tail is still in L2 and the
	// first groups read here hit there instead of in device memory.
	bool vec = ((((u64)x) & 15u) | (((u64)out) & 7u)) == 0u;
	long long ngroups = vec ? n / 8 : 0;
	float fs[8] = {scale, scale, scale, scale, scale, scale, scale, scale};
	for (long long g0 = tid; g0 < ngroups; g0 += KQ_UNROLL * nthreads) {
		float v[KQ_UNROLL][8];
#pragma unroll
		for (int u = 0; u < KQ_UNROLL; u++) {
			long long g = g0 + u * nthreads;
			if (g < ngroups) kq_load8(x, ngroups - 1 - g, v[u]);
			else kq_zero8(v[u]);
		}
#pragma unroll
		for (int u = 0; u < KQ_UNROLL; u++) {
			long long g = g0 + u * nthreads;
#pragma unroll
			for (int k = 0; k < 8; k++) m = fmaxf(m, fabsf(v[u][k]));
			if (g < ngroups) reinterpret_cast<uint2 *>(out)[ngroups - 1 - g] = kq_cvt8(v[u], fs, fmt);
		}
	}
	for (long long i = ngroups * 8 + tid; i < n; i += nthreads) {
		float v = kq_f32(x[i]);
		m = fmaxf(m, fabsf(v));
		out[i] = (u8)kq_cvt1(__fmul_rn(v, scale), fmt);
	}
	kq_cast_finish(m, scale, st, scale_inv, history);
}

// Fused cast + transpose over 32x32 tiles with a (32, 8) block: out_row is
// [rows, cols] (may be 0), out_col is the transpose [cols, rows].
template <typename T>
KQ_DEV void kq_cast_tr_impl(const T *x, int rows, int cols, u32 *st, u8 *out_row, u8 *out_col,
		float *scale_inv, float *history, int fmt) {
	__shared__ u32 tile[32][33];
	float scale = reinterpret_cast<const float *>(st)[KQ_ST_SCALE];
	int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
	float m = 0.0f;
	for (int j = 0; j < 32; j += 8) {
		int r = r0 + (int)threadIdx.y + j, c = c0 + (int)threadIdx.x;
		if (r < rows && c < cols) {
			long long i = (long long)r * cols + c;
			float v = kq_f32(x[i]);
			m = fmaxf(m, fabsf(v));
			u32 q = kq_cvt1(__fmul_rn(v, scale), fmt);
			if (out_row != 0) out_row[i] = (u8)q;
			tile[threadIdx.y + j][threadIdx.x] = q;
		}
	}
	__syncthreads();
	for (int j = 0; j < 32; j += 8) {
		int c = c0 + (int)threadIdx.y + j, r = r0 + (int)threadIdx.x;
		if (r < rows && c < cols) out_col[(long long)c * rows + r] = (u8)tile[threadIdx.x][threadIdx.y + j];
	}
	kq_cast_finish(m, scale, st, scale_inv, history);
}

// Fused cast + transpose over 128x128 tiles with 256 threads, for rows % 16
// == 0 and cols % 8 == 0 with a 16-byte aligned input and out_col and an
// 8-byte aligned out_row. Thread (rg, cg) = (tid / 16, tid % 16) loads the
// 8x8 patch of tile rows 8rg..8rg+7 and columns 8cg..8cg+7: eight 16-byte
// loads issued together (128 bytes in flight per thread; a warp's load
// covers two whole 256-byte row segments). It writes each row's 8 codes to
// out_row (8-byte stores) and transposes each 4x8 half of its codes in
// registers with byte permutes into 8 words, one per column holding 4 rows.
// Through shared memory as words, each thread then writes four runs of 16
// consecutive codes of a transposed row with 16-byte stores (a warp covers
// 4 whole 128-byte column segments). Word (w, c) of the shared tile holds
// tile column c, rows 4w..4w+3; the odd pitch of 129 words makes the column
// reads conflict free (the word stores meet four to a bank, a small part
// of the shared-memory pipe at this tile rate). The first version (64x64
// byte tiles, two loads in flight per thread) stalled on its loads and ran
// at 74-77% of copy bandwidth on an H200.
//
// Tiles are taken from the last to the first: in current scaling the amax
// pass has just read the tensor front to back, so the first tiles read here
// still sit in L2. Blocks stride over the tiles; without the fused amax the
// launcher gives one block per tile, with it (delayed scaling) a grid of
// the resident blocks, so that the amax commits once per block: one
// same-address atomic per tile cost more than the cast at 16384^2. It
// computes the same bytes as the 32x32 kernel above. The tile itself
// (kq_trw_tile) is also the grouped kernels' cast + transpose.
#define KQ_TRW 128
#define KQ_TRW_PITCH 129

// kq_trw_tile: the 128x128 tile at (r0, c0) of cast + transpose, for
// rows % 8 == 0 and cols % 8 == 0 with a 16-byte aligned input and out_col
// and an 8-byte aligned out_row (the patches are wholly in or out):
// thread (rg, cg) = (tid/16, tid%16) loads its 8x8 patch at rows r0 + 8rg,
// columns c0 + 8cg as raw bits (32 registers for 16-bit inputs, all 8
// loads in flight at once; float32 ones 4 rows at a time: held as float32
// values, the 8 rows spilled), casts it with its scale s, stores the
// rowwise codes (when out_row is not NULL), byte-permutes them into the
// shared tile (column word: byte j is row j's code of that column), and
// the 16-row column runs go to the transposed [cols, rows] matrix, or with
// offsets (grouped) to the transposed [cols, n_g] matrix of their group at
// cols * offsets[g] (16-byte aligned: offsets and sizes are multiples of
// 16; a tile may span groups, but its 8-row patches and 16-row runs never
// do). With AMAX m rises to the max |x| of the patch.
template <typename T, bool AMAX>
KQ_DEV void kq_trw_tile(const T *x, int rows, int cols, const int *offsets, int ngroups, int r0, int c0, float s,
		u8 *out_row, u8 *out_col, int fmt, u32 *tile, float &m) {
	const u32 tid = threadIdx.x;
	const int cg = (int)(tid & 15u), rg = (int)(tid >> 4);
	const int q = (int)(tid & 7u); // the 16-row run of the store phase
	const int c = c0 + 8 * cg, r = r0 + 8 * rg;
	const bool in = r < rows && c < cols;
	const float fs[8] = {s, s, s, s, s, s, s, s};
	uint4 raw[8][2];
#pragma unroll
	for (int hr = 0; hr < 2; hr++) {
		if (hr == 0 || sizeof(T) == 4) {
#pragma unroll
			for (int j = 0; j < 8; j++) {
				if (sizeof(T) == 4 && j / 4 != hr) continue;
				raw[j][0] = raw[j][1] = make_uint4(0u, 0u, 0u, 0u);
				if (in) kq_ldraw8(x, ((long long)(r + j) * cols + c) / 8, raw[j]);
			}
		}
		u32 w[4][2];
#pragma unroll
		for (int j = 0; j < 4; j++) {
			float vj[8];
			kq_unpack8(x, raw[4 * hr + j], vj);
			if (AMAX) {
#pragma unroll
				for (int e = 0; e < 8; e++) m = fmaxf(m, fabsf(vj[e]));
			}
			uint2 qq = kq_cvt8(vj, fs, fmt);
			w[j][0] = qq.x;
			w[j][1] = qq.y;
			if (in && out_row != 0) *reinterpret_cast<uint2 *>(out_row + (long long)(r + 4 * hr + j) * cols + c) = qq;
		}
		u32 *t = tile + (2 * rg + hr) * KQ_TRW_PITCH + 8 * cg;
#pragma unroll
		for (int h = 0; h < 2; h++) {
			u32 a0 = __byte_perm(w[0][h], w[1][h], 0x5140), b0 = __byte_perm(w[2][h], w[3][h], 0x5140);
			u32 a1 = __byte_perm(w[0][h], w[1][h], 0x7362), b1 = __byte_perm(w[2][h], w[3][h], 0x7362);
			t[4 * h + 0] = __byte_perm(a0, b0, 0x5410);
			t[4 * h + 1] = __byte_perm(a0, b0, 0x7632);
			t[4 * h + 2] = __byte_perm(a1, b1, 0x5410);
			t[4 * h + 3] = __byte_perm(a1, b1, 0x7632);
		}
	}
	__syncthreads();
	const int rr = r0 + 16 * q;
	int goff = 0, gn = rows;
	if (offsets != 0 && rr < rows) {
		const int g = kq_group(offsets, ngroups, rr);
		goff = offsets[g];
		gn = offsets[g + 1] - goff;
	}
	u8 *ob = out_col + (long long)cols * goff + (rr - goff);
#pragma unroll
	for (int h = 0; h < 4; h++) {
		const int tc = ((int)tid + 256 * h) >> 3;
		const int cc = c0 + tc;
		if (cc < cols && rr < rows) {
			const u32 *sp = tile + 4 * q * KQ_TRW_PITCH + tc;
			*reinterpret_cast<uint4 *>(ob + (long long)cc * gn) =
				make_uint4(sp[0], sp[KQ_TRW_PITCH], sp[2 * KQ_TRW_PITCH], sp[3 * KQ_TRW_PITCH]);
		}
	}
	// The next tile overwrites the shared tile.
	__syncthreads();
}

template <typename T>
KQ_DEV void kq_cast_trw_impl(const T *x, int rows, int cols, u32 *st, u8 *out_row, u8 *out_col,
		float *scale_inv, float *history, int fmt) {
	__shared__ u32 tile[(KQ_TRW / 4) * KQ_TRW_PITCH];
	const float scale = reinterpret_cast<const float *>(st)[KQ_ST_SCALE];
	const int ntx = (cols + KQ_TRW - 1) / KQ_TRW;
	const long long ntiles = (long long)ntx * ((rows + KQ_TRW - 1) / KQ_TRW);
	float m = 0.0f;
	for (long long k = blockIdx.x; k < ntiles; k += gridDim.x) {
		const long long tl = ntiles - 1 - k;
		kq_trw_tile<T, true>(x, rows, cols, 0, 1, (int)(tl / ntx) * KQ_TRW, (int)(tl % ntx) * KQ_TRW, scale, out_row, out_col, fmt, tile, m);
	}
	kq_cast_finish(m, scale, st, scale_inv, history);
}

// ---- MXFP8 ------------------------------------------------------------------

// The swizzled (GEMM) offset of entry (i, j) of a scale matrix with ncols
// columns (docs/quantization-formats.md).
KQ_DEV long long kq_swz(long long i, int j, int ncols) {
	return ((i / 128) * (ncols / 4) + j / 4) * 512 + (i % 32) * 16 + ((i % 128) / 32) * 4 + (j % 4);
}

// The MXFP8 kernels below optionally (swz != NULL) also write each scale
// byte at its GEMM-swizzled position, as kernels.Swizzle would: a rowwise
// [srows, scols] matrix entry (r, kb) at kq_swz(r, kb, scols); a columnwise
// one (rb, c) as its transpose's entry (c, rb), at kq_swz(c, rb, srows).
// That saves the standalone swizzle launch per operand.

// Rowwise: one warp per 1x32 block, over the padded scale matrix
// [srows, scols]; padding entries get scale 0.
template <typename T>
KQ_DEV void kq_mxfp8_row_impl(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {
	float tm = 0.0f;
	u32 lane = threadIdx.x & 31u;
	long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	long long ntasks = (long long)srows * scols;
	int nblk = (cols + 31) / 32;
	for (long long t = warp; t < ntasks; t += nwarps) {
		int r = (int)(t / scols), kb = (int)(t % scols);
		if (r >= rows || kb >= nblk) {
			if (lane == 0u) {
				scales[t] = 0;
				if (swz != 0) swz[kq_swz(r, kb, scols)] = 0;
			}
			continue;
		}
		int c = kb * 32 + (int)lane;
		bool in = c < cols;
		long long i = (long long)r * cols + c;
		float v = in ? kq_f32(x[i]) : 0.0f;
		float amax = kq_warp_max(fabsf(v));
		tm = fmaxf(tm, amax);
		u32 e = ocp ? kq_e8m0_ocp(amax, fmt) : kq_e8m0_te(amax, fmt);
		if (in) out[i] = (u8)kq_cvt1(__fmul_rn(v, kq_e8m0_encode_factor(e)), fmt);
		if (lane == 0u) {
			scales[t] = (u8)e;
			if (swz != 0) swz[kq_swz(r, kb, scols)] = (u8)e;
		}
	}
	kq_mxfp8_finish(tm, st);
}

// Columnwise: one thread per 32x1 block, over the padded scale matrix
// [srows, scols]; the data keeps the input's [rows, cols] layout.
template <typename T>
KQ_DEV void kq_mxfp8_col_impl(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {
	float tm = 0.0f;
	long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	long long ntasks = (long long)srows * scols;
	int nrb = (rows + 31) / 32;
	for (long long t = tid; t < ntasks; t += nthreads) {
		int rb = (int)(t / scols), c = (int)(t % scols);
		if (rb >= nrb || c >= cols) {
			scales[t] = 0;
			if (swz != 0) swz[kq_swz(c, rb, srows)] = 0;
			continue;
		}
		float v[32];
		float amax = 0.0f;
#pragma unroll
		for (int k = 0; k < 32; k++) {
			int r = rb * 32 + k;
			v[k] = r < rows ? kq_f32(x[(long long)r * cols + c]) : 0.0f;
			amax = fmaxf(amax, fabsf(v[k]));
		}
		tm = fmaxf(tm, amax);
		u32 e = ocp ? kq_e8m0_ocp(amax, fmt) : kq_e8m0_te(amax, fmt);
		float f = kq_e8m0_encode_factor(e);
#pragma unroll
		for (int k = 0; k < 32; k++) {
			int r = rb * 32 + k;
			if (r < rows) out[(long long)r * cols + c] = (u8)kq_cvt1(__fmul_rn(v[k], f), fmt);
		}
		scales[t] = (u8)e;
		if (swz != 0) swz[kq_swz(c, rb, srows)] = (u8)e;
	}
	kq_mxfp8_finish(tm, st);
}

// Rowwise with 16-byte loads: a warp takes chunks of KQ_UNROLL x 32
// consecutive 8-element groups of one padded row (scols blocks of 32, i.e.
// 4 scols groups per row; the chunks of a row run past its end into
// inactive lanes), so that each of its KQ_UNROLL loads per lane reads 512
// contiguous bytes and all are issued before the first is used. Four
// consecutive lanes share a 1x32 block. The chunk's row and position are
// advanced by the warp stride, with no division per chunk. (The first
// version took one group per thread and iteration: one 16-byte load in
// flight per thread, 61% of copy bandwidth on an H200; unrolled over grid
// strides it kept 64-bit row and group arrays that spilled.)
#define KQ_ROW_CHUNK (KQ_UNROLL * 32)
template <typename T>
KQ_DEV void kq_mxfp8_row8_impl(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {
	float tm = 0.0f;
	int lane = (int)(threadIdx.x & 31u);
	int gpr = scols * 4; // 8-element groups per padded row
	int cpr = (gpr + KQ_ROW_CHUNK - 1) / KQ_ROW_CHUNK;
	long long nchunks = (long long)srows * cpr;
	long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	long long r = warp / cpr;
	int kc = (int)(warp % cpr);
	const long long dr = nwarps / cpr;
	const int dk = (int)(nwarps % cpr);
	for (long long ck = warp; ck < nchunks; ck += nwarps) {
		int j0 = kc * KQ_ROW_CHUNK + lane;
		const T *xr = x + r * cols;
		float v[KQ_UNROLL][8];
#pragma unroll
		for (int u = 0; u < KQ_UNROLL; u++) {
			int c = (j0 + 32 * u) * 8;
			if (r < rows && c < cols) kq_load8(xr, c / 8, v[u]);
			else kq_zero8(v[u]);
		}
#pragma unroll
		for (int u = 0; u < KQ_UNROLL; u++) {
			int j = j0 + 32 * u, c = j * 8;
			bool in = r < rows && c < cols;
			float m = 0.0f;
#pragma unroll
			for (int k = 0; k < 8; k++) m = fmaxf(m, fabsf(v[u][k]));
			m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 1));
			m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 2));
			tm = fmaxf(tm, m);
			u32 e = ocp ? kq_e8m0_ocp(m, fmt) : kq_e8m0_te(m, fmt);
			if (in) {
				float f = kq_e8m0_encode_factor(e);
				float fs[8] = {f, f, f, f, f, f, f, f};
				*reinterpret_cast<uint2 *>(out + r * cols + c) = kq_cvt8(v[u], fs, fmt);
			}
			if (j < gpr && (j & 3) == 0) {
				const u8 sv = in ? (u8)e : (u8)0;
				scales[r * scols + j / 4] = sv;
				if (swz != 0) swz[kq_swz(r, j / 4, scols)] = sv;
			}
		}
		r += dr;
		kc += dk;
		if (kc >= cpr) {
			kc -= cpr;
			r++;
		}
	}
	kq_mxfp8_finish(tm, st);
}

// Columnwise: one thread per 32x8 patch; the amax pass and the convert pass
// each read the patch (the second read mostly hits in L1/L2).
template <typename T>
KQ_DEV void kq_mxfp8_col8_impl(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {
	float tm = 0.0f;
	long long gpr = scols / 8;
	long long ntasks = (long long)srows * gpr;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	int nrb = (rows + 31) / 32;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < ntasks; t += nthreads) {
		int rb = (int)(t / gpr), c = (int)(t % gpr) * 8;
		u8 *sp = scales + (long long)rb * scols + c;
		if (rb >= nrb || c >= cols) {
			*reinterpret_cast<uint2 *>(sp) = make_uint2(0u, 0u);
			if (swz != 0) {
#pragma unroll
				for (int k = 0; k < 8; k++) swz[kq_swz(c + k, rb, srows)] = 0;
			}
			continue;
		}
		int r0 = rb * 32, r1 = min(rows, r0 + 32);
		float m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
		for (int r = r0; r < r1; r++) {
			float v[8];
			kq_load8(x, ((long long)r * cols + c) / 8, v);
#pragma unroll
			for (int k = 0; k < 8; k++) m[k] = fmaxf(m[k], fabsf(v[k]));
		}
		float f[8];
		u32 e[8];
#pragma unroll
		for (int k = 0; k < 8; k++) {
			tm = fmaxf(tm, m[k]);
			e[k] = ocp ? kq_e8m0_ocp(m[k], fmt) : kq_e8m0_te(m[k], fmt);
			f[k] = kq_e8m0_encode_factor(e[k]);
		}
		for (int r = r0; r < r1; r++) {
			float v[8];
			kq_load8(x, ((long long)r * cols + c) / 8, v);
			*reinterpret_cast<uint2 *>(out + (long long)r * cols + c) = kq_cvt8(v, f, fmt);
		}
		*reinterpret_cast<uint2 *>(sp) = make_uint2(e[0] | (e[1] << 8) | (e[2] << 16) | (e[3] << 24),
			e[4] | (e[5] << 8) | (e[6] << 16) | (e[7] << 24));
		if (swz != 0) {
#pragma unroll
			for (int k = 0; k < 8; k++) swz[kq_swz(c + k, rb, srows)] = (u8)e[k];
		}
	}
	kq_mxfp8_finish(tm, st);
}

// Columnwise through shared memory, for cols % 8 == 0 with a 16-byte
// aligned input and 8-byte aligned output: a block of 256 threads owns a
// tile of 32 rows (one row of scales) x 256 columns. It reads the tile once
// with 16-byte loads along the rows, each thread then takes one column's
// amax and exponent from shared memory, and the threads convert the tile
// row by row with 8-byte stores. (col8 above reads its input twice, and at
// large sizes the second read misses the caches.) Blocks stride over the
// tiles; the same bytes as col8.
#define KQ_CT_COLS 256
#define KQ_CT_PITCH (KQ_CT_COLS + 4)
template <typename T>
KQ_DEV void kq_mxfp8_colt_impl(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {
	__shared__ __align__(16) float tile[32 * KQ_CT_PITCH];
	__shared__ float fac[KQ_CT_COLS];
	float tm = 0.0f;
	u32 tid = threadIdx.x;
	int nrb = (rows + 31) / 32;
	int nct = (scols + KQ_CT_COLS - 1) / KQ_CT_COLS;
	long long ntiles = (long long)srows * nct;
	for (long long tl = blockIdx.x; tl < ntiles; tl += gridDim.x) {
		int rb = (int)(tl / nct), c0 = (int)(tl % nct) * KQ_CT_COLS;
		int r0 = rb * 32;
		// The tile, zero outside the tensor.
#pragma unroll
		for (int k = 0; k < 4; k++) {
			int tr = k * 8 + (int)(tid >> 5), tc = (int)(tid & 31u) * 8;
			int r = r0 + tr, c = c0 + tc;
			float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
			if (rb < nrb && r < rows && c < cols) kq_load8(x, ((long long)r * cols + c) / 8, v);
			float4 *d = reinterpret_cast<float4 *>(tile + tr * KQ_CT_PITCH + tc);
			d[0] = make_float4(v[0], v[1], v[2], v[3]);
			d[1] = make_float4(v[4], v[5], v[6], v[7]);
		}
		__syncthreads();
		// One column per thread: amax, exponent, factor, scale byte.
		{
			int c = c0 + (int)tid;
			float a = 0.0f;
#pragma unroll
			for (int k = 0; k < 32; k++) a = fmaxf(a, fabsf(tile[k * KQ_CT_PITCH + tid]));
			tm = fmaxf(tm, a);
			u32 e = ocp ? kq_e8m0_ocp(a, fmt) : kq_e8m0_te(a, fmt);
			fac[tid] = kq_e8m0_encode_factor(e);
			if (c < scols) {
				const u8 sv = (rb < nrb && c < cols) ? (u8)e : (u8)0;
				scales[(long long)rb * scols + c] = sv;
				if (swz != 0) swz[kq_swz(c, rb, srows)] = sv;
			}
		}
		__syncthreads();
		// Convert with each column's factor.
#pragma unroll
		for (int k = 0; k < 4; k++) {
			int tr = k * 8 + (int)(tid >> 5), tc = (int)(tid & 31u) * 8;
			int r = r0 + tr, c = c0 + tc;
			if (rb < nrb && r < rows && c < cols) {
				const float *sv = tile + tr * KQ_CT_PITCH + tc;
				float v[8], f[8];
#pragma unroll
				for (int e = 0; e < 8; e++) {
					v[e] = sv[e];
					f[e] = fac[tc + e];
				}
				*reinterpret_cast<uint2 *>(out + (long long)r * cols + c) = kq_cvt8(v, f, fmt);
			}
		}
		// The next tile overwrites the shared tile and factors.
		__syncthreads();
	}
	kq_mxfp8_finish(tm, st);
}

// ---- MXFP8, both operands in one pass ---------------------------------------

// Pairs of 16-bit inputs in one 32-bit register. The fused kernel below keeps
// its tile in registers as the input's own bits (half the registers of
// float32) and takes block amaxes with the paired max instructions: the
// largest |x| over values held exactly in the input type is itself such a
// value, so the paired max is exact; like fmaxf it returns the other operand
// when one is NaN (no .NaN modifier), so NaN never raises an amax; and
// without .ftz subnormals count. The sign bits are cleared first (|x|).
// The paired max is kq_pmax (kq_mx.cuh).
// A select on values: a conditional on two array elements is an lvalue, a
// select of their addresses, which would put the array in local memory.
KQ_DEV u32 kq_pick(bool b, u32 x, u32 y) { return b ? x : y; }
// The lower-index element of a pair is in the low half (little endian).
KQ_DEV float kq_plo(kq_bf16, u32 w) { return kq_bf16_to_f32(w & 0xFFFFu); }
KQ_DEV float kq_phi(kq_bf16, u32 w) { return kq_bf16_to_f32(w >> 16); }
KQ_DEV float kq_plo(kq_f16, u32 w) { return kq_f16_to_f32(w & 0xFFFFu); }
KQ_DEV float kq_phi(kq_f16, u32 w) { return kq_f16_to_f32(w >> 16); }

// Rowwise (1x32) and columnwise (32x1) MXFP8 of one [rows, cols] 16-bit
// tensor in one pass over the input, for cols % 8 == 0 with a 16-byte
// aligned input, 8-byte aligned outputs and 2-byte aligned scale matrices
// (the launcher checks). The two kernels above read the input once each;
// this one reads it once for both, which is what bounds the step (2 bytes
// read per 2 bytes written, against 4 per 2).
//
// A warp owns a 32x64 tile: one columnwise block of rows, two rowwise blocks
// of columns. Lane (rq, cg) = (lane / 8, lane % 8) holds tile rows rq + 4i
// (i = 0..7) and columns 8cg..8cg+7, one 16-byte load per row: a warp load
// covers four whole 128-byte row segments. The four lanes of one cg / 4
// and rq share a rowwise block: two shuffles give its amax, and each row's
// 8 rowwise codes are stored (8 bytes) as soon as its factor is known. A
// column's 32 values sit in the lane's 8 rows and in lanes ^8 and ^16: a
// reduce-scatter over those leaves each lane the amax of 2 of its 8 columns
// (word rq of its 4 pairs), so a lane computes 2 column exponents, writes
// those 2 scale bytes (one 2-byte store; the warp's 32 stores cover the
// tile's 64 columnwise scale bytes), and fetches the 8 column factors it
// needs by shuffles. Only the input pairs (32 registers) stay live across
// the tile. (The first version gave a lane 4 rows x 16 columns and kept 32
// output words live as well: at its 64-register bound ptxas spilled ~250
// bytes per thread, and it ran at 44-47% of copy bandwidth on an H200.) No
// shared memory and no barrier inside the loop: warps stride over the tiles
// on their own, and the block meets once, at the end, for the tensor amax.
//
// The tiles cover the padded scale matrices exactly: the rowwise
// [roundup(rows,128), roundup(ceil(cols/32),4)] and the columnwise
// [roundup(ceil(rows/32),4), roundup(cols,128)] both span
// roundup(rows,128) x roundup(cols,128) elements. So each scale byte,
// padding included, is written by exactly one lane, and tiles past the
// tensor load nothing and write zero scales. The arithmetic per block (the
// E8M0 rules, the factor, the rounded products and conversions) is that of
// the one-operand kernels, through the same helpers: the same bytes.
//
// The format and the scale rounding are template parameters (the entry
// point picks the instantiation) so that the 64 conversions and 10
// exponents per lane and tile carry no branch on them.
#define KQ_MX2_ABS 0x7FFF7FFFu
// ops selects the operands: KQ_MX_ROW, KQ_MX_COL or both. With one of
// them it is the one-operand MXFP8 of 16-bit inputs in the same tiles (the
// columnwise-only kernel, kq_mxfp8_colw, replaces the shared-memory colt
// for them).
#define KQ_MX_ROW 1
#define KQ_MX_COL 2
//
// pf: prefetch. The warp issues the next tile's 8 loads as soon as it has
// the current tile's data, so that its loads stay in flight while it
// converts (about 650 instructions a tile, as long as a load's latency at
// 6 warps a scheduler): with it, 32 more registers and 2 blocks per SM;
// without it, 3 blocks per SM and loads in flight only between tiles (the
// first measured version: 74-77% of copy bandwidth on an H200).
template <typename T>
KQ_DEV void kq_mx_load_tile(const T *x, int rows, int cols, int rb, int ct, int rq, int cg, bool live, uint4 q[8]) {
	int r0 = rb * 32 + rq, c = ct * 64 + cg * 8;
	const T *p = x + (long long)r0 * cols + c;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		q[i] = make_uint4(0u, 0u, 0u, 0u);
		if (live && r0 + 4 * i < rows && c < cols) q[i] = *reinterpret_cast<const uint4 *>(p + i * 4LL * cols);
	}
}
// kq_mx_words spreads a loaded tile's 8 rows into words.
KQ_DEV void kq_mx_words(const uint4 (&q)[8], u32 (&v)[8][4]) {
#pragma unroll
	for (int i = 0; i < 8; i++) {
		v[i][0] = q[i].x; v[i][1] = q[i].y; v[i][2] = q[i].z; v[i][3] = q[i].w;
	}
}
// kq_mx_tile is the arithmetic of one 32x64 tile, shared by
// kq_mxfp8_both_impl and the grouped kq_grp_mx2_impl, which differ only in
// where a tile lies: v holds the lane's rows rq + 4i (i = 0..7), columns
// c..c+7, as pairs; live(i) says whether row i is data (its codes are
// stored); bin whether the lane's rowwise block of columns is in the
// tensor, colin whether the tile's band of 32 rows is; o0 is the element
// offset of the lane's first row. put_row(i, e) stores row i's rowwise
// scale byte (lanes cg % 4 == 0; zero outside the tensor), put_col(cc, w)
// the columnwise scale bytes of columns cc and cc + 1 (w's low and high
// byte; zero outside the tensor). tm rises to the largest block amax.
template <typename T, int fmt, int ocp, int ops, typename Live, typename RowScale, typename ColScale>
KQ_DEV void kq_mx_tile(const u32 (&v)[8][4], int cg, int rq, int c, int cols, bool cin, bool bin, bool colin, u8 *out_row,
		u8 *out_col, long long o0, long long stride4, float &tm, Live live, RowScale put_row, ColScale put_col) {
	const T tag = {0};
	const u32 full = 0xFFFFFFFFu;
	// Rowwise: the amax of each row's 8 values, then of the block's 32;
	// the exponent, the factor, the codes, and the scale byte (zero in the
	// padding), written by lane cg % 4 == 0.
	u32 cm[4] = {0u, 0u, 0u, 0u};
#pragma unroll
	for (int i = 0; i < 8; i++) {
		u32 m = 0u;
#pragma unroll
		for (int k = 0; k < 4; k++) {
			u32 a = v[i][k] & KQ_MX2_ABS;
			m = kq_pmax(tag, m, a);
			cm[k] = kq_pmax(tag, cm[k], a);
		}
		if (!(ops & KQ_MX_ROW)) continue;
		float am = fmaxf(kq_plo(tag, m), kq_phi(tag, m));
		am = fmaxf(am, __shfl_xor_sync(full, am, 1));
		am = fmaxf(am, __shfl_xor_sync(full, am, 2));
		tm = fmaxf(tm, am);
		u32 e = kq_e8m0<fmt, ocp>(am);
		float f = kq_e8m0_encode_factor(e);
		if ((cg & 3) == 0) put_row(i, (live(i) && bin) ? (u8)e : (u8)0);
		if (live(i) && cin) {
			u32 o[2];
#pragma unroll
			for (int k = 0; k < 2; k++) {
				u32 w0 = v[i][2 * k], w1 = v[i][2 * k + 1];
				o[k] = kq_cvt2(__fmul_rn(kq_plo(tag, w0), f), __fmul_rn(kq_phi(tag, w0), f), fmt) |
				       (kq_cvt2(__fmul_rn(kq_plo(tag, w1), f), __fmul_rn(kq_phi(tag, w1), f), fmt) << 16);
			}
			*reinterpret_cast<uint2 *>(out_row + o0 + i * stride4) = make_uint2(o[0], o[1]);
		}
	}
	if (!(ops & KQ_MX_COL)) return;
	// Columnwise: reduce-scatter the 4 column-pair amaxes over the lanes
	// ^16 and ^8. Each step keeps half the words (the half named by the
	// lane's bit of rq) and takes the partner's copy of that half; what is
	// left is word rq.
	u32 own;
	{
		u32 h[2];
		bool b = (rq & 2) != 0;
#pragma unroll
		for (int k = 0; k < 2; k++) {
			u32 keep = kq_pick(b, cm[k + 2], cm[k]), send = kq_pick(b, cm[k], cm[k + 2]);
			h[k] = kq_pmax(tag, keep, __shfl_xor_sync(full, send, 16));
		}
		b = (rq & 1) != 0;
		u32 keep = kq_pick(b, h[1], h[0]), send = kq_pick(b, h[0], h[1]);
		own = kq_pmax(tag, keep, __shfl_xor_sync(full, send, 8));
	}
	// own holds columns c + 2rq and c + 2rq + 1 (both in the tensor or
	// neither: cols is even).
	float a0 = kq_plo(tag, own), a1 = kq_phi(tag, own);
	// Without the rowwise pass, the columns' amaxes cover the tile.
	if (!(ops & KQ_MX_ROW)) tm = fmaxf(tm, fmaxf(a0, a1));
	u32 e0 = kq_e8m0<fmt, ocp>(a0), e1 = kq_e8m0<fmt, ocp>(a1);
	float f0 = kq_e8m0_encode_factor(e0), f1 = kq_e8m0_encode_factor(e1);
	{
		const int cc = c + 2 * rq;
		put_col(cc, (colin && cc < cols) ? (e0 | (e1 << 8)) : 0u);
	}
	// Word k (columns c + 2k, c + 2k + 1) takes its factors from lane
	// (rq, cg) = (k, cg).
	float g0[4], g1[4];
#pragma unroll
	for (int k = 0; k < 4; k++) {
		g0[k] = __shfl_sync(full, f0, k * 8 + cg);
		g1[k] = __shfl_sync(full, f1, k * 8 + cg);
	}
#pragma unroll
	for (int i = 0; i < 8; i++) {
		if (!live(i) || !cin) continue;
		u32 o[2];
#pragma unroll
		for (int k = 0; k < 2; k++) {
			u32 w0 = v[i][2 * k], w1 = v[i][2 * k + 1];
			o[k] = kq_cvt2(__fmul_rn(kq_plo(tag, w0), g0[2 * k]), __fmul_rn(kq_phi(tag, w0), g1[2 * k]), fmt) |
			       (kq_cvt2(__fmul_rn(kq_plo(tag, w1), g0[2 * k + 1]), __fmul_rn(kq_phi(tag, w1), g1[2 * k + 1]), fmt) << 16);
		}
		*reinterpret_cast<uint2 *>(out_col + o0 + i * stride4) = make_uint2(o[0], o[1]);
	}
}
template <typename T, int fmt, int ocp, int ops, int pf>
KQ_DEV void kq_mxfp8_both_impl(const T *x, int rows, int cols, u8 *out_row, u8 *sc_row, int scols_row, u8 *out_col,
		u8 *sc_col, int srows_col, int scols_col, u32 *st, u8 *swz_row, u8 *swz_col) {
	u32 lane = threadIdx.x & 31u;
	int cg = (int)(lane & 7u), rq = (int)(lane >> 3);
	long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	int nct = scols_col / 64;
	long long ntiles = (long long)srows_col * nct;
	int nrb = (rows + 31) / 32, nblk = (cols + 31) / 32;
	long long stride4 = 4LL * cols; // elements from one of the lane's rows to the next
	float tm = 0.0f;
	// Consecutive warps take neighbouring tiles of one band of 32 rows. The
	// tile's band and column are advanced by the warp stride, with no
	// 64-bit division per tile.
	int rb = (int)(warp / nct), ct = (int)(warp % nct);
	const int drb = (int)(nwarps / nct), dct = (int)(nwarps % nct);
	uint4 nx[8];
	if (pf) kq_mx_load_tile(x, rows, cols, rb, ct, rq, cg, warp < ntiles, nx);
	for (long long t = warp; t < ntiles; t += nwarps) {
		const int rbc = rb, c0 = ct * 64;
		int c = c0 + cg * 8, r0 = rbc * 32 + rq;
		bool cin = c < cols; // the lane's 8 columns exist (cols % 8 == 0)
		long long o0 = (long long)r0 * cols + c; // element offset of the lane's first row
		rb += drb;
		ct += dct;
		if (ct >= nct) {
			ct -= nct;
			rb++;
		}
		u32 v[8][4];
		{
			uint4 cur[8];
			if (pf) {
#pragma unroll
				for (int i = 0; i < 8; i++) cur[i] = nx[i];
				kq_mx_load_tile(x, rows, cols, rb, ct, rq, cg, t + nwarps < ntiles, nx);
			} else {
				kq_mx_load_tile(x, rows, cols, rbc, c0 / 64, rq, cg, true, cur);
			}
			kq_mx_words(cur, v);
		}
		const int blk = c0 / 32 + (cg >> 2);
		kq_mx_tile<T, fmt, ocp, ops>(v, cg, rq, c, cols, cin, blk < nblk, rbc < nrb, out_row, out_col, o0, stride4, tm,
			[&](int i) { return r0 + 4 * i < rows; },
			[&](int i, u8 sv) {
				const int r = r0 + 4 * i;
				sc_row[(long long)r * scols_row + blk] = sv;
				if (swz_row != 0) swz_row[kq_swz(r, blk, scols_row)] = sv;
			},
			[&](int cc, u32 w) {
				*reinterpret_cast<u16 *>(sc_col + (long long)rbc * scols_col + cc) = (u16)w;
				if (swz_col != 0) {
					swz_col[kq_swz(cc, rbc, srows_col)] = (u8)w;
					swz_col[kq_swz(cc + 1, rbc, srows_col)] = (u8)(w >> 8);
				}
			});
	}
	kq_mxfp8_finish(tm, st);
}

// kq_mxfp8_tiles picks the instantiation of kq_mxfp8_both_impl.
template <typename T, int ops, int pf>
KQ_DEV void kq_mxfp8_tiles(const T *x, int rows, int cols, u8 *out_row, u8 *sc_row, int scols_row, u8 *out_col,
		u8 *sc_col, int srows_col, int scols_col, int fmt, int ocp, u32 *st, u8 *swz_row, u8 *swz_col) {
	if (fmt == KQ_E4M3 && !ocp)
		kq_mxfp8_both_impl<T, KQ_E4M3, 0, ops, pf>(x, rows, cols, out_row, sc_row, scols_row, out_col, sc_col, srows_col, scols_col, st, swz_row, swz_col);
	else if (fmt == KQ_E4M3)
		kq_mxfp8_both_impl<T, KQ_E4M3, 1, ops, pf>(x, rows, cols, out_row, sc_row, scols_row, out_col, sc_col, srows_col, scols_col, st, swz_row, swz_col);
	else if (!ocp)
		kq_mxfp8_both_impl<T, KQ_E5M2, 0, ops, pf>(x, rows, cols, out_row, sc_row, scols_row, out_col, sc_col, srows_col, scols_col, st, swz_row, swz_col);
	else
		kq_mxfp8_both_impl<T, KQ_E5M2, 1, ops, pf>(x, rows, cols, out_row, sc_row, scols_row, out_col, sc_col, srows_col, scols_col, st, swz_row, swz_col);
}

// ---- entry points -----------------------------------------------------------

#define KQ_TYPED_KERNELS(SUF, T)                                                                        \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_amax_##SUF(const T *x, long long n, u32 *st, \
			float fp8max, float eps, int pow2) {                                                    \
		kq_amax_impl<T>(x, n, st, fp8max, eps, pow2);                                               \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_cast_##SUF(const T *x, long long n, u32 *st, \
			u8 *out, float *scale_inv, float *history, int fmt) {                                   \
		kq_cast_impl<T>(x, n, st, out, scale_inv, history, fmt);                                    \
	}                                                                                                   \
	extern "C" __global__ void kq_cast_tr_##SUF(const T *x, int rows, int cols, u32 *st, u8 *out_row,   \
			u8 *out_col, float *scale_inv, float *history, int fmt) {                               \
		kq_cast_tr_impl<T>(x, rows, cols, st, out_row, out_col, scale_inv, history, fmt);           \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 3) kq_cast_trw_##SUF(const T *x, int rows,        \
			int cols, u32 *st, u8 *out_row, u8 *out_col, float *scale_inv, float *history, int fmt) { \
		kq_cast_trw_impl<T>(x, rows, cols, st, out_row, out_col, scale_inv, history, fmt);          \
	}                                                                                                   \
	extern "C" __global__ void kq_mxfp8_row_##SUF(const T *x, int rows, int cols, u8 *out, u8 *scales,  \
			int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {                                      \
		kq_mxfp8_row_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);              \
	}                                                                                                   \
	extern "C" __global__ void kq_mxfp8_col_##SUF(const T *x, int rows, int cols, u8 *out, u8 *scales,  \
			int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {                                      \
		kq_mxfp8_col_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);              \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_mxfp8_row8_##SUF(const T *x, int rows,      \
			int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) { \
		kq_mxfp8_row8_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);             \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256) kq_mxfp8_colt_##SUF(const T *x, int rows, int cols,     \
			u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {          \
		kq_mxfp8_colt_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);         \
	}                                                                                                   \
	extern "C" __global__ void kq_mxfp8_col8_##SUF(const T *x, int rows, int cols, u8 *out, u8 *scales, \
			int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {                                      \
		kq_mxfp8_col8_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);             \
	}

KQ_TYPED_KERNELS(f32, float)
KQ_TYPED_KERNELS(bf16, kq_bf16)
KQ_TYPED_KERNELS(f16, kq_f16)

// The fused MXFP8 kernel and its columnwise-only twin are for 16-bit inputs
// only (their tile lives in registers as pairs); float32 inputs take the
// other kernels. With the prefetch, at most 128 registers, 2 blocks (16
// warps, each with 4 KiB of loads in flight all the time) per SM; the
// launchers size their grids to that (mxfp8TileKernel). (The variants
// without the prefetch, 3 blocks per SM, measured alongside in
// docs/benchmarks.md, are gone; kq_grp_mx2 keeps that layout.)
#define KQ_HALF_KERNELS(SUF, T)                                                                         \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_mxfp8_both_##SUF(const T *x, int rows,      \
			int cols, u8 *out_row, u8 *sc_row, int scols_row, u8 *out_col, u8 *sc_col, int srows_col, \
			int scols_col, int fmt, int ocp, u32 *st, u8 *swz_row, u8 *swz_col) {                   \
		kq_mxfp8_tiles<T, KQ_MX_ROW | KQ_MX_COL, 1>(x, rows, cols, out_row, sc_row, scols_row, out_col, \
			sc_col, srows_col, scols_col, fmt, ocp, st, swz_row, swz_col);                      \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_mxfp8_colw_##SUF(const T *x, int rows,      \
			int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) { \
		kq_mxfp8_tiles<T, KQ_MX_COL, 1>(x, rows, cols, 0, 0, 0, out, scales, srows, scols, fmt, ocp, st, 0, swz); \
	}

KQ_HALF_KERNELS(bf16, kq_bf16)
KQ_HALF_KERNELS(f16, kq_f16)

// Delayed scaling update, after a step: one block. Contract, "Delayed
// scaling". The history roll runs in chunks of blockDim.x entries; each
// chunk reads entries i+1 (never yet written) before any thread writes.
// scale (and scale_inv, unless 0) receive the new scale. Every thread of
// the block must call it.
KQ_DEV void kq_delayed_update_impl(float *history, int len, float *scale, float *scale_inv, float fp8max, int margin,
		int most_recent) {
	__shared__ float s_amax;
	float m = 0.0f;
	if (most_recent) {
		if (threadIdx.x == 0) m = history[0];
	} else {
		for (int i = threadIdx.x; i < len; i += blockDim.x) m = fmaxf(m, history[i]);
	}
	m = kq_block_max(m);
	if (threadIdx.x == 0) s_amax = most_recent ? history[0] : m;
	__syncthreads();
	float amax = s_amax;
	if (amax == 0.0f) return;
	if (threadIdx.x == 0 && kq_finite(amax) && amax > 0.0f) {
		float num = __fmul_rn(fp8max, __uint_as_float((u32)(127 - margin) << 23));
		float sc = __fdiv_rn(num, amax);
		if (!kq_finite(sc)) sc = __uint_as_float(KQ_FLT_MAX_BITS);
		*scale = sc;
		if (scale_inv != 0) *scale_inv = __fdiv_rn(1.0f, sc);
	}
	float first = history[0];
	__syncthreads();
	for (int base = 0; base < len; base += blockDim.x) {
		int i = base + (int)threadIdx.x;
		float v = 0.0f;
		if (i < len) v = i + 1 < len ? history[i + 1] : first;
		__syncthreads();
		if (i < len) history[i] = i == 0 ? 0.0f : v;
		__syncthreads();
	}
}

extern "C" __global__ void kq_delayed_update(float *history, int len, u32 *st, float fp8max, int margin, int most_recent) {
	float *stf = reinterpret_cast<float *>(st);
	kq_delayed_update_impl(history, len, stf + KQ_ST_SCALE, stf + KQ_ST_SCALE_INV, fp8max, margin, most_recent);
}

// out = decode(q) * scale_inv, float32.
extern "C" __global__ void kq_dequant_fp8(const u8 *q, long long n, const float *scale_inv, float *out, int fmt) {
	float s = *scale_inv;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += nthreads)
		out[i] = __fmul_rn(kq_fp8_decode(q[i], fmt), s);
}

// out = decode(q) * 2^(e-127) with e the element's block scale.
extern "C" __global__ void kq_mxfp8_dequant(const u8 *q, int rows, int cols, const u8 *scales, int scols, int colwise,
		float *out, int fmt) {
	long long n = (long long)rows * cols;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += nthreads) {
		int r = (int)(i / cols), c = (int)(i % cols);
		long long si = colwise ? (long long)(r / 32) * scols + c : (long long)r * scols + c / 32;
		out[i] = __fmul_rn(kq_fp8_decode(q[i], fmt), kq_e8m0_decode_factor(scales[si]));
	}
}

// ---- self tests -------------------------------------------------------------

// Raw conversion of float32 values, as the hardware does it.
extern "C" __global__ void kq_cvt_f32(const float *x, long long n, u8 *out, int fmt) {
	long long nthreads = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += nthreads)
		out[i] = (u8)kq_cvt1(x[i], fmt);
}

// Hardware against kq_cvt1_sw for bit patterns [start, start+count):
// res[0] counts mismatches, res[1..8] keep some mismatching patterns.
extern "C" __global__ void kq_cvt_check(u64 start, u64 count, u64 *res, int fmt) {
	u64 nthreads = (u64)gridDim.x * blockDim.x;
	for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += nthreads) {
		u32 bits = (u32)(start + i);
		float x = __uint_as_float(bits);
		u32 hw = kq_cvt1(x, fmt), sw = kq_cvt1_sw(x, fmt);
		if (hw != sw) {
			u64 k = atomicAdd(&res[0], 1ull);
			if (k < 8ull) res[1 + k] = ((u64)hw << 40) | ((u64)sw << 32) | bits;
		}
	}
}

// ---- grouped (MoE) quantize: current scaling and MXFP8 ----------------------
//
// One [rows, cols] input split along its rows into ngroups groups whose
// sizes live in device memory: offsets[G+1] and *flag come from
// kq_grp_offsets (grouped.cu), which runs first in the same stream. Every
// kernel here reads *flag first and does nothing when it is set (a
// misaligned group, or sizes that do not add up to rows), so a bad split
// vector never makes a kernel index out of bounds. Grids are sized on the
// host for the largest case; each warp or block finds the group of its rows
// by binary search over the offsets. The results are the per-group results
// of the reference (internal/quant/reference, QuantizeGrouped) concatenated.

// kq_scale_from_amax is the contract's "Per-tensor scale from an amax", as
// in kq_amax_impl.
KQ_DEV float kq_scale_from_amax(float amax, float fp8max, float eps, int pow2) {
	float a = fmaxf(amax, eps);
	float scale;
	if (a == 0.0f || !kq_finite(a)) {
		scale = 1.0f;
	} else {
		scale = __fdiv_rn(fp8max, a);
		if (!kq_finite(scale)) scale = __uint_as_float(KQ_FLT_MAX_BITS);
	}
	if (pow2) scale = __uint_as_float(__float_as_uint(scale) & 0xFF800000u);
	return scale;
}

KQ_DEV u32 kq_bits(float v) { return __float_as_uint(v); }
KQ_DEV u32 kq_bits(kq_bf16 v) { return v.bits; }
KQ_DEV u32 kq_bits(kq_f16 v) { return v.bits; }

// kq_grp_ld8 loads the 8 elements at columns c..c+7 of the row starting at
// element rowoff as raw bits (kq_unpack8 widens them), zero past cols. vec:
// cols % 8 == 0 and x 16-byte aligned (one or two 16-byte loads); else
// element by element.
template <typename T>
KQ_DEV void kq_grp_ld8(const T *x, long long rowoff, int c, int cols, int vec, uint4 q[2]) {
	if (vec) {
		q[0] = q[1] = make_uint4(0u, 0u, 0u, 0u);
		if (c < cols) kq_ldraw8(x, (rowoff + c) / 8, q);
		return;
	}
	u32 w[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
#pragma unroll
	for (int k = 0; k < 8; k++) {
		u32 b = c + k < cols ? kq_bits(x[rowoff + c + k]) : 0u;
		if (sizeof(T) == 4) w[k] = b;
		else w[k >> 1] |= b << (16 * (k & 1));
	}
	q[0] = make_uint4(w[0], w[1], w[2], w[3]);
	q[1] = make_uint4(w[4], w[5], w[6], w[7]);
}

// kq_grp_st8 stores 8 codes at columns c..c+7 of the row starting at byte
// off, none past cols (vec: cols % 8 == 0 and out 8-byte aligned).
KQ_DEV void kq_grp_st8(u8 *out, long long off, int c, int cols, int vec, uint2 q) {
	if (vec) {
		if (c < cols) *reinterpret_cast<uint2 *>(out + off + c) = q;
		return;
	}
#pragma unroll
	for (int k = 0; k < 8; k++)
		if (c + k < cols) out[off + c + k] = (u8)((k < 4 ? q.x : q.y) >> (8 * (k & 3)));
}

// kq_grp_scales writes every group's scale and 1/scale (block 0 only), empty
// groups included (their amax is 0: scale 1).
KQ_DEV void kq_grp_scales(const u32 *amax, int ngroups, float *scale, float *scale_inv, float fp8max, float eps, int pow2) {
	if (blockIdx.x != 0) return;
	for (int g = (int)threadIdx.x; g < ngroups; g += (int)blockDim.x) {
		float s = kq_scale_from_amax(__uint_as_float(amax[g]), fp8max, eps, pow2);
		if (scale != 0) scale[g] = s;
		if (scale_inv != 0) scale_inv[g] = __fdiv_rn(1.0f, s);
	}
}

// Rows of a 16-row band a lane loads before it uses the first (8 x 16 bytes
// in flight for 16-bit inputs, 4 x 32 for float32).
template <typename T>
struct kq_grp_rows { static const int n = sizeof(T) == 4 ? 4 : 8; };

// The grouped per-tensor FP8 kernels below, current scaling and delayed
// scaling alike, share three work items: kq_grp_band (a 16-row band of one
// group, rowwise), kq_trw_tile (a 128x128 tile, cast + transpose, as the
// ungrouped kq_cast_trw) and
// kq_grp_tr_tile (a 16x32 tile of one group, any shape). The two schemes
// differ only in where a group's scale comes from (its amax, or its state)
// and whether the cast also reduces the amax (AMAX: delayed scaling
// records it), so each kernel is its walk over the items around them.

// kq_grp_band: a warp's 16-row band r0.. x 8 columns c.. per lane, with
// the band's scale s: with STORE its codes go to out, with AMAX m rises to
// the band's max |x| (NaN ignored).
template <typename T, bool AMAX, bool STORE>
KQ_DEV void kq_grp_band(const T *x, int cols, int r0, int c, float s, u8 *out, int fmt, int vec, float &m) {
	const int R = kq_grp_rows<T>::n;
	const float fs[8] = {s, s, s, s, s, s, s, s};
#pragma unroll
	for (int h = 0; h < 16; h += R) {
		uint4 q[R][2];
#pragma unroll
		for (int j = 0; j < R; j++) kq_grp_ld8(x, (long long)(r0 + h + j) * cols, c, cols, vec, q[j]);
#pragma unroll
		for (int j = 0; j < R; j++) {
			float v[8];
			kq_unpack8(x, q[j], v);
			if (AMAX) {
#pragma unroll
				for (int k = 0; k < 8; k++) m = fmaxf(m, fabsf(v[k]));
			}
			if (STORE) kq_grp_st8(out, (long long)(r0 + h + j) * cols, c, cols, vec, kq_cvt8(v, fs, fmt));
		}
	}
}

// kq_grp_band_walk: warp w's items (band, 256-column chunk) of the
// rowwise kernels, in order; fn(it, r0, c) each.
template <typename F>
KQ_DEV void kq_grp_band_walk(int rows, int cols, bool contiguous, F fn) {
	const int lane = (int)(threadIdx.x & 31u);
	const int nch = (cols + 255) / 256;
	const long long items = (long long)(rows / 16) * nch;
	const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	const long long i0 = contiguous ? items * w / nwarps : w, i1 = contiguous ? items * (w + 1) / nwarps : items;
	const long long step = contiguous ? 1 : nwarps;
	for (long long it = i0; it < i1; it += step) fn((int)(it / nch) * 16, (int)(it % nch) * 256 + 8 * lane);
}

// kq_grp_tr_tile: the 16x32 tile at (r0, c0), in group [goff, goff + gn),
// of cast + transpose for any shape and alignment, element by element
// with the group's scale s (256 threads); with AMAX m rises to the max |x|
// of the thread's elements.
template <typename T, bool AMAX>
KQ_DEV void kq_grp_tr_tile(const T *x, int cols, int r0, int c0, int goff, int gn, float s, u8 *out_row, u8 *out_col, int fmt,
		u8 (*tile)[33], float &m) {
	const int tx = (int)(threadIdx.x & 31u), ty = (int)(threadIdx.x >> 5);
#pragma unroll
	for (int j = 0; j < 16; j += 8) {
		const int r = r0 + ty + j, cc = c0 + tx;
		if (cc < cols) {
			const long long i = (long long)r * cols + cc;
			const float v = kq_f32(x[i]);
			if (AMAX) m = fmaxf(m, fabsf(v));
			const u32 code = kq_cvt1(__fmul_rn(v, s), fmt);
			if (out_row != 0) out_row[i] = (u8)code;
			tile[ty + j][tx] = (u8)code;
		}
	}
	__syncthreads();
#pragma unroll
	for (int j = 0; j < 2; j++) {
		const int e = (int)threadIdx.x + 256 * j;
		const int tc = e >> 4, tr = e & 15;
		const int cc = c0 + tc;
		if (cc < cols) out_col[(long long)cols * goff + (long long)cc * gn + (r0 + tr - goff)] = tile[tr][tc];
	}
	__syncthreads();
}

// Per-group amax (current scaling). Work items are 16-row bands x 256
// columns, one per warp (groups are multiples of 16 rows, so a band lies in
// one group); a lane reads 8 columns of the 16 rows. The warp's maximum goes
// into amax[g] by one atomicMax on the float's bits (amaxes are >= 0, where
// the bits order as the values; NaN elements never raise a maximum). amax
// is zeroed by kq_grp_offsets.
template <typename T>
KQ_DEV void kq_grp_amax_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, u32 *amax, int vec) {
	if (*flag != 0) return;
	kq_grp_band_walk(rows, cols, false, [&](int r0, int c) {
		float m = 0.0f;
		kq_grp_band<T, true, false>(x, cols, r0, c, 1.0f, 0, 0, vec, m);
		m = kq_warp_max(m);
		if ((threadIdx.x & 31u) == 0u && m > 0.0f) atomicMax(&amax[kq_group(offsets, ngroups, r0)], __float_as_uint(m));
	});
}

// Rowwise cast (current scaling), the items of kq_grp_amax: each band's
// codes with its group's scale, computed from amax[g] (warp-uniform).
template <typename T>
KQ_DEV void kq_grp_cast_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, const u32 *amax,
		u8 *out, float *scale, float *scale_inv, int fmt, float fp8max, float eps, int pow2, int vec) {
	if (*flag != 0) return;
	kq_grp_scales(amax, ngroups, scale, scale_inv, fp8max, eps, pow2);
	kq_grp_band_walk(rows, cols, false, [&](int r0, int c) {
		const float s = kq_scale_from_amax(__uint_as_float(amax[kq_group(offsets, ngroups, r0)]), fp8max, eps, pow2);
		float m = 0.0f;
		kq_grp_band<T, false, true>(x, cols, r0, c, s, out, fmt, vec, m);
	});
}

// Cast + transpose (current scaling) over the 128x128 tiles of the whole
// tensor (kq_trw_tile), strided over the blocks from the last tile;
// a thread takes the scale of its patch's group.
template <typename T>
KQ_DEV void kq_grp_cast_trw_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, const u32 *amax,
		u8 *out_row, u8 *out_col, float *scale, float *scale_inv, int fmt, float fp8max, float eps, int pow2) {
	if (*flag != 0) return;
	kq_grp_scales(amax, ngroups, scale, scale_inv, fp8max, eps, pow2);
	__shared__ u32 tile[(KQ_TRW / 4) * KQ_TRW_PITCH];
	const int ntx = (cols + KQ_TRW - 1) / KQ_TRW;
	const long long ntiles = (long long)ntx * ((rows + KQ_TRW - 1) / KQ_TRW);
	for (long long k = blockIdx.x; k < ntiles; k += gridDim.x) {
		const long long tl = ntiles - 1 - k;
		const int c0 = (int)(tl % ntx) * KQ_TRW, r0 = (int)(tl / ntx) * KQ_TRW;
		const int r = r0 + 8 * (int)(threadIdx.x >> 4), c = c0 + 8 * (int)(threadIdx.x & 15u);
		float s = 1.0f, m = 0.0f;
		if (r < rows && c < cols) s = kq_scale_from_amax(__uint_as_float(amax[kq_group(offsets, ngroups, r)]), fp8max, eps, pow2);
		kq_trw_tile<T, false>(x, rows, cols, offsets, ngroups, r0, c0, s, out_row, out_col, fmt, tile, m);
	}
}

// Cast + transpose (current scaling) for any shape and alignment: the
// 16x32 tiles of kq_grp_tr_tile (16 rows lie in one group), strided over
// the blocks.
template <typename T>
KQ_DEV void kq_grp_cast_tr_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, const u32 *amax,
		u8 *out_row, u8 *out_col, float *scale, float *scale_inv, int fmt, float fp8max, float eps, int pow2) {
	if (*flag != 0) return;
	kq_grp_scales(amax, ngroups, scale, scale_inv, fp8max, eps, pow2);
	__shared__ u8 tile[16][33];
	const int ntx = (cols + 31) / 32;
	const long long ntiles = (long long)ntx * (rows / 16);
	for (long long tl = blockIdx.x; tl < ntiles; tl += gridDim.x) {
		const int c0 = (int)(tl % ntx) * 32, r0 = (int)(tl / ntx) * 16;
		const int g = kq_group(offsets, ngroups, r0);
		const int goff = offsets[g], gn = offsets[g + 1] - goff;
		const float s = kq_scale_from_amax(__uint_as_float(amax[g]), fp8max, eps, pow2);
		float m = 0.0f;
		kq_grp_tr_tile<T, false>(x, cols, r0, c0, goff, gn, s, out_row, out_col, fmt, tile, m);
	}
}

// kq_grp_tiles: tiles[g] = sum over h < g of ceil(n_h / 128), the 128-row
// units of the groups' padded MXFP8 scale matrices before group g (TE's
// rowwise scales have roundup(n_g, 128) rows, the columnwise
// roundup(n_g/32, 4)). One block; chunks of 1024 groups, each one scan of
// warp scans.
extern "C" __global__ void __launch_bounds__(1024) kq_grp_tiles(const int *offsets, int ngroups, int *tiles) {
	__shared__ int wsum[32];
	__shared__ int carry;
	const u32 full = 0xFFFFFFFFu;
	const int t = (int)threadIdx.x, lane = t & 31, w = t >> 5;
	if (t == 0) {
		carry = 0;
		tiles[0] = 0;
	}
	__syncthreads();
	for (int c0 = 0; c0 < ngroups; c0 += 1024) {
		const int g = c0 + t;
		int v = g < ngroups ? (offsets[g + 1] - offsets[g] + 127) / 128 : 0;
		for (int d = 1; d < 32; d <<= 1) {
			int y = __shfl_up_sync(full, v, d);
			if (lane >= d) v += y;
		}
		if (lane == 31) wsum[w] = v;
		__syncthreads();
		if (w == 0) {
			int sv = wsum[lane];
			for (int d = 1; d < 32; d <<= 1) {
				int y = __shfl_up_sync(full, sv, d);
				if (lane >= d) sv += y;
			}
			wsum[lane] = sv;
		}
		__syncthreads();
		const int incl = v + (w > 0 ? wsum[w - 1] : 0) + carry;
		if (g < ngroups) tiles[g + 1] = incl;
		__syncthreads();
		if (t == 1023) carry = incl;
		__syncthreads();
	}
}

// Grouped MXFP8 (1x32 rowwise, 32x1 columnwise; groups of 32-row
// multiples). The data of both operands keeps the input's layout, so it is
// the ungrouped data; only the scales are per group: group g's rowwise
// [roundup(n_g,128), scols_row] matrix at row 128*tiles[g] of sc_row, its
// columnwise [roundup(n_g/32,4), scols_col] one at row 4*tiles[g] of sc_col,
// padding zero. A warp takes one 32x64 tile of the padded row space (the
// concatenated padded matrices: band vb of 32 rows, columns 64ct..): the
// band belongs to the group g with 4*tiles[g] <= vb < 4*tiles[g+1]; band vb
// - 4*tiles[g] of the group holds data rows when it is below n_g/32, else
// it is padding (zero scales, no data). Lane (rq, cg) = (lane/8, lane%8)
// holds rows rq + 4i (i = 0..7) and columns 8cg..8cg+7, as kq_mxfp8_both.
// Optionally the swizzled scales (swz_row: the rowwise matrix's rows are
// 128-aligned per group, so one swizzle of the whole; swz_col: each group's
// transposed columnwise matrix [roundup(cols,128), roundup(n_g/32,4)]
// swizzled at the group's place) and the per-group amax (atomicMax on the
// bits into amax[g], zeroed by kq_grp_offsets). ops: KQ_MX_ROW, KQ_MX_COL or
// both.
template <typename T>
KQ_DEV void kq_grp_mx_impl(const T *x, int rows, int cols, const int *offsets, const int *tiles, int ngroups, const int *flag,
		u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, int scols_col,
		int fmt, int ocp, u32 *amax, int vec, int ops) {
	if (*flag != 0) return;
	const u32 full = 0xFFFFFFFFu;
	const int lane = (int)(threadIdx.x & 31u);
	const int cg = lane & 7, rq = lane >> 3;
	const int nct = scols_col / 64;
	const int nblk = (cols + 31) / 32;
	const long long ntot = 4LL * tiles[ngroups] * nct;
	const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	for (long long t = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < ntot; t += nwarps) {
		const int vb = (int)(t / nct), ct = (int)(t % nct);
		const int g = kq_group(tiles, ngroups, vb >> 2);
		const int goff = offsets[g], gn = offsets[g + 1] - goff;
		const int tg = tiles[g];
		const int lb = vb - 4 * tg;       // the band within the group's padded rows
		const bool data = lb < gn / 32;   // else padding
		const int c = ct * 64 + cg * 8;
		const int r0 = goff + 32 * lb + rq; // the lane's first data row
		uint4 q[8][2];
#pragma unroll
		for (int i = 0; i < 8; i++) {
			q[i][0] = q[i][1] = make_uint4(0u, 0u, 0u, 0u);
			if (data) kq_grp_ld8(x, (long long)(r0 + 4 * i) * cols, c, cols, vec, q[i]);
		}
		float tm = 0.0f;
		float cm[8] = {0, 0, 0, 0, 0, 0, 0, 0};
		const int blk = ct * 2 + (cg >> 2);
#pragma unroll
		for (int i = 0; i < 8; i++) {
			float v[8];
			kq_unpack8(x, q[i], v);
			float m = 0.0f;
#pragma unroll
			for (int k = 0; k < 8; k++) {
				float a = fabsf(v[k]);
				m = fmaxf(m, a);
				cm[k] = fmaxf(cm[k], a);
			}
			if (!(ops & KQ_MX_ROW)) continue;
			m = fmaxf(m, __shfl_xor_sync(full, m, 1));
			m = fmaxf(m, __shfl_xor_sync(full, m, 2));
			tm = fmaxf(tm, m);
			u32 e = ocp ? kq_e8m0_ocp(m, fmt) : kq_e8m0_te(m, fmt);
			if ((cg & 3) == 0) {
				const long long sr = 128LL * tg + 32 * lb + rq + 4 * i;
				const u8 val = (data && blk < nblk) ? (u8)e : (u8)0;
				sc_row[sr * scols_row + blk] = val;
				if (swz_row != 0) swz_row[kq_swz(sr, blk, scols_row)] = val;
			}
			if (data) {
				float f = kq_e8m0_encode_factor(e);
				float fs[8] = {f, f, f, f, f, f, f, f};
				kq_grp_st8(out_row, (long long)(r0 + 4 * i) * cols, c, cols, vec, kq_cvt8(v, fs, fmt));
			}
		}
		if (ops & KQ_MX_COL) {
			float f[8];
			u32 e[8];
#pragma unroll
			for (int k = 0; k < 8; k++) {
				cm[k] = fmaxf(cm[k], __shfl_xor_sync(full, cm[k], 8));
				cm[k] = fmaxf(cm[k], __shfl_xor_sync(full, cm[k], 16));
				if (!(ops & KQ_MX_ROW)) tm = fmaxf(tm, cm[k]);
				e[k] = ocp ? kq_e8m0_ocp(cm[k], fmt) : kq_e8m0_te(cm[k], fmt);
				f[k] = kq_e8m0_encode_factor(e[k]);
			}
			// Lane rq writes the scale bytes of columns c + 2rq, c + 2rq + 1.
			const long long scr = 4LL * tg + lb;
			const int ncg = 4 * (tiles[g + 1] - tg); // the group's columnwise scale rows
#pragma unroll
			for (int k = 0; k < 8; k++) {
				if ((k >> 1) != rq) continue;
				const int cc = c + k;
				const u8 val = (data && cc < cols) ? (u8)e[k] : (u8)0;
				sc_col[scr * scols_col + cc] = val;
				if (swz_col != 0) swz_col[4LL * tg * scols_col + kq_swz(cc, lb, ncg)] = val;
			}
			if (data) {
#pragma unroll
				for (int i = 0; i < 8; i++) {
					float v[8];
					kq_unpack8(x, q[i], v);
					kq_grp_st8(out_col, (long long)(r0 + 4 * i) * cols, c, cols, vec, kq_cvt8(v, f, fmt));
				}
			}
		}
		if (amax != 0) {
			tm = kq_warp_max(tm);
			if (lane == 0 && data && tm > 0.0f) atomicMax(&amax[g], __float_as_uint(tm));
		}
	}
}

#define KQ_GROUPED_KERNELS(SUF, T)                                                                      \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_grp_amax_##SUF(const T *x, int rows, int cols, \
			const int *offsets, int ngroups, const int *flag, u32 *amax, int vec) {                  \
		kq_grp_amax_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, vec);                          \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_grp_cast_##SUF(const T *x, int rows, int cols, \
			const int *offsets, int ngroups, const int *flag, const u32 *amax, u8 *out, float *scale,   \
			float *scale_inv, int fmt, float fp8max, float eps, int pow2, int vec) {                    \
		kq_grp_cast_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out, scale, scale_inv, fmt,     \
			fp8max, eps, pow2, vec);                                                                \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 3) kq_grp_cast_trw_##SUF(const T *x, int rows,    \
			int cols, const int *offsets, int ngroups, const int *flag, const u32 *amax, u8 *out_row,   \
			u8 *out_col, float *scale, float *scale_inv, int fmt, float fp8max, float eps, int pow2) {  \
		kq_grp_cast_trw_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out_row, out_col, scale,   \
			scale_inv, fmt, fp8max, eps, pow2);                                                     \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256) kq_grp_cast_tr_##SUF(const T *x, int rows, int cols, \
			const int *offsets, int ngroups, const int *flag, const u32 *amax, u8 *out_row, u8 *out_col, \
			float *scale, float *scale_inv, int fmt, float fp8max, float eps, int pow2) {               \
		kq_grp_cast_tr_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out_row, out_col, scale,    \
			scale_inv, fmt, fp8max, eps, pow2);                                                     \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_grp_mx_##SUF(const T *x, int rows, int cols,  \
			const int *offsets, const int *tiles, int ngroups, const int *flag, u8 *out_row, u8 *sc_row, \
			u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, int scols_col, int fmt,   \
			int ocp, u32 *amax, int vec, int ops) {                                                     \
		kq_grp_mx_impl<T>(x, rows, cols, offsets, tiles, ngroups, flag, out_row, sc_row, swz_row,       \
			scols_row, out_col, sc_col, swz_col, scols_col, fmt, ocp, amax, vec, ops);              \
	}

KQ_GROUPED_KERNELS(f32, float)
KQ_GROUPED_KERNELS(bf16, kq_bf16)
KQ_GROUPED_KERNELS(f16, kq_f16)

// Grouped MXFP8 for 16-bit inputs in the register tiles of kq_mxfp8_both
// (the input pairs held as raw bits, paired-max amaxes, the column
// reduce-scatter; see there), for cols % 8 == 0 with a 16-byte aligned
// input, 8-byte aligned data outputs and 2-byte aligned scale matrices.
// The tiles are those of kq_grp_mx: the 32x64 tiles of the padded row
// space, each mapped to its group's data band or padding by one search.
// No prefetch: 3 blocks per SM (the both3 layout, as fast as the
// prefetching one on an H200). Same bytes as kq_grp_mx.
template <typename T, int fmt, int ocp, int ops>
KQ_DEV void kq_grp_mx2_impl(const T *x, int rows, int cols, const int *offsets, const int *tiles, int ngroups,
		u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, int scols_col, u32 *amax) {
	const u32 lane = threadIdx.x & 31u;
	const int cg = (int)(lane & 7u), rq = (int)(lane >> 3);
	const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	const int nct = scols_col / 64;
	const long long ntiles = 4LL * tiles[ngroups] * nct;
	const int nblk = (cols + 31) / 32;
	const long long stride4 = 4LL * cols;
	for (long long t = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < ntiles; t += nwarps) {
		const int vb = (int)(t / nct), ct = (int)(t % nct);
		const int g = kq_group(tiles, ngroups, vb >> 2);
		const int tg = tiles[g];
		const int goff = offsets[g];
		const int lb = vb - 4 * tg;
		const bool data = lb < (offsets[g + 1] - goff) / 32;
		const int c0 = ct * 64;
		const int c = c0 + cg * 8;
		const int r0 = goff + 32 * lb + rq; // the lane's first data row
		const bool cin = c < cols;
		const long long o0 = (long long)r0 * cols + c;
		u32 v[8][4];
		{
			uint4 cur[8];
			kq_mx_load_tile(x, rows, cols, goff / 32 + lb, ct, rq, cg, data, cur);
			kq_mx_words(cur, v);
		}
		float tm = 0.0f;
		const int blk = c0 / 32 + (cg >> 2);
		kq_mx_tile<T, fmt, ocp, ops>(v, cg, rq, c, cols, cin, blk < nblk, data, out_row, out_col, o0, stride4, tm,
			[&](int) { return data; },
			[&](int i, u8 sv) {
				const long long sr = 128LL * tg + 32 * lb + rq + 4 * i;
				sc_row[sr * scols_row + blk] = sv;
				if (swz_row != 0) swz_row[kq_swz(sr, blk, scols_row)] = sv;
			},
			[&](int cc, u32 w) {
				*reinterpret_cast<u16 *>(sc_col + (4LL * tg + lb) * scols_col + cc) = (u16)w;
				if (swz_col != 0) {
					const int ncg = 4 * (tiles[g + 1] - tg);
					u8 *base = swz_col + 4LL * tg * scols_col;
					base[kq_swz(cc, lb, ncg)] = (u8)w;
					base[kq_swz(cc + 1, lb, ncg)] = (u8)(w >> 8);
				}
			});
		if (amax != 0) {
			tm = kq_warp_max(tm);
			if (lane == 0u && data && tm > 0.0f) atomicMax(&amax[g], __float_as_uint(tm));
		}
	}
}

// kq_grp_mx2_pick picks the instantiation of kq_grp_mx2_impl.
template <typename T, int ops>
KQ_DEV void kq_grp_mx2_pick(const T *x, int rows, int cols, const int *offsets, const int *tiles, int ngroups, u8 *out_row,
		u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, int scols_col, int fmt, int ocp, u32 *amax) {
	if (fmt == KQ_E4M3 && !ocp)
		kq_grp_mx2_impl<T, KQ_E4M3, 0, ops>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, scols_col, amax);
	else if (fmt == KQ_E4M3)
		kq_grp_mx2_impl<T, KQ_E4M3, 1, ops>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, scols_col, amax);
	else if (!ocp)
		kq_grp_mx2_impl<T, KQ_E5M2, 0, ops>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, scols_col, amax);
	else
		kq_grp_mx2_impl<T, KQ_E5M2, 1, ops>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, scols_col, amax);
}

#define KQ_GROUPED_HALF_KERNELS(SUF, T)                                                                 \
	extern "C" __global__ void __launch_bounds__(256, 3) kq_grp_mx2_##SUF(const T *x, int rows, int cols, \
			const int *offsets, const int *tiles, int ngroups, const int *flag, u8 *out_row, u8 *sc_row, \
			u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, int scols_col, int fmt,   \
			int ocp, u32 *amax, int ops) {                                                              \
		if (*flag != 0) return;                                                                     \
		if (ops == (KQ_MX_ROW | KQ_MX_COL))                                                         \
			kq_grp_mx2_pick<T, KQ_MX_ROW | KQ_MX_COL>(x, rows, cols, offsets, tiles, ngroups, out_row, \
				sc_row, swz_row, scols_row, out_col, sc_col, swz_col, scols_col, fmt, ocp, amax);  \
		else if (ops == KQ_MX_ROW)                                                                  \
			kq_grp_mx2_pick<T, KQ_MX_ROW>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row,    \
				swz_row, scols_row, out_col, sc_col, swz_col, scols_col, fmt, ocp, amax);          \
		else                                                                                        \
			kq_grp_mx2_pick<T, KQ_MX_COL>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row,    \
				swz_row, scols_row, out_col, sc_col, swz_col, scols_col, fmt, ocp, amax);          \
	}

KQ_GROUPED_HALF_KERNELS(bf16, kq_bf16)
KQ_GROUPED_HALF_KERNELS(f16, kq_f16)

// ---- grouped (MoE) quantize: delayed scaling --------------------------------
//
// As the grouped current-scaling kernels above (offsets and *flag from
// kq_grp_offsets, groups of 16-row multiples, every kernel a no-op while
// *flag is set), but group g casts with its state's scale[g] (the previous
// update's) and records its amax: the cast reduces each group's max |x|
// (NaN ignored) into amax[g] (float bits, zeroed by kq_grp_offsets), and
// kq_grp_dupdate raises history entry 0 of group g to it and, at the end of
// a step, runs group g's update, one block per group. The per-group state
// is contiguous: scale[G] floats and history[G][len]. Block 0 of the cast
// writes scale_inv[g] = 1/scale[g] for every group.
//
// The amax reduction is what costs: one same-address atomic per tile cost
// more than the whole cast at 16384^2 (kq_cast_trw). So each warp (or block)
// takes a contiguous range of work items rather than striding over them,
// keeps its running maximum while its group stays the same, and commits it
// (one atomicMax on the float's bits, amaxes being >= 0) only when the group
// changes and at the end: a few atomics per warp instead of one per item.

// kq_grp_commit merges a warp's running maximum into amax[g] (g < 0: none).
// Every lane of the warp must call it (warp-uniform g).
KQ_DEV void kq_grp_commit(u32 *amax, int g, float m) {
	m = kq_warp_max(m);
	if (g >= 0 && (threadIdx.x & 31u) == 0u && m > 0.0f) atomicMax(&amax[g], __float_as_uint(m));
}

// kq_grp_run is a warp's walk over its items in the grouped delayed casts:
// the current group g (-1: none yet, or past the rows), the running maximum
// m of its values and its scale s. to() moves to an item's group, committing
// the previous group's maximum when the group changes; done() commits the
// last one.
struct kq_grp_run {
	u32 *amax;
	const float *scale;
	int g;
	float m, s;
	__device__ __forceinline__ kq_grp_run(u32 *amax_, const float *scale_) : amax(amax_), scale(scale_), g(-1), m(0.0f), s(1.0f) {}
	__device__ __forceinline__ void to(int gn) {
		if (gn == g) return;
		kq_grp_commit(amax, g, m);
		g = gn;
		m = 0.0f;
		s = gn >= 0 ? scale[gn] : 1.0f;
	}
	__device__ __forceinline__ void done() { kq_grp_commit(amax, g, m); }
};

// kq_block_items is block b's contiguous share [*t0, *t1) of n items.
KQ_DEV void kq_block_items(long long n, long long *t0, long long *t1) {
	*t0 = n * blockIdx.x / gridDim.x;
	*t1 = n * (blockIdx.x + 1) / gridDim.x;
}

// kq_grp_dscale_inv writes scale_inv[g] = 1/scale[g] for every group (block
// 0 only).
KQ_DEV void kq_grp_dscale_inv(const float *scale, float *scale_inv, int ngroups) {
	if (blockIdx.x != 0 || scale_inv == 0) return;
	for (int g = (int)threadIdx.x; g < ngroups; g += (int)blockDim.x) scale_inv[g] = __fdiv_rn(1.0f, scale[g]);
}

// Rowwise cast, the items of kq_grp_cast (kq_grp_band), warp w taking
// items [w*items/nwarps, (w+1)*items/nwarps). 3 blocks per SM: at
// kq_grp_cast's 4 (64 registers) the running maximum and group spilled
// about 600 bytes per thread.
template <typename T>
KQ_DEV void kq_grp_dcast_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, u32 *amax,
		u8 *out, const float *scale, float *scale_inv, int fmt, int vec) {
	if (*flag != 0) return;
	kq_grp_dscale_inv(scale, scale_inv, ngroups);
	kq_grp_run run(amax, scale);
	kq_grp_band_walk(rows, cols, true, [&](int r0, int c) {
		run.to(kq_group(offsets, ngroups, r0));
		kq_grp_band<T, true, true>(x, cols, r0, c, run.s, out, fmt, vec, run.m);
	});
	run.done();
}

// Cast + transpose over the 128x128 tiles of kq_trw_tile, block b
// taking tiles [b*tiles/grid, (b+1)*tiles/grid) in row-major order, so
// that its warps mostly stay in one 128-row band. Warp w holds tile rows
// 16w..16w+15 (rg = 2w, 2w+1): one group, whose maximum it keeps.
template <typename T>
KQ_DEV void kq_grp_dcast_trw_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, u32 *amax,
		u8 *out_row, u8 *out_col, const float *scale, float *scale_inv, int fmt) {
	if (*flag != 0) return;
	kq_grp_dscale_inv(scale, scale_inv, ngroups);
	__shared__ u32 tile[(KQ_TRW / 4) * KQ_TRW_PITCH];
	const int ntx = (cols + KQ_TRW - 1) / KQ_TRW;
	const long long ntiles = (long long)ntx * ((rows + KQ_TRW - 1) / KQ_TRW);
	long long t0, t1;
	kq_block_items(ntiles, &t0, &t1);
	kq_grp_run run(amax, scale);
	for (long long tl = t0; tl < t1; tl++) {
		const int c0 = (int)(tl % ntx) * KQ_TRW, r0 = (int)(tl / ntx) * KQ_TRW;
		// The warp's 16 rows (warp-uniform group; -1 past the rows).
		const int rb = r0 + 16 * (int)(threadIdx.x >> 5);
		run.to(rb < rows ? kq_group(offsets, ngroups, rb) : -1);
		kq_trw_tile<T, true>(x, rows, cols, offsets, ngroups, r0, c0, run.s, out_row, out_col, fmt, tile, run.m);
	}
	run.done();
}

// Cast + transpose for any shape and alignment: the 16x32 tiles of
// kq_grp_tr_tile (one group each), block b taking a contiguous range.
template <typename T>
KQ_DEV void kq_grp_dcast_tr_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, u32 *amax,
		u8 *out_row, u8 *out_col, const float *scale, float *scale_inv, int fmt) {
	if (*flag != 0) return;
	kq_grp_dscale_inv(scale, scale_inv, ngroups);
	__shared__ u8 tile[16][33];
	const int ntx = (cols + 31) / 32;
	const long long ntiles = (long long)ntx * (rows / 16);
	long long t0, t1;
	kq_block_items(ntiles, &t0, &t1);
	kq_grp_run run(amax, scale);
	for (long long tl = t0; tl < t1; tl++) {
		const int c0 = (int)(tl % ntx) * 32, r0 = (int)(tl / ntx) * 16;
		const int g = kq_group(offsets, ngroups, r0);
		const int goff = offsets[g], gn = offsets[g + 1] - goff;
		run.to(g);
		kq_grp_tr_tile<T, true>(x, cols, r0, c0, goff, gn, run.s, out_row, out_col, fmt, tile, run.m);
	}
	run.done();
}

// kq_grp_dupdate, one block per group g: raises history[g][0] to amax[g]
// (as quant.State.RecordAmax: only a larger amax replaces it) and, with
// update, runs group g's delayed update (kq_delayed_update_impl) on its
// history and scale[g].
extern "C" __global__ void __launch_bounds__(1024) kq_grp_dupdate(const int *flag, const u32 *amax, float *scale,
		float *history, int len, float fp8max, int margin, int most_recent, int update) {
	if (*flag != 0) return;
	const int g = (int)blockIdx.x;
	float *h = history + (long long)g * len;
	if (threadIdx.x == 0) {
		float a = __uint_as_float(amax[g]);
		if (a > h[0]) h[0] = a;
	}
	if (!update) return;
	__syncthreads();
	kq_delayed_update_impl(h, len, scale + g, 0, fp8max, margin, most_recent);
}

#define KQ_GROUPED_DELAYED_KERNELS(SUF, T)                                                              \
	extern "C" __global__ void __launch_bounds__(256, 3) kq_grp_dcast_##SUF(const T *x, int rows,       \
			int cols, const int *offsets, int ngroups, const int *flag, u32 *amax, u8 *out,           \
			const float *scale, float *scale_inv, int fmt, int vec) {                                 \
		kq_grp_dcast_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out, scale, scale_inv, fmt, vec); \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 3) kq_grp_dcast_trw_##SUF(const T *x, int rows,   \
			int cols, const int *offsets, int ngroups, const int *flag, u32 *amax, u8 *out_row,       \
			u8 *out_col, const float *scale, float *scale_inv, int fmt) {                             \
		kq_grp_dcast_trw_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out_row, out_col, scale,  \
			scale_inv, fmt);                                                                        \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256) kq_grp_dcast_tr_##SUF(const T *x, int rows,       \
			int cols, const int *offsets, int ngroups, const int *flag, u32 *amax, u8 *out_row,       \
			u8 *out_col, const float *scale, float *scale_inv, int fmt) {                             \
		kq_grp_dcast_tr_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out_row, out_col, scale,   \
			scale_inv, fmt);                                                                        \
	}

KQ_GROUPED_DELAYED_KERNELS(f32, float)
KQ_GROUPED_DELAYED_KERNELS(bf16, kq_bf16)
KQ_GROUPED_DELAYED_KERNELS(f16, kq_f16)
