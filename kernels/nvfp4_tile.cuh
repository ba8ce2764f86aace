// nvfp4_tile.cuh: part of nvfp4.cu (included once, after nvfp4_fast.cuh):
// the tiled fast paths (columnwise, RHT amax and 2D) over 64-row x
// 128-column tiles staged in shared memory. Not a header of its own: it
// uses what nvfp4.cu and nvfp4_fast.cuh define before it; the entry points
// are in nvfp4.cu.

// Tiles of 64 rows x 128 columns staged in shared memory with 16-byte
// loads (columns at or beyond cols read as zero; cols % 64 == 0, so a
// vector never straddles the edge). Rows are padded by 16 bytes so that
// 16-byte reads of one column range from consecutive rows hit different
// banks. Row stride KQ_TILE_ROW(T) words.
#define KQ_TILE_ROW(T) (32 * (int)sizeof(T) + 4)
#define KQ_TILE_WORDS(T) (64 * KQ_TILE_ROW(T))
template <typename T>
KQ_DEV void kq_load_tile(const T *x, int cols, int m0, int k0, u32 *tile) {
	constexpr int VPR = 8 * (int)sizeof(T); // 16-byte vectors per tile row
	constexpr int EV = 16 / (int)sizeof(T);
	constexpr int NV = 64 * VPR / 256;
	uint4 r[NV];
#pragma unroll
	for (int i = 0; i < NV; i++) {
		const int idx = threadIdx.x + 256 * i, row = idx / VPR, k = k0 + (idx % VPR) * EV;
		r[i] = k < cols ? *reinterpret_cast<const uint4 *>(x + (long long)(m0 + row) * cols + k) : make_uint4(0u, 0u, 0u, 0u);
	}
#pragma unroll
	for (int i = 0; i < NV; i++) {
		const int idx = threadIdx.x + 256 * i;
		reinterpret_cast<uint4 *>(tile)[(idx / VPR) * (VPR + 1) + idx % VPR] = r[i];
	}
}

// cp.async of 16 bytes from g to shared memory at s, or 16 zero bytes
// when !in (g is then not read: src-size 0).
KQ_DEV void kq_cp16(void *s, const void *g, bool in) {
	const u32 sa = (u32)__cvta_generic_to_shared(s);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sa), "l"(g), "r"(in ? 16 : 0) : "memory");
}
KQ_DEV void kq_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
KQ_DEV void kq_cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// kq_tile_async is kq_load_tile with cp.async (the same bytes in the same
// places, zeros beyond cols): the caller commits, waits and synchronises.
template <typename T>
KQ_DEV void kq_tile_async(const T *x, int cols, int m0, int k0, u32 *tile) {
	constexpr int VPR = 8 * (int)sizeof(T);
	constexpr int EV = 16 / (int)sizeof(T);
	constexpr int NV = 64 * VPR / 256;
#pragma unroll
	for (int i = 0; i < NV; i++) {
		const int idx = threadIdx.x + 256 * i, row = idx / VPR, k = k0 + (idx % VPR) * EV;
		const bool in = k < cols;
		kq_cp16(reinterpret_cast<uint4 *>(tile) + row * (VPR + 1) + idx % VPR, in ? x + (long long)(m0 + row) * cols + k : x, in);
	}
}

// Element (row, c) of a tile.
KQ_DEV float kq_tile_at(const kq_bf16 *, const u32 *tile, int row, int c) {
	const u32 w = tile[row * KQ_TILE_ROW(kq_bf16) + (c >> 1)];
	return __uint_as_float((c & 1) ? (w & 0xFFFF0000u) : (w << 16));
}
KQ_DEV float kq_tile_at(const kq_f16 *, const u32 *tile, int row, int c) {
	const u32 w = tile[row * KQ_TILE_ROW(kq_f16) + (c >> 1)];
	return kq_f16_to_f32((c & 1) ? (w >> 16) : (w & 0xFFFFu));
}
KQ_DEV float kq_tile_at(const float *, const u32 *tile, int row, int c) { return __uint_as_float(tile[row * KQ_TILE_ROW(float) + c]); }

// Sixteen elements of a tile row from column c0 (c0 % 16 == 0), as 16-byte
// vectors.
template <typename T>
KQ_DEV const uint4 *kq_tile_seg(const u32 *tile, int row, int c0) {
	return reinterpret_cast<const uint4 *>(tile + row * KQ_TILE_ROW(T) + c0 * (int)sizeof(T) / 4);
}

