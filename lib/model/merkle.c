/* SPDX-License-Identifier: MIT */
/*
 * The model commitment's hashing: tags, trees, tensor ids, leaves, roots
 * (specs/model-commitment.md), SHA-256 through OpenSSL's EVP interface
 * with the digest fetched once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "errbuf.h"
#include "hex.h"
#include "merkle.h"
#include "safetensors.h"

struct engy_mh {
	EVP_MD_CTX *ctx;
};

static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

struct engy_mh *engy_mh_new(void)
{
	struct engy_mh *h;

	pthread_once(&sha256_once, sha256_fetch);
	if (!sha256_md)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx) {
		free(h);
		return NULL;
	}
	return h;
}

void engy_mh_free(struct engy_mh *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

static void start(struct engy_mh *h)
{
	if (EVP_DigestInit_ex2(h->ctx, sha256_md, NULL) != 1)
		abort(); /* SHA-256 cannot fail to start */
}

void engy_mh_begin(struct engy_mh *h, const char *tag)
{
	uint8_t t[ENGY_MC_TAGLEN] = { 0 };

	memcpy(t, tag, strnlen(tag, ENGY_MC_TAGLEN));
	start(h);
	engy_mh_put(h, t, sizeof(t));
}

void engy_mh_put(struct engy_mh *h, const void *p, size_t n)
{
	if (n && EVP_DigestUpdate(h->ctx, p, n) != 1)
		abort();
}

void engy_mh_u8(struct engy_mh *h, uint8_t v)
{
	engy_mh_put(h, &v, 1);
}

static void put_le(struct engy_mh *h, uint64_t v, unsigned n)
{
	uint8_t b[8];
	unsigned i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	engy_mh_put(h, b, n);
}

void engy_mh_u16(struct engy_mh *h, uint16_t v)
{
	put_le(h, v, 2);
}
void engy_mh_u32(struct engy_mh *h, uint32_t v)
{
	put_le(h, v, 4);
}
void engy_mh_u64(struct engy_mh *h, uint64_t v)
{
	put_le(h, v, 8);
}

void engy_mh_end(struct engy_mh *h, uint8_t out[32])
{
	unsigned n = 32;

	if (EVP_DigestFinal_ex(h->ctx, out, &n) != 1 || n != 32)
		abort();
}

void engy_mh_sha256(struct engy_mh *h, const void *p, size_t n, uint8_t out[32])
{
	start(h);
	engy_mh_put(h, p, n);
	engy_mh_end(h, out);
}

static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

