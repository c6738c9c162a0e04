/* SPDX-License-Identifier: MIT */
/*
 * safetensors files: a validating reader (mmap or a caller's buffer), a
 * deterministic writer, element conversions to float, and the two
 * quantized weight layouts engy reads (specs/checkpoints.md): FP8 E4M3
 * with 128x128 block scales (Qwen's `weight_scale_inv`) and engy's packed
 * INT4 with per-group scales.
 *
 * Layout: u64le N | N bytes of UTF-8 JSON header | byte buffer.  The
 * reader trusts nothing: every header entry is checked (dtype, shape,
 * offsets inside the buffer, byte size == elements x dtype size, no holes,
 * no overlap, no duplicate names, the buffer ends at the file's end), and
 * a refusal comes with one line naming what was wrong.
 */
#ifndef ENGY_SAFETENSORS_H
#define ENGY_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENGY_ST_MAX_HEADER ((uint64_t)100000000) /* as the reference */
#define ENGY_ST_MAX_DIMS   8

enum engy_st_dtype {
	ENGY_ST_BOOL = 1,
	ENGY_ST_U8,
	ENGY_ST_I8,
	ENGY_ST_F8_E4M3,
	ENGY_ST_F8_E5M2,
	ENGY_ST_I16,
	ENGY_ST_U16,
	ENGY_ST_F16,
	ENGY_ST_BF16,
	ENGY_ST_I32,
	ENGY_ST_U32,
	ENGY_ST_F32,
	ENGY_ST_I64,
	ENGY_ST_U64,
	ENGY_ST_F64,
	ENGY_ST_DTYPE_MAX
};

struct engy_st_tensor {
	const char *name;
	int dtype; /* enum engy_st_dtype */
	uint32_t ndim;
	uint64_t shape[ENGY_ST_MAX_DIMS];
	uint64_t numel;
	const uint8_t *data; /* inside the mapping; unaligned */
	uint64_t nbytes;
};

struct engy_st;

/* "F32" -> ENGY_ST_F32; -EINVAL for names engy does not know. */
int engy_st_dtype_parse(const char *name);
const char *engy_st_dtype_name(int dtype);
/* Bytes per element, 0 for an unknown dtype. */
size_t engy_st_dtype_size(int dtype);

/*
 * engy_st_open() - map and validate @path.  Returns 0, or a negative errno
 * with a one-line reason in @err (it names the file).  The mapping stays
 * until engy_st_close().
 */
int engy_st_open(const char *path, struct engy_st **out, char *err,
		 size_t errlen);

/*
 * A checkpoint directory's safetensors files (safetensors_dir.c):
 * model.safetensors, or every distinct file model.safetensors.index.json's
 * weight_map names (plain names of .safetensors files beside it only), in
 * the order first named; more than @max is refused.  0, or a negative
 * errno (engy_st_open()'s for a file, -EINVAL for a bad index) with a
 * reason in @err; nothing is left open then.
 */
struct engy_st_dir {
	struct engy_st **st;
	size_t n;
};
int engy_st_dir_open(const char *dir, size_t max, struct engy_st_dir *d,
		     char *err, size_t errlen);
void engy_st_dir_close(struct engy_st_dir *d);

/*
 * engy_st_parse() - validate a whole file held in memory (borrowed: it
 * must outlive the handle).  Same checks and errors as engy_st_open().
 */
int engy_st_parse(const uint8_t *buf, size_t len, struct engy_st **out,
		  char *err, size_t errlen);

void engy_st_close(struct engy_st *st);

size_t engy_st_count(const struct engy_st *st);
/* Tensors in order of their data offsets. */
const struct engy_st_tensor *engy_st_at(const struct engy_st *st, size_t i);
const struct engy_st_tensor *engy_st_find(const struct engy_st *st,
					  const char *name);
/* A `__metadata__` value, or NULL. */
const char *engy_st_metadata(const struct engy_st *st, const char *key);

/*
 * engy_st_to_f32() - widen @t's elements (F32, F16, BF16, F8_E4M3,
 * F8_E5M2, F64) into @out (t->numel floats).  -ENOTSUP for other dtypes.
 */
int engy_st_to_f32(const struct engy_st_tensor *t, float *out);

/*
 * engy_st_dequant_fp8() - W = fp8 x scale_inv[r / block][c / block] for a
 * [rows, cols] F8_E4M3 weight and its [ceil(rows/block), ceil(cols/block)]
 * F32/BF16/F16 scale tensor, into @out (rows x cols).  -EINVAL (reason in
 * @err) when the shapes or dtypes do not fit.
 */
int engy_st_dequant_fp8(const struct engy_st_tensor *w,
			const struct engy_st_tensor *scale, uint32_t block,
			float *out, char *err, size_t errlen);

/*
 * engy_st_dequant_int4() - engy's INT4 layout: @q is U8 [rows, cols/2],
 * byte j of a row holding column 2j in its low nibble and 2j+1 in its high
 * nibble, each nibble u meaning u - 8; @scale is F16/BF16/F32
 * [rows, cols/group]; W[r][c] = (u - 8) x scale[r][c / group].  @cols is
 * taken from the scale shape.  -EINVAL (reason in @err) on a mismatch.
 */
int engy_st_dequant_int4(const struct engy_st_tensor *q,
			 const struct engy_st_tensor *scale, uint32_t group,
			 float *out, uint64_t *cols, char *err, size_t errlen);

/*
 * engy_st_quant_int4() - the inverse, for writers: per group of @group
 * columns, scale = f16(max|w| / 7), u = clamp(rint(w / scale), -8, 7) + 8.
 * @q gets rows x cols/2 bytes, @scale rows x cols/group F16 bit patterns.
 * @cols must be even and a multiple of @group.
 */
void engy_st_quant_int4(const float *w, uint64_t rows, uint64_t cols,
			uint32_t group, uint8_t *q, uint16_t *scale);

/*
 * engy_st_quant_fp8() - Qwen's block FP8: per @block x @block tile,
 * scale = max|w| / 448 (F32), q = e4m3(w / scale) rounded to nearest even.
 */
void engy_st_quant_fp8(const float *w, uint64_t rows, uint64_t cols,
		       uint32_t block, uint8_t *q, float *scale);

/* ---- Writer: tensors in the order added, header padded to 8 bytes. ---- */

struct engy_st_writer;

struct engy_st_writer *engy_st_writer_new(void);
void engy_st_writer_free(struct engy_st_writer *w);

/*
 * engy_st_writer_add_take() - append a tensor; the writer owns @data
 * (malloc'd, @nbytes long, freed by the writer).  -EINVAL when @nbytes is
 * not the shape's byte size or the name is empty or already used.
 */
int engy_st_writer_add_take(struct engy_st_writer *w, const char *name,
			    int dtype, uint32_t ndim, const uint64_t *shape,
			    void *data, uint64_t nbytes);

/* engy_st_writer_meta() - a `__metadata__` string pair. */
int engy_st_writer_meta(struct engy_st_writer *w, const char *key,
			const char *value);

/* engy_st_writer_save() - write the file (atomically).  0 or -errno. */
int engy_st_writer_save(struct engy_st_writer *w, const char *path);

#endif /* ENGY_SAFETENSORS_H */
