// quantize_mxfp8_row.cuh: part of quantize.cu (included once, after
// quantize_mxfp8_mxm.cuh, whose rowwise helpers it uses): the body of
// kq_mxfp8_roww, the rowwise-only MXFP8 of 16-bit inputs with cols % 8 == 0
// and aligned buffers. Not a header of its own; the entry point is in
// quantize.cu.
//
// A streaming kernel. Each warp strides on its own over units of 4 rows x
// 512 columns of the padded element space roundup(rows,128) x
// (32 scols): rows r0 + 32g (g = 0..3) for r0 = 128 R + q, q < 32, and the
// columns 512 s.. (16 blocks). Load i of a lane (i = 0..7, all 8 issued
// before the first use) reads row g = i / 2, columns 512 s + 256 (i % 2) +
// 8 lane..+7: each warp load is 512 contiguous bytes, a warp's unit 4 runs
// of 1 KiB, and the block's 8 warps (consecutive units) 4 runs of 8 KiB, so
// the reads are long sequential streams; each 8-code store of a warp is
// 256 contiguous bytes. (The last version took units of 16 rows x 128
// columns: 256-byte runs per row, and 48 scale-byte store requests per
// 2048 codes; 77% of DRAM bandwidth on an H200, torch.compile's linear
// Triton kernel more.)
//
// The unit's shape is the one whose scales leave in whole words: its 4 x
// 16 exponents are 4 rows x 16 bytes of the plain matrix (rows r0 + 32g,
// bytes 16 s..) and, in the swizzled layout, line q (16 bytes: row group g,
// block b at byte 4g + b) of 4 consecutive 512-byte swizzled blocks (R, 4s
// + j), since rows r0 + 32g are the 4 row groups of one line. The lanes
// that own a block (lane % 4 == 0) put its exponent in the warp's 64-byte
// shared buffer in the swizzled order (byte 16 j + 4 g + b for the unit's
// block 4 j + b of row g); after __syncwarp, 16 lanes store the plain
// matrix's 16 words and 4 lanes the swizzled lines (8 sector writes per
// unit). The buffers alternate between units, so one __syncwarp per unit
// orders both the writes before the reads and the reads before the next
// writes of the same buffer. Units past the tensor load zeros, whose amax 0
// gives exponent 0 under both roundings, so every padding scale byte is
// written, as zero; words past scols (the last segment of a row when scols
// % 16 != 0) are not stored.
//
// The arithmetic per block is kq_mxm_tile's rowwise pass, the same
// operations in the same order through the same helpers (a block's 4
// lanes are lane ^ 1, ^ 2 as there): the same bytes. At most 64 registers,
// 4 blocks (32 warps) a SM, each warp with 4 KiB of loads in flight (the
// next unit's, while it converts this one: kq_mxr_impl's staging).
#define KQ_MXR_SEG 512
// The loads a lane takes through the phases of kq_mxr_unit together: 4,
// 2 below sm_90 (the software FP8 conversions need more registers).
#ifndef KQ_MXR_GROUP
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define KQ_MXR_GROUP 2
#else
#define KQ_MXR_GROUP 4
#endif
#endif

// kq_mxr_live: load i of a unit exists in the tensor (its row, r0 + 32
// (i / 2), before the end rleft rows on; its columns, + 256 (i % 2), cin0
// or cin1); the others load zeros and store no codes.
KQ_DEV bool kq_mxr_live(int i, bool cin0, bool cin1, int rleft) {
	return ((i & 1) ? cin1 : cin0) && 32 * (i >> 1) < rleft;
}