int engy_mc_desc_check(const struct engy_mc_tensor_desc *d, uint64_t *n_rows,
		       uint64_t *row_bytes, uint64_t *aux_bytes, char *err,
		       size_t errlen)
{
	uint64_t rb, n, cols, per;
	size_t es, ss;
	uint32_t k;

	es = engy_st_dtype_size(d->dtype);
	if (!d->name || !d->name[0] || strlen(d->name) > 65535) {
		engy_seterr(err, errlen,
			    "a tensor name must have 1 to 65535 bytes");
		return -EINVAL;
	}
	if (!es || d->ndim > ENGY_ST_MAX_DIMS) {
		engy_seterr(err, errlen, "%.200s: unknown dtype or rank over 8",
			    d->name);
		return -EINVAL;
	}
	/* A row is everything below the first axis (rank < 2: the tensor). */
	rb = es;
	for (k = d->ndim >= 2 ? 1 : 0; k < d->ndim; k++)
		if (!mul_ok(rb, d->shape[k], &rb)) {
			engy_seterr(err, errlen, "%.200s: size overflows",
				    d->name);
			return -EINVAL;
		}
	n = d->ndim >= 2 ? d->shape[0] : 1;
	if (!mul_ok(n, rb, &per)) {
		engy_seterr(err, errlen, "%.200s: size overflows", d->name);
		return -EINVAL;
	}
	*n_rows = n;
	*row_bytes = rb;
	*aux_bytes = 0;
	if (d->quant == ENGY_MC_Q_NONE)
		return 0;
	ss = engy_st_dtype_size(d->scale_dtype);
	if (!d->scale_name || !d->scale_name[0] ||
	    strlen(d->scale_name) > 65535 ||
	    (d->scale_dtype != ENGY_ST_F32 && d->scale_dtype != ENGY_ST_BF16 &&
	     d->scale_dtype != ENGY_ST_F16)) {
		engy_seterr(
			err, errlen,
			"%.200s: the scale tensor must be named and F32, BF16 or F16",
			d->name);
		return -EINVAL;
	}
	if (d->ndim != 2 || !d->qparam) {
		engy_seterr(
			err, errlen,
			"%.200s: a quantized weight must be 2-D with a block or group",
			d->name);
		return -EINVAL;
	}
	if (d->quant == ENGY_MC_Q_FP8_BLOCK) {
		uint64_t b = d->qparam;

		if (d->dtype != ENGY_ST_F8_E4M3 ||
		    d->scale_shape[0] != (d->shape[0] + b - 1) / b ||
		    d->scale_shape[1] != (d->shape[1] + b - 1) / b) {
			engy_seterr(
				err, errlen,
				"%.200s: FP8 needs F8_E4M3 [out, in] and scales [ceil(out/%u), ceil(in/%u)]",
				d->name, d->qparam, d->qparam);
			return -EINVAL;
		}
	} else if (d->quant == ENGY_MC_Q_INT4) {
		cols = 2 * d->shape[1];
		if (d->dtype != ENGY_ST_U8 ||
		    d->scale_shape[0] != d->shape[0] ||
		    d->shape[1] > (UINT64_C(1) << 62) ||
		    !mul_ok(d->scale_shape[1], d->qparam, &per) ||
		    per != cols) {
			engy_seterr(
				err, errlen,
				"%.200s: INT4 needs U8 [out, in/2] and scales [out, in/%u]",
				d->name, d->qparam);
			return -EINVAL;
		}
	} else {
		engy_seterr(err, errlen, "%.200s: unknown quantization kind %d",
			    d->name, d->quant);
		return -EINVAL;
	}
	if (!mul_ok(d->scale_shape[1], ss, aux_bytes)) {
		engy_seterr(err, errlen, "%.200s: size overflows", d->name);
		return -EINVAL;
	}
	return 0;
}

static void put_name(struct engy_mh *h, const char *s)
{
	size_t n = strlen(s);

	engy_mh_u16(h, (uint16_t)n);
	engy_mh_put(h, s, n);
}

void engy_mc_tid(struct engy_mh *h, const struct engy_mc_tensor_desc *d,
		 uint64_t n_rows, uint64_t row_bytes, uint8_t out[32])
{
	uint32_t k;

	engy_mh_begin(h, ENGY_MC_TAG_TID);
	put_name(h, d->name);
	engy_mh_u8(h, (uint8_t)d->dtype);
	engy_mh_u8(h, (uint8_t)d->ndim);
	for (k = 0; k < d->ndim; k++)
		engy_mh_u64(h, d->shape[k]);
	engy_mh_u64(h, n_rows);
	engy_mh_u64(h, row_bytes);
	engy_mh_u8(h, (uint8_t)d->quant);
	if (d->quant != ENGY_MC_Q_NONE) {
		engy_mh_u32(h, d->qparam);
		put_name(h, d->scale_name);
		engy_mh_u8(h, (uint8_t)d->scale_dtype);
		engy_mh_u64(h, d->scale_shape[0]);
		engy_mh_u64(h, d->scale_shape[1]);
	}
	engy_mh_end(h, out);
}

