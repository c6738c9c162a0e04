/* SPDX-License-Identifier: MIT */
/*
 * The reference engine for Qwen3-family checkpoints (Qwen3 dense and
 * Qwen3-MoE; Hugging Face layout: config.json + safetensors).  It is a
 * library of its own (lib/qwen3) so that the backend-ref plugin, engyctl
 * ref, the bench and the tests drive the same code, and so that a GEMM
 * audit can hook every matmul.
 *
 * Numerics (specs/checkpoints.md): matrices stay bf16 when the checkpoint
 * is all BF16 (widened exactly inside the kernels), else are widened or
 * dequantized (F16, F32, FP8, INT4) to float32 at load; activations stay
 * float32 throughout; norms accumulate in double.  Every row's result is
 * independent of the other rows computed with it, so prefill, decode with
 * the KV cache and batched decode give bit-identical hidden states.
 *
 * Threading: a model is immutable after load except for its hook;
 * engy_q3_forward() calls on one model serialize on the model's compute pool.
 * A sequence (KV cache) belongs to one caller at a time.
 */
#ifndef Q3_QWEN3_H
#define Q3_QWEN3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define Q3_MAX_LAYERS 1024
#define Q3_MAX_EOS    4

enum q3_quant {
	Q3_QUANT_NONE = 0,
	Q3_QUANT_FP8,  /* F8_E4M3 + weight_scale_inv blocks */
	Q3_QUANT_INT4, /* engy_int4: qweight + scales */
};

struct q3_config {
	bool moe;
	uint32_t hidden, inter, n_layers, n_heads, n_kv, head_dim, vocab;
	uint32_t max_pos;
	double eps, rope_theta;
	bool tied;
	/* MoE (0 when dense) */
	uint32_t n_experts, top_k, moe_inter, sparse_step;
	uint32_t shared_inter; /* Qwen2-MoE style shared expert */
	bool norm_topk;
	bool sparse[Q3_MAX_LAYERS]; /* layer i uses the experts */
	uint32_t eos[Q3_MAX_EOS];
	uint32_t n_eos;
	int quant;	      /* enum q3_quant (from config.json) */
	uint32_t quant_block; /* FP8 block or INT4 group */
	char dtype[16];	      /* torch_dtype, informational */
};

enum q3_device {
	Q3_DEVICE_CPU = 0,
	Q3_DEVICE_CUDA,
};

/*
 * Kernel profiles (specs/checkpoints.md, "Kernel profiles"): the same
 * model computed in the summation order or activation precision of other
 * hardware, so an honest miner's numbers need not be the auditor's bits.
 * Q3_PROFILE_REF is the order the auditor recomputes with.
 */
enum q3_profile {
	Q3_PROFILE_REF = 0, /* 8-lane dot products, float32 activations */
	Q3_PROFILE_SPLITK,  /* split-K matmuls, bf16 activations: a GPU GEMM */
	Q3_PROFILE_WARP32,  /* warp-reduced matmuls, bf16 activations: a GEMV */
	Q3_PROFILE_BF16ACT, /* the ref matmuls, bf16 activations */
	Q3_PROFILE_SPLITK_F32, /* split-K matmuls, float32 activations */
	Q3_PROFILE_FP8_BF16,   /* bf16act, FP8 weights dequantized to bf16 */
	Q3_PROFILE_BF16DP,     /* a CPU's bf16 dot-product instruction (AVX512-
				* BF16, as oneDNN's bf16 GEMMs), bf16 activations */
	Q3_PROFILE_AMX,	       /* a CPU's bf16 tile instruction (AMX-BF16, as
				* oneDNN's bf16 GEMMs there), as bf16dp else */
	Q3_PROFILE_MAX
};

/* "ref", "splitk", "warp32", "bf16act", "splitk-f32", "fp8-bf16", "bf16dp",
 * "amx"; NULL out of range. */
const char *engy_q3_profile_name(int profile);
/* The profile called @name, or -1. */
int engy_q3_profile_parse(const char *name);

struct q3_load_opts {
	unsigned threads; /* 0: every online CPU */
	int device;	  /* enum q3_device */
	bool naive;	  /* textbook one-thread matmul (a bench baseline) */
	int profile;	  /* enum q3_profile; CPU only, not with naive */
};