// One unit's arithmetic on its loads q. o: the lane's first codes (row r0,
// column 512 s + 8 lane); rs: the step between the unit's rows (32 rows);
// eb: the warp's exponent buffer.
template <typename T, int fmt, int ocp, bool FULL>
KQ_DEV void kq_mxr_unit(const uint4 (&q)[8], u8 *o, long long rs, bool cin0, bool cin1, int rleft, u8 *eb, int lane,
		float &tm) {
	const T tag = {0};
	const u32 full = 0xFFFFFFFFu;
	// The loads' block amaxes in phases (the paired maxima, the two shuffle
	// rounds, the exponents), then the exponent bytes, then the codes: the
	// same operations per block as kq_mxm_row_amax, with no branch between
	// the chains, so that they overlap.
	constexpr int G = KQ_MXR_GROUP;
	// The lane's byte in the buffer for load i: block 8 (i % 2) + lane / 4
	// of row i / 2, i.e. j = 2 (i % 2) + lane / 16, b = lane / 4 % 4.
	u8 *eo = eb + (lane >> 4) * 16 + ((lane >> 2) & 3);
	const bool put = (lane & 3) == 0;
#pragma unroll
	for (int g = 0; g < 8; g += G) {
		u32 m[G];
#pragma unroll
		for (int j = 0; j < G; j++) {
			const uint4 &w = q[g + j];
			const u32 a[4] = {w.x & KQ_MX2_ABS, w.y & KQ_MX2_ABS, w.z & KQ_MX2_ABS, w.w & KQ_MX2_ABS};
			m[j] = kq_mxm_row_pmax(tag, a);
		}
		u32 e[G];
		kq_mxm_row_exps<T, fmt, ocp, G>(tag, m, e, tm, full);
		if (put) {
#pragma unroll
			for (int j = 0; j < G; j++) {
				const int i = g + j;
				eo[32 * (i & 1) + 4 * (i >> 1)] = (u8)e[j];
			}
		}
#pragma unroll
		for (int j = 0; j < G; j++) {
			const int i = g + j;
			if (FULL || kq_mxr_live(i, cin0, cin1, rleft)) {
				const u32 v[4] = {q[i].x, q[i].y, q[i].z, q[i].w};
				const float f = kq_e8m0_encode_factor(e[j]);
				const float fs[4] = {f, f, f, f};
				*reinterpret_cast<uint2 *>(o + (i >> 1) * rs + (i & 1) * 256) = kq_mxm_cvt8<fmt>(tag, v, fs, fs);
			}
		}
	}
}

// The entry point's shared array, 16-byte aligned: KQ_MXR_EBUF, a warp's
// two 64-byte exponent buffers (8 warps), then the warps' staging slots,
// 8 loads x 32 lanes x 16 bytes (KQ_MXR_SMEM in all).
#define KQ_MXR_EBUF (8 * 128)
#define KQ_MXR_SMEM (KQ_MXR_EBUF + 8 * 8 * 32 * 16)