// kq_tile_key unpacks the sixteen elements of a tile row from column c0
// into v and returns their largest |v| as kq_rawkey does (from the packed
// words for the 16-bit inputs H; the float32 overload below).
template <typename H>
KQ_DEV u32 kq_tile_key(const H *x, const u32 *tile, int row, int c0, float v[16]) {
	const uint4 *s = kq_tile_seg<H>(tile, row, c0);
	uint4 L[2];
	L[0] = s[0];
	L[1] = s[1];
	kq_unpack16(x, L, v);
	return kq_key16(x, L);
}
KQ_DEV u32 kq_tile_key(const float *x, const u32 *tile, int row, int c0, float v[16]) {
	const uint4 *s = kq_tile_seg<float>(tile, row, c0);
	uint4 L[4];
#pragma unroll
	for (int i = 0; i < 4; i++) L[i] = s[i];
	kq_unpack16(x, L, v);
	return kq_rawkey(v);
}

// ---- The RHT columnwise fast path's own helpers (16-bit inputs) ----

// kq_prmt is prmt.b32 with its sign-replicating selectors (a selector
// nibble with bit 3 set fills the byte with the top bit of the byte its
// low bits select), which __byte_perm does not promise.
KQ_DEV u32 kq_prmt(u32 a, u32 b, u32 s) {
	u32 d;
	asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(s));
	return d;
}

// kq_rht_c is s_i * 0.25 for row i of the sign mask: x * c_i is exactly
// s_i * (x * 0.25) (a power-of-two multiply, exact for 16-bit inputs,
// and a sign flip; NaN payloads aside).
KQ_DEV float kq_rht_c(u32 signs, int i) { return __uint_as_float(0x3E800000u | (((signs >> i) & 1u) << 31)); }

// kq_rht16x2c is kq_rht16x2 with the signs as the factors c (kq_rht_c):
// the first butterfly stage (v_i + v_i+1, v_i - v_i+1) takes p = x_i+1 *
// c_i+1 (exact) and fma(x_i, c_i, +-p), one rounding of the exact x_i *
// c_i +- p, the bits __fadd_rn / __fsub_rn give on v_i = x_i * c_i; then
// stages h = 2, 4, 8 as kq_butterfly16 and the BF16 rounding of two
// values per instruction. P0, P1 as kq_rht16x2's.
template <typename H>
KQ_DEV void kq_rht16x2c(const u32 W[16], const float c[16], u32 P0[8], u32 P1[8]) {
	float a[16], b[16];
#pragma unroll
	for (int i = 0; i < 16; i += 2) {
		const float a0 = kq_plo(H(), W[i]), a1 = kq_plo(H(), W[i + 1]);
		const float b0 = kq_phi(H(), W[i]), b1 = kq_phi(H(), W[i + 1]);
		const float pa = __fmul_rn(a1, c[i + 1]), pb = __fmul_rn(b1, c[i + 1]);
		a[i] = __fmaf_rn(a0, c[i], pa);
		a[i + 1] = __fmaf_rn(a0, c[i], -pa);
		b[i] = __fmaf_rn(b0, c[i], pb);
		b[i + 1] = __fmaf_rn(b0, c[i], -pb);
	}
#pragma unroll
	for (int h = 2; h < 16; h <<= 1) {
#pragma unroll
		for (int i = 0; i < 16; i++) {
			if (i & h) continue;
			const float p = a[i], q = a[i + h], r = b[i], s = b[i + h];
			a[i] = __fadd_rn(p, q);
			a[i + h] = __fsub_rn(p, q);
			b[i] = __fadd_rn(r, s);
			b[i + h] = __fsub_rn(r, s);
		}
	}
#pragma unroll
	for (int k = 0; k < 8; k++) {
		P0[k] = kq_bf16x2(a[2 * k], a[2 * k + 1]);
		P1[k] = kq_bf16x2(b[2 * k], b[2 * k + 1]);
	}
}

// kq_bkey16 is kq_pkey16<kq_bf16> by the BF16 maximum that propagates
// NaN: the largest |y| of eight packed BF16 words as float32 bits (|y|
// of BF16 orders like its bits), above 0x7F800000 when a word holds a
// NaN (the canonical NaN 0x7FFF), which is all kq_block16r asks of a
// NaN block's key.
KQ_DEV u32 kq_bmaxn2(u32 a, u32 b) {
	u32 d;
	asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
	return d;
}
KQ_DEV u32 kq_bkey16(const u32 P[8]) {
	u32 m[8];
#pragma unroll
	for (int k = 0; k < 8; k++) m[k] = P[k] & 0x7FFF7FFFu;
	u32 x = kq_bmaxn2(kq_bmaxn2(kq_bmaxn2(m[0], m[1]), kq_bmaxn2(m[2], m[3])), kq_bmaxn2(kq_bmaxn2(m[4], m[5]), kq_bmaxn2(m[6], m[7])));
	x = kq_bmaxn2(x, x >> 16);
	return x << 16;
}

