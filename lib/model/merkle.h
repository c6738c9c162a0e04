/* SPDX-License-Identifier: MIT */
/*
 * The model commitment's hashing (specs/model-commitment.md, "engy-mc1"):
 * SHA-256 with 16-byte NUL-padded domain tags, power-of-two padded binary
 * trees with fixed path lengths, the tensor id, row leaves, tensor roots,
 * group roots and the model root, and the check of one row's opening
 * against a model root.  Pure: no files, no threads.
 */
#ifndef ENGY_MERKLE_H
#define ENGY_MERKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENGY_MC_HASHING	  "engy-mc1"
#define ENGY_MC_TAGLEN	  16
#define ENGY_MC_MAX_DEPTH 48 /* 2^48 leaves: far past any checkpoint */

/* The tags, each padded with NULs to 16 bytes. */
#define ENGY_MC_TAG_ROW	   "engy/mc1/row"
#define ENGY_MC_TAG_EMPTY  "engy/mc1/empty"
#define ENGY_MC_TAG_NODE   "engy/mc1/node"
#define ENGY_MC_TAG_TID	   "engy/mc1/tid"
#define ENGY_MC_TAG_TENSOR "engy/mc1/tensor"
#define ENGY_MC_TAG_TLEAF  "engy/mc1/tleaf"
#define ENGY_MC_TAG_GROUP  "engy/mc1/group"
#define ENGY_MC_TAG_MODEL  "engy/mc1/model"

/* Quantization kinds bound into the tensor id. */
enum engy_mc_quant {
	ENGY_MC_Q_NONE = 0,
	ENGY_MC_Q_FP8_BLOCK = 1, /* rows bound with their block's scale row */
	ENGY_MC_Q_INT4 = 2,	 /* rows bound with their group scales */
};

/* A hasher: one per thread. */
struct engy_mh;

struct engy_mh *engy_mh_new(void);
void engy_mh_free(struct engy_mh *h);
/* Start a message with @tag (NUL-padded to 16 bytes). */
void engy_mh_begin(struct engy_mh *h, const char *tag);
void engy_mh_put(struct engy_mh *h, const void *p, size_t n);
void engy_mh_u8(struct engy_mh *h, uint8_t v);
void engy_mh_u16(struct engy_mh *h, uint16_t v);
void engy_mh_u32(struct engy_mh *h, uint32_t v);
void engy_mh_u64(struct engy_mh *h, uint64_t v);
void engy_mh_end(struct engy_mh *h, uint8_t out[32]);
/* Plain SHA-256 of @n bytes (no tag). */
void engy_mh_sha256(struct engy_mh *h, const void *p, size_t n,
		    uint8_t out[32]);

/* What the tensor id binds (the tensor's header, its quantization). */
struct engy_mc_tensor_desc {
	const char *name;
	int dtype; /* enum engy_st_dtype */
	uint32_t ndim;
	uint64_t shape[8];
	int quant;	 /* enum engy_mc_quant */
	uint32_t qparam; /* block (FP8) or group (INT4) */
	const char *scale_name;
	int scale_dtype;
	uint64_t scale_shape[2];
};

/*
 * engy_mc_desc_check() - the shape rules: dtype known, rank <= 8, the
 * scale tensor's dtype and shape fit the weight's (FP8: [ceil(out/B),
 * ceil(in/B)]; INT4: U8 [out, in/2] with scales [out, in/G]).  Fills
 * @n_rows, @row_bytes and @aux_bytes (bytes of scale bound per row).
 * 0, or -EINVAL with a reason in @err.
 */
int engy_mc_desc_check(const struct engy_mc_tensor_desc *d, uint64_t *n_rows,
		       uint64_t *row_bytes, uint64_t *aux_bytes, char *err,
		       size_t errlen);

void engy_mc_tid(struct engy_mh *h, const struct engy_mc_tensor_desc *d,
		 uint64_t n_rows, uint64_t row_bytes, uint8_t out[32]);
void engy_mc_leaf(struct engy_mh *h, const uint8_t tid[32], uint64_t i,
		  const void *row, uint64_t row_len, const void *aux,
		  uint64_t aux_len, uint8_t out[32]);
void engy_mc_node(struct engy_mh *h, const uint8_t l[32], const uint8_t r[32],
		  uint8_t out[32]);
void engy_mc_empty(struct engy_mh *h, uint8_t out[32]);
/* Path length of a tree of @n leaves: ceil(log2(max(n, 1))). */
unsigned engy_mc_depth(uint64_t n);

/*
 * engy_mc_tree() - the root of @n leaves (32 bytes each) padded with EMPTY
 * to a power of two.  @scratch holds 32 x max(n, 1) bytes (may be @leaves:
 * then the leaves are overwritten).  When @path is not NULL, the
 * depth siblings of leaf @index go there, bottom first.
 */
void engy_mc_tree(struct engy_mh *h, const uint8_t *leaves, uint64_t n,
		  uint8_t *scratch, uint64_t index, uint8_t *path,
		  uint8_t root[32]);
/* Fold @depth siblings from @leaf at @index into @root. */
void engy_mc_fold(struct engy_mh *h, const uint8_t leaf[32], uint64_t index,
		  const uint8_t *path, unsigned depth, uint8_t root[32]);

void engy_mc_tensor_root(struct engy_mh *h, const uint8_t tid[32],
			 uint64_t n_rows, const uint8_t row_root[32],
			 uint8_t out[32]);
void engy_mc_tleaf(struct engy_mh *h, const uint8_t troot[32], uint8_t out[32]);
/* Group roots: @n tleaves of tensors sorted by name, already hashed. */
void engy_mc_group(struct engy_mh *h, uint32_t n, const uint8_t tree[32],
		   uint8_t out[32]);
void engy_mc_model(struct engy_mh *h, const uint8_t config_sha[32], uint32_t n,
		   const uint8_t tree[32], uint8_t out[32]);

/* Hex: 64 lowercase digits <-> 32 bytes (any case read).  -EINVAL. */
void engy_mc_hex(const uint8_t *b, size_t n, char *out);
int engy_mc_unhex(const char *s, uint8_t *out, size_t n);

/* ---- A row's opening (specs/model-commitment.md §6) ---- */

struct engy_mc_opening {
	struct engy_mc_tensor_desc d;
	char *name_buf, *scale_name_buf;
	uint8_t config_sha[32];
	uint32_t n_tensors;
	uint32_t tensor_index;
	uint8_t *tensor_path; /* depth(n_tensors) x 32 */
	unsigned tensor_depth;
	uint64_t row;
	uint8_t *row_bytes, *aux_bytes;
	uint64_t row_len, aux_len;
	uint8_t *row_path; /* depth(n_rows) x 32 */
	unsigned row_depth;
};

/*
 * engy_mc_opening_parse() - the opening JSON (refuses anything malformed,
 * with a reason in @err).  Free with engy_mc_opening_free().
 */
int engy_mc_opening_parse(const char *buf, size_t len,
			  struct engy_mc_opening **out, char *err,
			  size_t errlen);
void engy_mc_opening_free(struct engy_mc_opening *o);

/*
 * engy_mc_opening_verify() - recompute the tensor id, the row leaf, the
 * tensor root and the model root from the opening alone and compare with
 * @root.  0, or -EINVAL with the reason in @err.
 */
int engy_mc_opening_verify(const struct engy_mc_opening *o,
			   const uint8_t root[32], char *err, size_t errlen);

#endif /* ENGY_MERKLE_H */
