/* SPDX-License-Identifier: MIT */
/*
 * The amx tile kernel (matmul_amx.c includes this once for each set of
 * tile operations): KNAME(pt, xp, c0, c1) computes columns [c0, c1) of
 * @pt, @xp its x packed (engy_mm_amx_pack).  For each run of up to four
 * 16-row blocks of x, each 16 columns' sums over all of k in tiles 0-3
 * (tile 4 the weight rows, 16 of them, 32 elements each, read in place
 * where they lie inside the matrix, else through a zero-padded copy;
 * tiles 6 and 7 x), then stored and written out transposed (y^T = W x^T).
 *
 * The includer defines KNAME, KATTR, T_STATE, T_CFG(), T_REL(),
 * T_ZERO(t), T_LOAD(t, p, stride), T_STORE(t, p, stride) and
 * T_DP(c, a, b); they are undefined at the end.
 */

static KATTR void KNAME(const struct mm_part *pt, const uint32_t *xp, size_t c0,
			size_t c1)
{
	const uint16_t *w = (const uint16_t *)pt->w;
	size_t nkb = (pt->in + 31) / 32, nmb = (pt->n + 15) / 16;
	size_t mb, c, kb, k, i, r, m, nk;
	_Alignas(64) uint16_t pad[16 * 32];
	_Alignas(64) float out[4][16 * 16];
	int nb, j;
	T_STATE;

	T_CFG();
	for (mb = 0; mb < nmb; mb += 4) {
		nb = nmb - mb < 4 ? (int)(nmb - mb) : 4;
		for (c = c0; c < c1; c += 16) {
			const uint32_t *b = xp + mb * nkb * 256;

			T_ZERO(0);
			T_ZERO(1);
			T_ZERO(2);
			T_ZERO(3);
			for (kb = 0; kb < nkb; kb++, b += 256) {
				k = kb * 32;
				if (pt->n <= 2) /* decode: the next 16 rows */
					pf_rows(WROW(w, MM_BF16,
						     c + 16 - PF_ROWS, pt->in),
						MM_BF16, pt->in, 16, k, 32);
				if (c + 16 <= pt->out && k + 32 <= pt->in) {
					T_LOAD(4, w + c * pt->in + k,
					       pt->in * 2);
				} else {
					memset(pad, 0, sizeof(pad));
					nk = pt->in - k < 32 ? pt->in - k : 32;
					for (r = 0; r < 16 && c + r < pt->out;
					     r++)
						memcpy(pad + r * 32,
						       w + (c + r) * pt->in + k,
						       nk * sizeof(*pad));
					T_LOAD(4, pad, 64);
				}
				T_LOAD(6, b, 64);
				T_DP(0, 4, 6);
				if (nb > 1) {
					T_LOAD(7, b + nkb * 256, 64);
					T_DP(1, 4, 7);
				}
				if (nb > 2) {
					T_LOAD(6, b + 2 * nkb * 256, 64);
					T_DP(2, 4, 6);
				}
				if (nb > 3) {
					T_LOAD(7, b + 3 * nkb * 256, 64);
					T_DP(3, 4, 7);
				}
			}
			T_STORE(0, out[0], 64);
			if (nb > 1)
				T_STORE(1, out[1], 64);
			if (nb > 2)
				T_STORE(2, out[2], 64);
			if (nb > 3)
				T_STORE(3, out[3], 64);
			/* out[j] row i: column c + i against x's rows
			 * (mb + j) * 16 + 0..15 */
			for (j = 0; j < nb; j++)
				for (i = 0; i < 16 && c + i < c1; i++)
					for (r = 0; r < 16; r++) {
						m = (mb + (size_t)j) * 16 + r;
						if (m >= pt->n)
							break;
						pt->y[m * pt->out + c + i] =
							out[j][i * 16 + r];
					}
		}
	}
	T_REL();
}

#undef KNAME
#undef KATTR
#undef T_STATE
#undef T_CFG
#undef T_REL
#undef T_ZERO
#undef T_LOAD
#undef T_STORE
#undef T_DP