// kq_rne_code2 and kq_sr_code2 are kq_rne_code and kq_sr_code (the same
// bits) with the magic number from the exponent t = 127 + e of max(v, 1)
// by one multiply-add: eb + (eb >> 22) = t * (2^23 + 2) and eb + (eb >>
// 14) = t * (2^23 + 2^9) for eb = t << 23.
KQ_DEV u32 kq_rne_code2(float y) {
	const float v = fminf(fabsf(y), 6.0f);
	const u32 t = __float_as_uint(fmaxf(v, 1.0f)) >> 23;
	return __float_as_uint(__fadd_rn(v, __uint_as_float(t * 0x800002u + ((22u << 23) - 254u))));
}
KQ_DEV u32 kq_sr_code2(float y) {
	const float v = fminf(fabsf(y), 6.0f);
	const u32 t = __float_as_uint(fmaxf(v, 1.0f)) >> 23;
	return __float_as_uint(__fadd_rz(v, __uint_as_float(t * 0x800200u + ((14u << 23) - (254u << 8)))));
}

// kq_q16r is kq_q16p<kq_bf16, SR> with cheaper packing, the same codes:
// the four code bytes of elements 4q..4q+3 are gathered, each element's
// sign is put on bit 3 of its byte from a sign-replicating permute of the
// packed words (byte & 0x08), and the bytes fold into nibbles by w + (w
// >> 4) (no overlapping bits). With SR, two elements' low 16 bits (code
// << 8 | fraction, below 0x800) share a word, and one add of 0xFF - r per
// half (no half can borrow or overflow into the other) rounds up exactly
// when r < fraction, as kq_sr_code's + (255 - r); the codes are then
// bytes 1 and 3 of the pair words.
template <bool SR>
KQ_DEV u64 kq_q16r(const u32 P[8], float f, uint4 w) {
	u32 q[4];
#pragma unroll
	for (int g = 0; g < 4; g++) {
		u32 r[4];
#pragma unroll
		for (int t = 0; t < 4; t++) {
			const u32 pw = P[2 * g + (t >> 1)];
			const float x = (t & 1) ? kq_phi(kq_bf16(), pw) : kq_plo(kq_bf16(), pw);
			const float y = __fmul_rn(x, f);
			r[t] = SR ? kq_sr_code2(y) : kq_rne_code2(y);
		}
		u32 c;
		if (SR) {
			const u32 wd = kq_word(w, (u32)g);
			const u32 x01 = __byte_perm(r[0], r[1], 0x5410u) + 0x00FF00FFu - __byte_perm(wd, 0u, 0x4140u);
			const u32 x23 = __byte_perm(r[2], r[3], 0x5410u) + 0x00FF00FFu - __byte_perm(wd, 0u, 0x4342u);
			c = __byte_perm(x01, x23, 0x7531u);
		} else {
			c = __byte_perm(__byte_perm(r[0], r[1], 0x0040u), __byte_perm(r[2], r[3], 0x0040u), 0x5410u);
		}
		c |= kq_prmt(P[2 * g], P[2 * g + 1], 0xFDB9u) & 0x08080808u;
		q[g] = c + (c >> 4);
	}
	return (u64)__byte_perm(q[0], q[1], 0x6420u) | ((u64)__byte_perm(q[2], q[3], 0x6420u) << 32);
}

// Philox 4x32-10 round keys of a seed (rk[2r], rk[2r + 1]: the key of
// round r), written once per block to shared memory by threads 0..9 (the
// caller synchronises): kq_philox_rk is kq_philox with them, read as
// 16-byte broadcasts instead of two additions per round.
KQ_DEV void kq_philox_keys(u64 seed, u32 *rk) {
	const u32 r = threadIdx.x;
	if (r < 10) {
		rk[2 * r] = (u32)seed + r * 0x9E3779B9u;
		rk[2 * r + 1] = (u32)(seed >> 32) + r * 0xBB67AE85u;
	}
}
KQ_DEV uint4 kq_philox_rk(u32 c0, u32 c1, u32 c2, u32 c3, const u32 *rk) {
	const uint4 *k4 = reinterpret_cast<const uint4 *>(rk);
#pragma unroll
	for (int r = 0; r < 10; r += 2) {
		const uint4 k = k4[r >> 1];
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const u32 hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
			const u32 hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
			const u32 n0 = hi1 ^ c1 ^ (h ? k.z : k.x), n2 = hi0 ^ c3 ^ (h ? k.w : k.y);
			c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
		}
	}
	uint4 w;
	w.x = c0; w.y = c1; w.z = c2; w.w = c3;
	return w;
}