void engy_mc_leaf(struct engy_mh *h, const uint8_t tid[32], uint64_t i,
		  const void *row, uint64_t row_len, const void *aux,
		  uint64_t aux_len, uint8_t out[32])
{
	/* tag, tid, i, len: exactly one 64-byte SHA-256 block, one update. */
	uint8_t hd[64] = ENGY_MC_TAG_ROW, tl[8];
	unsigned k;

	memcpy(hd + 16, tid, 32);
	for (k = 0; k < 8; k++) {
		hd[48 + k] = (uint8_t)(i >> (8 * k));
		hd[56 + k] = (uint8_t)(row_len >> (8 * k));
		tl[k] = (uint8_t)(aux_len >> (8 * k));
	}
	start(h);
	engy_mh_put(h, hd, sizeof(hd));
	engy_mh_put(h, row, row_len);
	engy_mh_put(h, tl, sizeof(tl));
	engy_mh_put(h, aux, aux_len);
	engy_mh_end(h, out);
}

void engy_mc_node(struct engy_mh *h, const uint8_t l[32], const uint8_t r[32],
		  uint8_t out[32])
{
	engy_mh_begin(h, ENGY_MC_TAG_NODE);
	engy_mh_put(h, l, 32);
	engy_mh_put(h, r, 32);
	engy_mh_end(h, out);
}

void engy_mc_empty(struct engy_mh *h, uint8_t out[32])
{
	engy_mh_begin(h, ENGY_MC_TAG_EMPTY);
	engy_mh_end(h, out);
}

unsigned engy_mc_depth(uint64_t n)
{
	unsigned d = 0;

	while (d < 64 && (UINT64_C(1) << d) < n)
		d++;
	return d;
}

void engy_mc_tree(struct engy_mh *h, const uint8_t *leaves, uint64_t n,
		  uint8_t *scratch, uint64_t index, uint8_t *path,
		  uint8_t root[32])
{
	uint8_t empty[32], pad[32], next_pad[32];
	uint64_t w, i;
	unsigned lvl = 0;

	engy_mc_empty(h, empty);
	if (n == 0) {
		memcpy(root, empty, 32);
		return;
	}
	if (scratch != leaves)
		memmove(scratch, leaves, 32 * n);
	memcpy(pad, empty, 32);
	/* Level by level; a missing right sibling is the empty subtree. */
	for (w = n; lvl < engy_mc_depth(n); lvl++) {
		if (path) {
			uint64_t s = index ^ 1;

			memcpy(path + 32 * lvl, s < w ? scratch + 32 * s : pad,
			       32);
			index >>= 1;
		}
		for (i = 0; i < w / 2; i++)
			engy_mc_node(h, scratch + 64 * i, scratch + 64 * i + 32,
				     scratch + 32 * i);
		if (w & 1) {
			engy_mc_node(h, scratch + 32 * (w - 1), pad,
				     scratch + 32 * (w / 2));
			w = w / 2 + 1;
		} else {
			w /= 2;
		}
		engy_mc_node(h, pad, pad, next_pad);
		memcpy(pad, next_pad, 32);
	}
	memcpy(root, scratch, 32);
}

void engy_mc_fold(struct engy_mh *h, const uint8_t leaf[32], uint64_t index,
		  const uint8_t *path, unsigned depth, uint8_t root[32])
{
	uint8_t cur[32];
	unsigned k;

	memcpy(cur, leaf, 32);
	for (k = 0; k < depth; k++) {
		if ((index >> k) & 1)
			engy_mc_node(h, path + 32 * k, cur, cur);
		else
			engy_mc_node(h, cur, path + 32 * k, cur);
	}
	memcpy(root, cur, 32);
}

void engy_mc_tensor_root(struct engy_mh *h, const uint8_t tid[32],
			 uint64_t n_rows, const uint8_t row_root[32],
			 uint8_t out[32])
{
	engy_mh_begin(h, ENGY_MC_TAG_TENSOR);
	engy_mh_put(h, tid, 32);
	engy_mh_u64(h, n_rows);
	engy_mh_put(h, row_root, 32);
	engy_mh_end(h, out);
}

void engy_mc_tleaf(struct engy_mh *h, const uint8_t troot[32], uint8_t out[32])
{
	engy_mh_begin(h, ENGY_MC_TAG_TLEAF);
	engy_mh_put(h, troot, 32);
	engy_mh_end(h, out);
}

