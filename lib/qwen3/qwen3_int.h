/* SPDX-License-Identifier: MIT */
/* Internals of the reference engine shared by its source files. */
#ifndef Q3_QWEN3_INT_H
#define Q3_QWEN3_INT_H

#include <pthread.h>

#include "matmul.h"
#include "qwen3.h"

struct q3_cuda;

/* Matrices are float32 or bf16 (the model's wt); vectors are float32. */
struct q3_mlp {
	void *gate, *up, *down; /* [inter, H], [inter, H], [H, inter] */
	uint32_t inter;
};

struct q3_layer {
	float *in_norm, *post_norm, *q_norm, *k_norm;
	void *wq, *wk, *wv, *wo;
	struct q3_mlp mlp;	/* dense layers */
	void *router;		/* [E, H] */
	struct q3_mlp *experts; /* E of them */
	struct q3_mlp shared;	/* when shared_inter > 0 */
	void *shared_gate;	/* [1, H] */
};

/* The model's scratch buffers: the forward's, the sparse MLP's. */
enum { Q3_SCRATCH_FWD, Q3_SCRATCH_MOE, Q3_SCRATCH_N };

struct q3_model {
	struct q3_config cfg;
	int wt; /* enum mm_wtype of every matrix */
	void *embed, *lm_head;
	float *final_norm;
	struct q3_layer *layers;
	float *inv_freq; /* head_dim / 2, float32 as HF */
	size_t bytes;
	void **bufs; /* every weight chunk or buffer, for free */
	size_t n_bufs, cap_bufs;
	char *arena_cur; /* the free rest of the last chunk */
	size_t arena_left;
	struct mm_pool *pool;
	pthread_mutex_t mu;		  /* one forward at a time */
	float *scratch[Q3_SCRATCH_N];	  /* kept between calls (under mu) */
	size_t scratch_cap[Q3_SCRATCH_N]; /* floats */
	q3_hook_fn hook;
	void *hook_arg;
	q3_row_hook_fn row_hook;
	void *row_hook_arg;
	struct q3_cuda *cuda;
	bool naive;
	int profile; /* enum q3_profile */
	char device[64];
};

struct q3_seq {
	const struct q3_model *m;
	uint32_t len, cap, max_ctx;
	uint32_t next;	/* scratch of engy_q3_forward() */
	float **k, **v; /* per layer: [n_kv, cap, head_dim] */
};

/* Whether a hook sees the matmuls (their names are for it alone: no
 * hook, no names to format). */
static inline bool engy_q3_hooked(const struct q3_model *m)
{
	return m->hook || m->row_hook;
}

/* Y = X W^T (W one of the model's matrices) on its device, then the hook. */
void engy_q3_mm(struct q3_model *m, int layer, const char *name, const float *x,
		size_t n, const void *w, size_t in, size_t out, float *y);

/* Independent products as one job, then the hook for each, in order. */
void engy_q3_mm_batch(struct q3_model *m, int layer, const char *const *names,
		      const struct mm_part *parts, size_t n);
/* ... with @idx[i] the row hook's row indices of part i (NULL: every
 * part's rows are the call's rows in order). */
void engy_q3_mm_batch_idx(struct q3_model *m, int layer,
			  const char *const *names, const struct mm_part *parts,
			  size_t n, const uint32_t *const *idx);

/* Scratch buffer @which of at least @floats floats, kept by the model
 * between calls (the caller holds m->mu); NULL when out of memory. */
float *engy_q3_scratch(struct q3_model *m, int which, size_t floats);

/*
 * engy_q3_moe() - the sparse MLP of @layer for @n normed rows @xn into @y
 * [n, H] (overwritten).  Returns 0 or -ENOMEM.
 */
int engy_q3_moe(struct q3_model *m, int layer, const float *xn, size_t n,
		float *y);

/*
 * engy_q3_mlp_run() - SwiGLU down(silu(gate(x)) * up(x)) for @n rows; @g and @u
 * are scratch [n, inter].  @name_prefix names the matmuls for the hook
 * ("" for the dense MLP, "experts.3." ...).
 */
void engy_q3_mlp_run(struct q3_model *m, int layer, const char *name_prefix,
		     const struct q3_mlp *mlp, const float *x, size_t n,
		     float *g, float *u, float *y);

/* g[i] = silu(g[i]) * u[i] for i < @n, rounded to bf16 where @m's
 * activations are; on @m's pool when @n is large. */
void engy_q3_swiglu(struct q3_model *m, float *g, const float *u, size_t n);

/* bf16 activations: round @n floats to bf16 (nearest, ties to even). */
void engy_q3_bf16_round(float *v, size_t n);

/* The enum mm_profile of @m's matmuls. */
static inline int engy_q3_mm_order(const struct q3_model *m)
{
	switch (m->profile) {
	case Q3_PROFILE_SPLITK:
	case Q3_PROFILE_SPLITK_F32:
		return MM_PROFILE_SPLITK;
	case Q3_PROFILE_WARP32:
		return MM_PROFILE_WARP32;
	case Q3_PROFILE_BF16DP:
		return MM_PROFILE_BF16DP;
	case Q3_PROFILE_AMX:
		return MM_PROFILE_AMX;
	default:
		return MM_PROFILE_REF;
	}
}

/* Whether @m keeps its activations in bf16 (all but ref and splitk-f32). */
static inline bool engy_q3_bf16act(const struct q3_model *m)
{
	return m->profile == Q3_PROFILE_SPLITK ||
	       m->profile == Q3_PROFILE_WARP32 ||
	       m->profile == Q3_PROFILE_BF16ACT ||
	       m->profile == Q3_PROFILE_FP8_BF16 ||
	       engy_mm_profile_bf16_instr(engy_q3_mm_order(m));
}

/* Whether @m's exp is engy_vec_pexp() (bf16dp and amx, as torch's CPU
 * kernels) rather than the C library's expf. */
static inline bool engy_q3_pexp(const struct q3_model *m)
{
	return engy_mm_profile_bf16_instr(engy_q3_mm_order(m));
}

/* CUDA (matmul_cuda.cu); stubs refuse when built without it. */
/* bf16: bf16 weights run as a bf16 GEMM (cublasGemmEx, bf16 inputs,
 * float32 accumulation on the tensor cores), as a bf16 GPU model does;
 * otherwise every matmul is a float32 SGEMM. */
int engy_q3_cuda_open(struct q3_cuda **out, bool bf16, char *name,
		      size_t namelen, char *err, size_t errlen);
void engy_q3_cuda_close(struct q3_cuda *c);
int engy_q3_cuda_matmul(struct q3_cuda *c, const float *x, size_t n,
			const void *w, int wt, size_t in, size_t out, float *y);

#endif /* Q3_QWEN3_INT_H */