// kq_block16r is kq_block16p<kq_bf16, SR> (operand 1, the factor from
// tab) with the key of kq_bkey16, the Philox round keys rk and the codes
// of kq_q16r (a block holding a NaN takes kq_block16_ref).
template <bool SR>
KQ_DEV u64 kq_block16r(const u32 P[8], u32 key, float s6, float sinv, const float *tab, u64 n0, u32 group, u64 seed,
		const u32 *rk, u32 *d) {
	if (key > 0x7F800000u) {
		float v[16];
#pragma unroll
		for (int k = 0; k < 8; k++) {
			v[2 * k] = kq_plo(kq_bf16(), P[k]);
			v[2 * k + 1] = kq_phi(kq_bf16(), P[k]);
		}
		return kq_block16_ref<SR>(v, s6, sinv, n0, 1u, group, seed, d);
	}
	*d = kq_e4m3(__fmul_rn(__uint_as_float(key), s6));
	const float f = tab[*d];
	uint4 w = make_uint4(0u, 0u, 0u, 0u);
	if (SR) {
		const u64 b = n0 >> 4;
		w = kq_philox_rk((u32)b, (u32)(b >> 32), 1u, group, rk);
	}
	return kq_q16r<SR>(P, f, w);
}

// Columnwise fast path (rows % 64 == 0, cols % 64 == 0, aligned): a block
// stages a 64 x 128 tile, each thread transforms and quantizes the 16-row
// runs of two columns, and the packed runs leave through shared memory as
// 16-byte stores (32 contiguous bytes per transposed row and tile). A
// block takes the tiles of its kq_tiles (ntx = srows / 128 column tiles
// by rows / 64 row tiles; a grouped block, the one tile of its group's
// tensor); columns in [cols, srows) get zero scales.
// For 16-bit inputs a thread's two columns share each tile word, so the
// RHT takes the sixteen words of its run once (kq_rht16x2), rounds to
// BF16 two values per instruction and quantizes from the packed words
// (kq_block16p); RHT and SR are template parameters (kq_nvf4_col_body).
template <typename T, bool RHT, bool SR>
KQ_DEV void kq_nvf4_col_body(const T *x, int rows, int cols, const u32 *tile, const float *tab, const kq_tscale &ts,
		u64 (*stage)[4], u32 *dstage, int k0, int m0, u32 signs, u64 seed, u32 group, const float *rc, const u32 *rk) {
	const int j = threadIdx.x & 63, run = threadIdx.x >> 6;
	if constexpr (sizeof(T) == 2 && RHT) {
		// RHT of 16-bit inputs: the signs as factors rc (kq_rht_c), the
		// key and codes of kq_block16r.
		u32 W[16];
#pragma unroll
		for (int i = 0; i < 16; i++) W[i] = tile[(run * 16 + i) * KQ_TILE_ROW(T) + j];
		u32 P[2][8];
		kq_rht16x2c<T>(W, rc, P[0], P[1]);
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int c = 2 * j + h, k = k0 + c;
			u64 p = 0;
			u32 d = 0;
			if (k < cols) {
				const u64 n0 = (u64)k * (u64)rows + (u64)(m0 + run * 16);
				p = kq_block16r<SR>(P[h], kq_bkey16(P[h]), ts.s6, ts.sinv, tab, n0, group, seed, rk, &d);
			}
			stage[c][run] = p;
			reinterpret_cast<u8 *>(dstage)[c * 4 + run] = (u8)d;
		}
	} else if constexpr (sizeof(T) == 2) {
		u32 W[16];
#pragma unroll
		for (int i = 0; i < 16; i++) W[i] = tile[(run * 16 + i) * KQ_TILE_ROW(T) + j];
		u32 P[2][8];
		if (RHT) {
			kq_rht16x2<T>(W, signs, P[0], P[1]);
		} else {
#pragma unroll
			for (int k = 0; k < 8; k++) {
				P[0][k] = __byte_perm(W[2 * k], W[2 * k + 1], 0x5410u);
				P[1][k] = __byte_perm(W[2 * k], W[2 * k + 1], 0x7632u);
			}
		}
		typedef typename kq_if<RHT, kq_bf16, T>::type Y; // the packed words' type
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int c = 2 * j + h, k = k0 + c;
			u64 p = 0;
			u32 d = 0;
			if (k < cols) {
				const u64 n0 = (u64)k * (u64)rows + (u64)(m0 + run * 16);
				p = kq_block16p<Y, SR>(P[h], kq_pkey16<Y>(P[h]), ts.s6, ts.sinv, tab, n0, 1u, group, seed, &d);
			}
			stage[c][run] = p;
			reinterpret_cast<u8 *>(dstage)[c * 4 + run] = (u8)d;
		}
	} else {
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int c = 2 * j + h, k = k0 + c;
			float v[16];
#pragma unroll
			for (int i = 0; i < 16; i++) v[i] = kq_tile_at(x, tile, run * 16 + i, c);
			if (RHT) kq_rht16(v, signs);
			u64 p = 0;
			u32 d = 0;
			if (k < cols) {
				const u64 n0 = (u64)k * (u64)rows + (u64)(m0 + run * 16);
				p = kq_block16<SR>(v, kq_rawkey(v), ts.s6, ts.sinv, tab, n0, 1u, group, seed, &d);
			}
			stage[c][run] = p;
			reinterpret_cast<u8 *>(dstage)[c * 4 + run] = (u8)d;
		}
	}
}