void engy_mc_group(struct engy_mh *h, uint32_t n, const uint8_t tree[32],
		   uint8_t out[32])
{
	engy_mh_begin(h, ENGY_MC_TAG_GROUP);
	engy_mh_u32(h, n);
	engy_mh_put(h, tree, 32);
	engy_mh_end(h, out);
}

void engy_mc_model(struct engy_mh *h, const uint8_t config_sha[32], uint32_t n,
		   const uint8_t tree[32], uint8_t out[32])
{
	engy_mh_begin(h, ENGY_MC_TAG_MODEL);
	engy_mh_put(h, config_sha, 32);
	engy_mh_u32(h, n);
	engy_mh_put(h, tree, 32);
	engy_mh_end(h, out);
}

void engy_mc_hex(const uint8_t *b, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = 0;
}

int engy_mc_unhex(const char *s, uint8_t *out, size_t n)
{
	size_t i;
	int a, b;

	if (!s || strlen(s) != 2 * n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		a = engy_hexval((unsigned char)s[2 * i]);
		b = engy_hexval((unsigned char)s[2 * i + 1]);
		if (a < 0 || b < 0)
			return -EINVAL;
		out[i] = (uint8_t)(a << 4 | b);
	}
	return 0;
}

int engy_mc_opening_verify(const struct engy_mc_opening *o,
			   const uint8_t root[32], char *err, size_t errlen)
{
	uint64_t n_rows, row_bytes, aux_bytes;
	uint8_t tid[32], leaf[32], rr[32], tr[32], tl[32], tree[32], mr[32];
	struct engy_mh *h;
	int rc;

	rc = engy_mc_desc_check(&o->d, &n_rows, &row_bytes, &aux_bytes, err,
				errlen);
	if (rc)
		return rc;
	if (o->row >= n_rows) {
		engy_seterr(err, errlen, "%.200s: row %llu past its %llu rows",
			    o->d.name, (unsigned long long)o->row,
			    (unsigned long long)n_rows);
		return -EINVAL;
	}
	if (o->row_len != row_bytes || o->aux_len != aux_bytes) {
		engy_seterr(
			err, errlen,
			"%.200s: row has %llu bytes and %llu scale bytes, the header says %llu and %llu",
			o->d.name, (unsigned long long)o->row_len,
			(unsigned long long)o->aux_len,
			(unsigned long long)row_bytes,
			(unsigned long long)aux_bytes);
		return -EINVAL;
	}
	if (o->row_depth != engy_mc_depth(n_rows) ||
	    o->tensor_depth != engy_mc_depth(o->n_tensors) ||
	    o->tensor_index >= o->n_tensors) {
		engy_seterr(
			err, errlen,
			"a path has the wrong length or the tensor index is out of range");
		return -EINVAL;
	}
	h = engy_mh_new();
	if (!h) {
		engy_seterr(err, errlen, "no SHA-256");
		return -ENOMEM;
	}
	engy_mc_tid(h, &o->d, n_rows, row_bytes, tid);
	engy_mc_leaf(h, tid, o->row, o->row_bytes, o->row_len, o->aux_bytes,
		     o->aux_len, leaf);
	engy_mc_fold(h, leaf, o->row, o->row_path, o->row_depth, rr);
	engy_mc_tensor_root(h, tid, n_rows, rr, tr);
	engy_mc_tleaf(h, tr, tl);
	engy_mc_fold(h, tl, o->tensor_index, o->tensor_path, o->tensor_depth,
		     tree);
	engy_mc_model(h, o->config_sha, o->n_tensors, tree, mr);
	engy_mh_free(h);
	if (memcmp(mr, root, 32) != 0) {
		char hex[65];

		engy_mc_hex(mr, 32, hex);
		engy_seterr(
			err, errlen,
			"%.200s row %llu opens to model root %s, not the one given",
			o->d.name, (unsigned long long)o->row, hex);
		return -EINVAL;
	}
	return 0;
}