/*
 * The matmul hook: called after each matmul with its layer (-1 for
 * lm_head), name ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
 * "up_proj", "down_proj", "router", "experts.E.gate_proj" ...,
 * "shared_expert.gate_proj" ..., "shared_expert_gate", "lm_head"), the
 * input rows [rows, in] and output rows [rows, out] (borrowed for the
 * call).  For experts, rows are the tokens routed to that expert.  It
 * runs on the thread that called engy_q3_forward()/engy_q3_logits().
 */
typedef void (*q3_hook_fn)(void *arg, int layer, const char *name,
			   const float *in, size_t rows, size_t in_dim,
			   const float *out, size_t out_dim);

/*
 * The row hook: q3_hook_fn plus which row of the call each hooked row is.
 * Row i of @in/@out is row @idx[i] of the rows array engy_q3_forward()
 * was called with (lm_head: of the hidden rows given to engy_q3_logits());
 * @idx is NULL when row i is row i (every product but the experts', whose
 * rows are those routed to them, in ascending row order).  The caller
 * knows each forward row's sequence and position (the sequence's length
 * plus the rows of it before that one), so a GEMM audit can key every row
 * by (request, position) even when sequences are batched.  Set alongside
 * the plain hook (both are called); numerics are unchanged.
 */
typedef void (*q3_row_hook_fn)(void *arg, int layer, const char *name,
			       const uint32_t *idx, const float *in,
			       size_t rows, size_t in_dim, const float *out,
			       size_t out_dim);

struct q3_model;
struct q3_seq;

/*
 * engy_q3_config_load() - read and check DIR/config.json (and the EOS ids of
 * generation_config.json when present).  Cheap: no weights are touched.
 * Returns 0 or a negative errno with a one-line reason in @err.
 */
int engy_q3_config_load(const char *dir, struct q3_config *c, char *err,
			size_t errlen);

/*
 * engy_q3_model_load() - config plus weights (model.safetensors, or the shards
 * model.safetensors.index.json names).  Every tensor's presence, dtype and
 * shape is checked; the reason for a refusal names the tensor.
 */
int engy_q3_model_load(const char *dir, const struct q3_load_opts *o,
		       struct q3_model **out, char *err, size_t errlen);
void engy_q3_model_free(struct q3_model *m);
const struct q3_config *engy_q3_model_config(const struct q3_model *m);
/* Bytes of weights held in memory. */
size_t engy_q3_model_bytes(const struct q3_model *m);
/* Bytes per matrix element held: 2 (bf16) or 4 (float32). */
unsigned engy_q3_model_matrix_bytes(const struct q3_model *m);
unsigned engy_q3_model_threads(const struct q3_model *m);
void engy_q3_model_set_hook(struct q3_model *m, q3_hook_fn fn, void *arg);
void engy_q3_model_set_row_hook(struct q3_model *m, q3_row_hook_fn fn,
				void *arg);

/* A sequence: its KV cache grows on demand up to @max_ctx positions. */
struct q3_seq *engy_q3_seq_new(const struct q3_model *m, uint32_t max_ctx);
void engy_q3_seq_free(struct q3_seq *s);
uint32_t engy_q3_seq_len(const struct q3_seq *s);
/* Forget positions from @len on (to recompute or branch). */
void engy_q3_seq_truncate(struct q3_seq *s, uint32_t len);

/* One token fed: it takes its sequence's next position. */
struct q3_row {
	struct q3_seq *seq;
	uint32_t id;
};

/*
 * engy_q3_forward() - feed @n rows (rows of one sequence in order; sequences
 * may be mixed) and write the final hidden states (after the final norm,
 * the input of lm_head) into @hidden [n, hidden].  -ERANGE for an id out
 * of the vocabulary, -E2BIG when a sequence would pass its max_ctx,
 * -ENOMEM; nothing is changed then.
 */
int engy_q3_forward(struct q3_model *m, const struct q3_row *rows, size_t n,
		    float *hidden);

/* engy_q3_logits() - lm_head of @n hidden rows into @logits [n, vocab]. */
int engy_q3_logits(struct q3_model *m, const float *hidden, size_t n,
		   float *logits);

/* Where matmuls run: "cpu avx2+fma x2", "cpu splitk x2", "cuda". */
const char *engy_q3_model_device(const struct q3_model *m);
/* The model's enum q3_profile. */
int engy_q3_model_profile(const struct q3_model *m);
/* How @m's profile's products are computed here (engy_mm_profile_kernel):
 * "avx512bf16" or "amx-bf16" (the instruction), "emulated" (the
 * definition in C), or "" for a profile of no instruction. */
const char *engy_q3_model_profile_kernel(const struct q3_model *m);

#endif /* Q3_QWEN3_H */