// Tiles a block of the persistent tiled paths takes: t0, t0 + step, ...
// below n; tile t covers columns (t % ntx) * 128 and rows (t / ntx) * 64.
struct kq_tiles {
	int t0, step, n, ntx;
};

// The tile loop of the columnwise fast path (shared memory from
// kq_nvf4_col_fast): for 16-bit inputs the next tile's cp.async loads
// are in flight while the block quantizes the current one (two tile
// buffers); float32 inputs (one buffer, the 48 KiB static limit) load
// the next tile once the current one is consumed. Each tile's work and
// stores are those of one block of the one-tile-per-block kernel.
template <typename T, bool RHT, bool SR, int NB>
KQ_DEV void kq_nvf4_col_loop(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, u8 *swz,
		u32 signs, u64 seed, u32 group, kq_tiles tl, u32 (*tile)[KQ_TILE_WORDS(T)], u64 (*stage)[4], u32 *dstage,
		const float *tab, const kq_tscale &ts) {
	float rc[16];
#pragma unroll
	for (int i = 0; i < 16; i++) rc[i] = kq_rht_c(signs, i);
	__shared__ __align__(16) u32 rk[20];
	kq_philox_keys(seed, rk);
	if (tl.t0 < tl.n) kq_tile_async(x, cols, (tl.t0 / tl.ntx) * 64, (tl.t0 % tl.ntx) * 128, tile[0]);
	kq_cp_commit();
	int buf = 0;
	for (int t = tl.t0; t < tl.n; t += tl.step) {
		const int k0 = (t % tl.ntx) * 128, m0 = (t / tl.ntx) * 64, tn = t + tl.step;
		if (NB == 2) {
			if (tn < tl.n) kq_tile_async(x, cols, (tn / tl.ntx) * 64, (tn % tl.ntx) * 128, tile[buf ^ 1]);
			kq_cp_commit();
			kq_cp_wait<1>();
		} else {
			kq_cp_wait<0>();
		}
		__syncthreads();
		kq_nvf4_col_body<T, RHT, SR>(x, rows, cols, tile[buf], tab, ts, stage, dstage, k0, m0, signs, seed, group, rc, rk);
		__syncthreads();
		const int cc = threadIdx.x >> 1, half = threadIdx.x & 1, k = k0 + cc;
		if (k < cols) {
			*reinterpret_cast<uint4 *>(out + (long long)k * (rows >> 1) + (m0 >> 1) + half * 16) =
				*reinterpret_cast<const uint4 *>(&stage[cc][2 * half]);
		}
		if (half == 0 && k < srows) {
			const u32 dw = dstage[cc];
			*reinterpret_cast<u32 *>(scales + (long long)k * scols + (m0 >> 4)) = dw;
			if (swz != 0) *reinterpret_cast<u32 *>(swz + kq_swz(k, m0 >> 4, scols)) = dw;
		}
		if (NB == 1) {
			if (tn < tl.n) kq_tile_async(x, cols, (tn / tl.ntx) * 64, (tn % tl.ntx) * 128, tile[0]);
			kq_cp_commit();
		}
		buf ^= NB - 1;
	}
}