// Scales: sc the padded [srows, scols] matrix (4-byte aligned), swz (NULL
// skips it; 16-byte aligned) the same in the GEMM swizzled layout. esm:
// KQ_MXR_SMEM bytes.
// The next unit's loads go to the warp's staging slots (cp.async,
// zero-filled where the unit loads zeros) while it converts this one, so
// a warp keeps 4 KiB in flight through its arithmetic (128 KiB a SM at 4
// blocks), as the macro-tile kernels' staging does (KQ_MXM_STAGE); loads
// into registers at each unit's start, with none in flight while it
// converts, were 8-10% slower on an H100 (session 10). A lane reads back
// only its own slots, after cp.async.wait_all, and overwrites them (the
// next unit's cp.async) only after it has read them, so no barrier is
// needed; the values are those the loads give. (Issuing the
// copies after the unit's first group of loads, whose registers are free
// then, spilled 312 bytes; here 4 bytes are spilled and reloaded once a
// unit.)
template <typename T, int fmt, int ocp>
KQ_DEV void kq_mxr_impl(const T *x, int rows, int cols, u8 *out, u8 *sc, int srows, int scols, u32 *st, u8 *swz, u8 *esm) {
	const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
	const int nseg = (scols + 15) >> 4; // units per row quad
	// 32-bit unit counters: a unit is 2048 elements, so even 2^31 units
	// would be far beyond any device's memory.
	const int nquads = srows >> 2; // unit u = Q * nseg + s < nquads * nseg iff Q < nquads
	const int gw = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
	const int nw = (int)((gridDim.x * blockDim.x) >> 5);
	const long long rs = 32LL * cols;
	u8 *eb0 = esm + warp * 128;
	// The lane's slot for load i is slot[32 * i] (shared address sbase +
	// 512 i): a warp's 32 lanes take 512 contiguous bytes per load.
	const uint4 *slot = reinterpret_cast<const uint4 *>(esm + KQ_MXR_EBUF) + warp * 256 + lane;
	const u32 sbase = (u32)__cvta_generic_to_shared(slot);
	// The lane's first element of unit (Q, s): row r0 = 128 R + q for
	// Q = 32 R + q, column c.
	auto first = [&](int Q, int s, int &r0, int &c) {
		r0 = 128 * (Q >> 5) + (Q & 31);
		c = KQ_MXR_SEG * s + 8 * lane;
	};
	auto is_full = [&](int r0, int s) { return r0 + 96 < rows && KQ_MXR_SEG * s + KQ_MXR_SEG <= cols; };
	auto copy = [&](int i, const T *src, int n) {
		asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sbase + 512 * i), "l"(src), "r"(n) : "memory");
	};
	// stage copies unit (Q, s) to the slots; whole units (nearly all)
	// without the per-load predicates.
	auto stage = [&](int Q, int s) {
		int r0, c;
		first(Q, s, r0, c);
		const T *p = x + (long long)r0 * cols + c;
		if (is_full(r0, s)) {
#pragma unroll
			for (int i = 0; i < 8; i++) copy(i, p + (i >> 1) * rs + (i & 1) * 256, 16);
		} else {
			const bool cin0 = c < cols, cin1 = c + 256 < cols;
#pragma unroll
			for (int i = 0; i < 8; i++) {
				const bool ok = kq_mxr_live(i, cin0, cin1, rows - r0);
				copy(i, ok ? p + (i >> 1) * rs + (i & 1) * 256 : x, ok ? 16 : 0);
			}
		}
		asm volatile("cp.async.commit_group;" ::: "memory");
	};
	float tm = 0.0f;
	// The warp's unit (Q, s), advanced by the warp stride.
	int Q = gw / nseg, s = gw % nseg;
	const int dQ = nw / nseg, ds = nw % nseg;
	if (Q < nquads) stage(Q, s);
	for (int buf = 0; Q < nquads; buf ^= 1) {
		int r0, c;
		first(Q, s, r0, c);
		const long long o0 = (long long)r0 * cols + c;
		const bool full = is_full(r0, s), cin0 = c < cols, cin1 = c + 256 < cols;
		uint4 v[8];
		asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll
		for (int i = 0; i < 8; i++) v[i] = slot[32 * i];
		const int R = Q >> 5, q = Q & 31, s0 = s;
		Q += dQ;
		s += ds;
		if (s >= nseg) {
			s -= nseg;
			Q++;
		}
		if (Q < nquads) stage(Q, s);
		u8 *eb = eb0 + 64 * buf;
		if (full)
			kq_mxr_unit<T, fmt, ocp, true>(v, out + o0, rs, true, true, 0, eb, lane, tm);
		else
			kq_mxr_unit<T, fmt, ocp, false>(v, out + o0, rs, cin0, cin1, rows - r0, eb, lane, tm);
		__syncwarp();
		// Lane g + 4 j < 16: the plain word j of row r0 + 32 g; lane 16 + j:
		// the swizzled line q of block (R, 4 s + j).
		const int j = lane < 16 ? lane >> 2 : lane & 3;
		if (16 * s0 + 4 * j < scols) {
			if (lane < 16)
				*reinterpret_cast<u32 *>(sc + (long long)(r0 + 32 * (lane & 3)) * scols + 16 * s0 + 4 * j) =
					*reinterpret_cast<const u32 *>(eb + 4 * lane);
			else if (lane < 20 && swz != 0)
				*reinterpret_cast<uint4 *>(swz + ((long long)R * (scols >> 2) + 4 * s0 + (lane & 3)) * 512 + 16 * q) =
					*reinterpret_cast<const uint4 *>(eb + 16 * (lane & 3));
		}
	}
	kq_mxfp8_finish(tm, st);
}

// kq_mxfp8_rows picks the instantiation of kq_mxr_impl for the format and
// the rounding.
template <typename T>
KQ_DEV void kq_mxfp8_rows(const T *x, int rows, int cols, u8 *out, u8 *sc, int srows, int scols, int fmt, int ocp, u32 *st,
		u8 *swz, u8 *esm) {
#define KQ_MXR_ARGS x, rows, cols, out, sc, srows, scols, st, swz, esm
	if (fmt == KQ_E4M3 && !ocp) kq_mxr_impl<T, KQ_E4M3, 0>(KQ_MXR_ARGS);
	else if (fmt == KQ_E4M3) kq_mxr_impl<T, KQ_E4M3, 1>(KQ_MXR_ARGS);
	else if (!ocp) kq_mxr_impl<T, KQ_E5M2, 0>(KQ_MXR_ARGS);
	else kq_mxr_impl<T, KQ_E5M2, 1>(KQ_MXR_ARGS);
#undef KQ_MXR_ARGS
}