template <typename T>
__device__ void kq_nvf4_col_fast(const T *x, int rows, int cols, const u32 *amax, u8 *out, u8 *scales,
		int srows, int scols, u8 *swz, int rht, u32 signs, int sr, u64 seed, u32 group, kq_tiles tl) {
	constexpr int NB = sizeof(T) == 2 ? 2 : 1;
	__shared__ __align__(16) u32 tile[NB][KQ_TILE_WORDS(T)];
	__shared__ __align__(16) u64 stage[128][4];
	__shared__ u32 dstage[128];
	__shared__ float tab[128];
	const kq_tscale ts = kq_tscale_of(amax);
	kq_fill_tab(tab, ts.sinv);
	if (rht) {
		if (sr) kq_nvf4_col_loop<T, true, true, NB>(x, rows, cols, out, scales, srows, scols, swz, signs, seed, group, tl, tile, stage, dstage, tab, ts);
		else kq_nvf4_col_loop<T, true, false, NB>(x, rows, cols, out, scales, srows, scols, swz, signs, seed, group, tl, tile, stage, dstage, tab, ts);
	} else {
		if (sr) kq_nvf4_col_loop<T, false, true, NB>(x, rows, cols, out, scales, srows, scols, swz, signs, seed, group, tl, tile, stage, dstage, tab, ts);
		else kq_nvf4_col_loop<T, false, false, NB>(x, rows, cols, out, scales, srows, scols, swz, signs, seed, group, tl, tile, stage, dstage, tab, ts);
	}
}

// Amax of the RHT of the columnwise operand, fast path (shapes as
// kq_nvf4_col_fast; grid (ceil(cols / 128), rows / 64)). For 16-bit
// inputs kq_rht_amax2 per column pair and one rounding to BF16 per
// thread; the result is the largest BF16-rounded |y| as before. With
// pamax (not NULL) it also reduces the input's own amax into pamax, the
// value kq_nvf4_amax gives (the largest non-NaN |x|, kq_vmax/kq_vkey on
// the same words), so that a step with both operands reads the input
// once for both amaxes.
template <typename T>
__device__ void kq_nvf4_amax_rht_fast(const T *x, int rows, int cols, u32 *amax, u32 signs, u32 *pamax) {
	__shared__ __align__(16) u32 tile[KQ_TILE_WORDS(T)];
	const int k0 = blockIdx.x * 128, m0 = blockIdx.y * 64;
	kq_load_tile(x, cols, m0, k0, tile);
	__syncthreads();
	const int j = threadIdx.x & 63, run = threadIdx.x >> 6;
	float a = 0.0f;
	u32 pa = 0;
	if constexpr (sizeof(T) == 2) {
		u32 W[16];
#pragma unroll
		for (int i = 0; i < 16; i++) W[i] = tile[(run * 16 + i) * KQ_TILE_ROW(T) + j];
		if (pamax != 0) {
			u32 acc = 0;
#pragma unroll
			for (int q = 0; q < 4; q++) acc = kq_vmax(x, acc, make_uint4(W[4 * q], W[4 * q + 1], W[4 * q + 2], W[4 * q + 3]));
			pa = kq_vkey(x, acc);
		}
		a = kq_bf16_rne(kq_rht_amax2<T>(W, signs, 0.0f));
	} else {
#pragma unroll
		for (int h = 0; h < 2; h++) {
			float v[16];
#pragma unroll
			for (int i = 0; i < 16; i++) v[i] = kq_tile_at(x, tile, run * 16 + i, 2 * j + h);
#pragma unroll
			for (int t = 0; t < 16; t++) pa = max(pa, kq_absbits(v[t]));
			kq_rht16(v, signs);
#pragma unroll
			for (int t = 0; t < 16; t++) a = fmaxf(a, fabsf(v[t]));
		}
	}
	if (pamax != 0) kq_block_atomic_max2(__float_as_uint(a), amax, pa, pamax);
	else kq_block_atomic_max(__float_as_uint(a), amax);
}

// 8x8 nibble transpose: afterwards nibble i of a[c] is what nibble c of
// a[i] was (swap the off-diagonal 4x4, 2x2 and 1x1 blocks).
KQ_DEV void kq_tr8(u32 a[8]) {
#pragma unroll
	for (int i = 0; i < 4; i++) {
		const u32 x = a[i], y = a[i + 4];
		a[i] = __byte_perm(x, y, 0x5410u);
		a[i + 4] = __byte_perm(x, y, 0x7632u);
	}
#pragma unroll
	for (int i = 0; i < 8; i++) {
		if (i & 2) continue;
		const u32 x = a[i], y = a[i + 2];
		a[i] = __byte_perm(x, y, 0x6240u);
		a[i + 2] = __byte_perm(x, y, 0x7351u);
	}
#pragma unroll
	for (int i = 0; i < 8; i += 2) {
		const u32 x = a[i], y = a[i + 1];
		a[i] = (x & 0x0F0F0F0Fu) | ((y & 0x0F0F0F0Fu) << 4);
		a[i + 1] = ((x >> 4) & 0x0F0F0F0Fu) | (y & 0xF0F0F0F0u);
	}
}

// One tile of the 2D fast path (kq_nvf4_2d_fast): the tile staged and
// the amaxes zeroed, behind a barrier.
template <typename T>
KQ_DEV void kq_nvf4_2d_tile(const T *x, int rows, int cols, u8 *out_row, u8 *scales_row, int scols_row, u8 *swz_row,
		u8 *out_col, u8 *scales_col, int scols_col, u8 *swz_col, const u32 *tile, u32 *tam, u32 (*rc)[17], u64 (*stage)[4],
		const float *tab, const kq_tscale &ts, int k0, int m0) {
	// Thread (m, sp) takes the row segments kb = sp and sp + 4 of tile row
	// m: four threads read 128 contiguous bytes, and the padded rows put
	// the next row's reads on the other banks.
	const int m = threadIdx.x >> 2, sp = threadIdx.x & 3;
	u32 key[2];
	u64 p[2];
	u32 d[2];
	if constexpr (sizeof(T) == 2) {
		// 16-bit inputs: the packed words stay in registers between the
		// two passes and NaN-free segments quantize from them (kq_q16p).
		u32 P[2][8];
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int kb = sp + 4 * h;
			const uint4 *sg = kq_tile_seg<T>(tile, m, kb * 16);
			const uint4 L0 = sg[0], L1 = sg[1];
			P[h][0] = L0.x; P[h][1] = L0.y; P[h][2] = L0.z; P[h][3] = L0.w;
			P[h][4] = L1.x; P[h][5] = L1.y; P[h][6] = L1.z; P[h][7] = L1.w;
			key[h] = kq_pkey16<T>(P[h]);
			u32 a = key[h];
			if (a > 0x7F800000u) {
				float v[16];
				kq_unpack16(x, &sg[0], v);
				a = __float_as_uint(kq_block_amax(v, 16));
			}
			if (a != 0) atomicMax(&tam[(m >> 4) * 8 + kb], a);
		}
		__syncthreads();
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int kb = sp + 4 * h;
			d[h] = kq_e4m3(__fmul_rn(__uint_as_float(tam[(m >> 4) * 8 + kb]), ts.s6));
			const float f = tab[d[h]];
			if (key[h] > 0x7F800000u) {
				float v[16];
#pragma unroll
				for (int k = 0; k < 8; k++) {
					v[2 * k] = kq_plo(T(), P[h][k]);
					v[2 * k + 1] = kq_phi(T(), P[h][k]);
				}
				p[h] = kq_quant16(v, 16, f, 0, 0, 0u, 0u, 0);
			} else {
				p[h] = kq_q16p<T, false>(P[h], f, make_uint4(0u, 0u, 0u, 0u));
			}
			rc[m][2 * kb] = (u32)p[h];
			rc[m][2 * kb + 1] = (u32)(p[h] >> 32);
		}
	} else {
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int kb = sp + 4 * h;
			float v[16];
			key[h] = kq_tile_key(x, tile, m, kb * 16, v);
			const u32 a = key[h] > 0x7F800000u ? __float_as_uint(kq_block_amax(v, 16)) : key[h];
			if (a != 0) atomicMax(&tam[(m >> 4) * 8 + kb], a);
		}
		__syncthreads();
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int kb = sp + 4 * h;
			float v[16];
			kq_tile_key(x, tile, m, kb * 16, v);
			d[h] = kq_e4m3(__fmul_rn(__uint_as_float(tam[(m >> 4) * 8 + kb]), ts.s6));
			const float f = tab[d[h]];
			p[h] = key[h] > 0x7F800000u ? kq_quant16(v, 16, f, 0, 0, 0u, 0u, 0) : kq_q16f<false>(v, f, make_uint4(0u, 0u, 0u, 0u));
			rc[m][2 * kb] = (u32)p[h];
			rc[m][2 * kb + 1] = (u32)(p[h] >> 32);
		}
	}
	const int stride_r = cols >> 1, stride_c = rows >> 1;
#pragma unroll
	for (int h = 0; h < 2; h++) {
		const int kb = sp + 4 * h;
		if (k0 + kb * 16 >= cols) continue;
		if (out_row != 0) *reinterpret_cast<u64 *>(out_row + (long long)(m0 + m) * stride_r + (k0 >> 1) + kb * 8) = p[h];
		if (scales_row != 0) scales_row[(long long)(m0 + m) * scols_row + (k0 >> 4) + kb] = (u8)d[h];
		if (swz_row != 0) swz_row[kq_swz(m0 + m, (k0 >> 4) + kb, scols_row)] = (u8)d[h];
	}
	if (out_col == 0) return; // (uniform)
	__syncthreads();
	if (threadIdx.x < 64) {
		const int wc = threadIdx.x & 15, run = threadIdx.x >> 4;
		u32 lo[8], hi[8];
#pragma unroll
		for (int i = 0; i < 8; i++) {
			lo[i] = rc[run * 16 + i][wc];
			hi[i] = rc[run * 16 + 8 + i][wc];
		}
		kq_tr8(lo);
		kq_tr8(hi);
#pragma unroll
		for (int c = 0; c < 8; c++) stage[wc * 8 + c][run] = (u64)lo[c] | ((u64)hi[c] << 32);
	}
	__syncthreads();
	const int cc = threadIdx.x >> 1, half = threadIdx.x & 1, k = k0 + cc;
	if (k >= cols) return; // no barrier follows
	*reinterpret_cast<uint4 *>(out_col + (long long)k * stride_c + (m0 >> 1) + half * 16) =
		*reinterpret_cast<const uint4 *>(&stage[cc][2 * half]);
	if (half == 0) {
		const int kb = cc >> 4;
		u32 dw = 0;
#pragma unroll
		for (int r = 0; r < 4; r++) dw |= kq_e4m3(__fmul_rn(__uint_as_float(tam[r * 8 + kb]), ts.s6)) << (8 * r);
		*reinterpret_cast<u32 *>(scales_col + (long long)k * scols_col + (m0 >> 4)) = dw;
		if (swz_col != 0) *reinterpret_cast<u32 *>(swz_col + kq_swz(k, m0 >> 4, scols_col)) = dw;
	}
}

// 2D fast path (rows % 64 == 0, cols % 64 == 0, aligned): a block stages
// a 64 x 128 tile (4 x 8 tiles of 16 x 16); each thread reduces and
// quantizes two 16-element row segments, the tile amaxes meet in shared
// memory, the rowwise codes go out as 16-byte stores and, for the
// columnwise operand, are transposed nibble-wise in registers and leave
// through shared memory as 16-byte stores. The caller zeroes both scale
// matrices (their padding) first; swz_row and swz_col, when not NULL,
// also receive the scales in the GEMM layout (four columnwise entries
// adjacent there). A block takes the tiles of its kq_tiles (ntx =
// ceil(cols / 128) column tiles by rows / 64 row tiles; a grouped block,
// the one tile of its group's tensor); 16-bit inputs load the next tile
// with cp.async while quantizing the current one (as the columnwise
// path).
template <typename T>
__device__ void kq_nvf4_2d_fast(const T *x, int rows, int cols, const u32 *amax, u8 *out_row, u8 *scales_row,
		int scols_row, u8 *swz_row, u8 *out_col, u8 *scales_col, int scols_col, u8 *swz_col, kq_tiles tl) {
	constexpr int NB = sizeof(T) == 2 ? 2 : 1;
	__shared__ __align__(16) u32 tiles[NB][KQ_TILE_WORDS(T)];
	__shared__ u32 tams[2][32];
	__shared__ u32 rc[64][17];
	__shared__ __align__(16) u64 stage[128][4];
	__shared__ float tab[128];
	const kq_tscale ts = kq_tscale_of(amax);
	kq_fill_tab(tab, ts.sinv);
	if (NB == 2 && tl.t0 < tl.n) kq_tile_async(x, cols, (tl.t0 / tl.ntx) * 64, (tl.t0 % tl.ntx) * 128, tiles[0]);
	kq_cp_commit();
	int buf = 0, par = 0;
	for (int t = tl.t0; t < tl.n; t += tl.step) {
		const int k0 = (t % tl.ntx) * 128, m0 = (t / tl.ntx) * 64, tn = t + tl.step;
		if (NB == 2) {
			if (tn < tl.n) kq_tile_async(x, cols, (tn / tl.ntx) * 64, (tn % tl.ntx) * 128, tiles[buf ^ 1]);
			kq_cp_commit();
			kq_cp_wait<1>();
		} else {
			__syncthreads(); // the previous tile's last reads
			kq_tile_async(x, cols, m0, k0, tiles[0]);
			kq_cp_commit();
			kq_cp_wait<0>();
		}
		// Two amax arrays by tile parity: the one zeroed here was last
		// read two tiles ago, with barriers since.
		u32 *tam = tams[par];
		if (threadIdx.x < 32) tam[threadIdx.x] = 0;
		__syncthreads();
		kq_nvf4_2d_tile(x, rows, cols, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col,
			tiles[buf], tam, rc, stage, tab, ts, k0, m0);
		buf ^= NB - 1;
		par ^= 1;
	}
}
