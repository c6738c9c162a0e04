/* SPDX-License-Identifier: MIT */
/*
 * The sampled GEMM audit's pure core ("engy-ga1", specs/gemm-audit.md):
 * the trace commitment a miner's engine builds as its forward runs, the
 * challenge an auditor derives after the commitment is held, the opening
 * that answers it, and the product check against pinned weights.  Pure:
 * no files, no threads, no I/O; SHA-256 through lib/model's hasher
 * (struct engy_mh, 16-byte NUL-padded tags).
 *
 * Shape of a trace.  A request is the token sequence prompt ‖ output,
 * positions 0 .. n_tokens-1 (n_prompt of them the prompt).  Every audited
 * matrix multiply Y[t] = X[t] . W^T of every position is a *cell*
 * (layer, mm, expert) with two *roles* (X: the input row as the product
 * consumed it, Y: the output row as it wrote it).  Rows are float32
 * little-endian (the reference engine's activations), bytes exact.
 * Each (layer, mm, expert, role) has one token tree over the n_tokens
 * positions (padded with EMPTY to a power of two; a position with no row,
 * e.g. an expert the router did not pick for that token, is EMPTY too).
 * The last token is sampled, never fed: layers have rows at positions
 * 0 .. n_tokens-2, lm_head at n_prompt-1 .. n_tokens-2; a challenge
 * draws only positions that must have rows.
 * The sub-roots, sorted by their key, form the sub tree; the gemm root
 * binds it with the pinned weight root (spec_root), the ids and the
 * sampling; the trace root binds the gemm root with the TOPLOC member.
 *
 * Keys.  layer: 0 .. n_layers-1, ENGY_GA_LM_LAYER for lm_head.  mm: enum
 * engy_ga_mm.  expert: the expert index for ENGY_GA_MM_EXPERT_*, else
 * ENGY_GA_NO_EXPERT.  role: ENGY_GA_X or ENGY_GA_Y.  The key's canonical
 * order is (layer, mm, expert, role) ascending, lm_head last.
 */
#ifndef ENGY_GEMM_H
#define ENGY_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENGY_GA_HASHING	  "engy-ga1"
#define ENGY_GA_LM_LAYER  0xffffu /* lm_head's layer number */
#define ENGY_GA_NO_EXPERT 0xffffu
#define ENGY_GA_X	  0
#define ENGY_GA_Y	  1

/* The tags (NUL-padded to 16 bytes, as lib/model/merkle.h's). */
#define ENGY_GA_TAG_LEAF  "engy/ga1/leaf"
#define ENGY_GA_TAG_EMPTY "engy/ga1/empty"
#define ENGY_GA_TAG_NODE  "engy/ga1/node"
#define ENGY_GA_TAG_SUB	  "engy/ga1/sub"
#define ENGY_GA_TAG_GEMM  "engy/ga1/gemm"
#define ENGY_GA_TAG_TRACE "engy/ga1/trace"
#define ENGY_GA_TAG_CHAL  "engy/ga1/chal"
#define ENGY_GA_TAG_PRNG  "engy/ga1/prng"
#define ENGY_GA_TAG_IDS	  "engy/ga1/ids"

/* The audited matrix multiplies, by the reference engine's hook names
 * (lib/qwen3/qwen3.h): W is the checkpoint tensor named in the comment
 * (model.layers.L. prefix; lm_head: lm_head.weight, or the embedding
 * when tied). */
enum engy_ga_mm {
	ENGY_GA_MM_Q = 0,	      /* self_attn.q_proj */
	ENGY_GA_MM_K = 1,	      /* self_attn.k_proj */
	ENGY_GA_MM_V = 2,	      /* self_attn.v_proj */
	ENGY_GA_MM_O = 3,	      /* self_attn.o_proj */
	ENGY_GA_MM_GATE = 4,	      /* mlp.gate_proj (dense layers) */
	ENGY_GA_MM_UP = 5,	      /* mlp.up_proj */
	ENGY_GA_MM_DOWN = 6,	      /* mlp.down_proj */
	ENGY_GA_MM_ROUTER = 7,	      /* mlp.gate (MoE router) */
	ENGY_GA_MM_EXPERT_GATE = 8,   /* mlp.experts.E.gate_proj */
	ENGY_GA_MM_EXPERT_UP = 9,     /* mlp.experts.E.up_proj */
	ENGY_GA_MM_EXPERT_DOWN = 10,  /* mlp.experts.E.down_proj */
	ENGY_GA_MM_SHARED_GATE = 11,  /* mlp.shared_expert.gate_proj */
	ENGY_GA_MM_SHARED_UP = 12,    /* mlp.shared_expert.up_proj */
	ENGY_GA_MM_SHARED_DOWN = 13,  /* mlp.shared_expert.down_proj */
	ENGY_GA_MM_SHARED_EGATE = 14, /* mlp.shared_expert_gate */
	ENGY_GA_MM_LM_HEAD = 15,      /* lm_head */
	ENGY_GA_MM_MAX
};

/* The hook name ("q_proj", "experts.3.up_proj", "lm_head", ...) as mm and
 * expert; -EINVAL for a name that is not audited. */
int engy_ga_mm_parse(const char *hook_name, int *mm, uint32_t *expert);
/* The hook name of @mm ("q_proj", "experts.down_proj" for the expert
 * mms, ...); "?" out of range. */
const char *engy_ga_mm_name(int mm);
/* The checkpoint tensor name of (layer, mm, expert) into @out. */
int engy_ga_mm_tensor(uint32_t layer, int mm, uint32_t expert, bool tied,
		      char *out, size_t outlen);

struct engy_ga_key {
	uint16_t layer;
	uint8_t mm;
	uint16_t expert;
	uint8_t role;
};

/* -1, 0, 1 in the canonical order. */
int engy_ga_key_cmp(const struct engy_ga_key *a, const struct engy_ga_key *b);

/* ---- What the gemm root binds besides the rows ---- */

struct engy_ga_bind {
	uint8_t spec_root[32]; /* the pinned weight root (engy-mc1) */
	uint8_t ids_hash[32];  /* engy_ga_ids_hash() of prompt ‖ output */
	uint32_t n_prompt, n_tokens;
	uint8_t sampling[32]; /* engy_ga_sampling_hash() */
};

void engy_ga_ids_hash(const uint32_t *ids, size_t n, uint8_t out[32]);
/* SHA-256 over the canonical sampling config: temperature and top_p as
 * IEEE-754 double LE, top_k i32, seed u64 (0 when none), has_seed u8,
 * max_new_tokens u32 (specs/gemm-audit.md gives the bytes). */
void engy_ga_sampling_hash(double temperature, double top_p, int32_t top_k,
			   uint64_t seed, bool has_seed,
			   uint32_t max_new_tokens, uint8_t out[32]);

/* ---- The trace builder (miner side) ---- */

struct engy_ga_trace;

/*
 * engy_ga_trace_new() - a trace of at most @max_tokens positions (the
 * output's length is not known while the forward runs: the binding comes
 * at engy_ga_trace_gemm_root()).  Leaves are hashed as rows arrive
 * (engy_ga_trace_add()); only their 32-byte hashes are kept (rows are
 * re-derived for an opening: see engy_ga_open_new()).  Not thread-safe:
 * one caller at a time.  NULL on ENOMEM.
 */
struct engy_ga_trace *engy_ga_trace_new(uint32_t max_tokens);
void engy_ga_trace_free(struct engy_ga_trace *t);
/* Bytes the trace holds (for the owner's memory cap). */
size_t engy_ga_trace_bytes(const struct engy_ga_trace *t);

/*
 * engy_ga_trace_add() - the row of @key at position @pos (< max_tokens):
 * @n float32 values (1 .. ENGY_GA_MAX_ROW).  A second row for the same
 * key and position is -EEXIST; a position out of range -ERANGE; a key
 * that is not well formed (expert only with the EXPERT_* mms, layer
 * ENGY_GA_LM_LAYER only with LM_HEAD) -EINVAL; after the root -EBUSY;
 * -ENOMEM.
 */
int engy_ga_trace_add(struct engy_ga_trace *t, const struct engy_ga_key *key,
		      uint32_t pos, const float *row, size_t n);

/* The leaf hash of one row (what engy_ga_trace_add() stores).  It binds
 * the key, the position and the bytes; the request is bound by the gemm
 * root (ids hash), which is why the leaf can be hashed before the output
 * is known. */
void engy_ga_leaf(const struct engy_ga_key *key, uint32_t pos, const float *row,
		  size_t n, uint8_t out[32]);

/*
 * engy_ga_trace_gemm_root() - the gemm root (after the last add), binding
 * @b (kept for the opening).  -ERANGE when a row lies at a position >=
 * b->n_tokens, -EINVAL for n_prompt > n_tokens or n_tokens 0, -ENOMEM.
 * Once called, the trace takes no more rows; a second call with the same
 * binding gives the same root.
 */
int engy_ga_trace_gemm_root(struct engy_ga_trace *t,
			    const struct engy_ga_bind *b, uint8_t out[32]);

/* trace root = H(TRACE ‖ gemm_root ‖ toploc_hash); toploc_hash is
 * engy_ga_toploc_hash() of the commitment's TOPLOC member. */
void engy_ga_trace_root(const uint8_t gemm_root[32],
			const uint8_t toploc_hash[32], uint8_t out[32]);
/* SHA-256 over the proofs' base64 strings, each u32 length-prefixed, in
 * order; 32 zero bytes for a null member. */
void engy_ga_toploc_hash(const char *const *proofs, size_t n, uint8_t out[32]);

/* ---- The challenge (auditor side; the miner never needs it) ---- */

struct engy_ga_params {
	uint32_t layers;      /* distinct layers challenged (lm_head counts) */
	uint32_t tokens;      /* distinct positions per challenged layer */
	uint32_t projections; /* Freivalds projections per opened product */
	uint32_t spots;	      /* elementwise recomputes per opened product */
	double z;	      /* tolerance multiplier */
	double c_el;	      /* elementwise tolerance constant */
};

/* seed = H(CHAL ‖ spec_root ‖ trace_root ‖ u16 len(rid) ‖ rid ‖ nonce). */
void engy_ga_seed(const uint8_t spec_root[32], const uint8_t trace_root[32],
		  const char *rid, const uint8_t nonce[32], uint8_t out[32]);

/* The PRNG: block j = H(PRNG ‖ seed ‖ u64 j), read as 4 u64 LE. */
struct engy_ga_prng {
	uint8_t seed[32];
	uint64_t block;
	uint64_t buf[4];
	unsigned used;
};
void engy_ga_prng_init(struct engy_ga_prng *p, const uint8_t seed[32]);
uint64_t engy_ga_prng_u64(struct engy_ga_prng *p);
/* Uniform in [0, n) by rejection (n > 0). */
uint64_t engy_ga_prng_below(struct engy_ga_prng *p, uint64_t n);

/* One challenged (layer, position): the miner opens every audited row of
 * that layer at that position (for MoE: the router's and those of the
 * experts it routed the token to). */
struct engy_ga_cell {
	uint16_t layer;
	uint32_t pos;
};

/*
 * engy_ga_challenge() - expand @seed into at most layers x tokens cells
 * over a model of @n_layers layers (+ lm_head) and a request of @n_prompt
 * prompt and @n_tokens positions in all: distinct layers, then distinct
 * positions per layer (layers: 0 .. n_tokens-2; lm_head: n_prompt-1 ..
 * n_tokens-2), in the order the PRNG gives them (the spec states the
 * algorithm).  *@n gets the count (0 when nothing can be challenged);
 * -ENOSPC when @cap is short (layers x tokens always suffices), -EINVAL.
 */
int engy_ga_challenge(const uint8_t seed[32], uint32_t n_layers,
		      uint32_t n_prompt, uint32_t n_tokens,
		      const struct engy_ga_params *p, struct engy_ga_cell *out,
		      size_t cap, size_t *n);
/* The challenge as JSON text (malloc'd): {"nonce":"hex","cells":[[l,t],..]}
 * and its parse (untrusted; bounded). */
char *engy_ga_challenge_json(const uint8_t nonce[32],
			     const struct engy_ga_cell *c, size_t n);
int engy_ga_challenge_parse(const char *buf, size_t len, uint8_t nonce[32],
			    struct engy_ga_cell **cells, size_t *n, char *err,
			    size_t errlen);

/* ---- The opening (miner side builds, auditor side checks) ---- */

/*
 * The row source for building an opening: the owner re-derives rows
 * (the reference engine replays the request: specs/gemm-audit.md proves
 * the replay bit-identical) and hands each (key, pos) row to the builder.
 */
struct engy_ga_open;
/* After engy_ga_trace_gemm_root() (else NULL, EINVAL); the trace must
 * outlive the builder.  NULL with errno set. */
struct engy_ga_open *engy_ga_open_new(struct engy_ga_trace *t,
				      const struct engy_ga_cell *cells,
				      size_t n);
/* Offer a row: kept when its (layer, pos) is challenged (0), else ignored
 * (0).  Its leaf must equal the trace's (else -EBADMSG: the replay
 * diverged; -ENOENT: the trace has no row there); -EEXIST twice. */
int engy_ga_open_add(struct engy_ga_open *o, const struct engy_ga_key *key,
		     uint32_t pos, const float *row, size_t n);
/* The opening JSON (malloc'd; specs/gemm-audit.md gives its shape).  NULL
 * with errno ENOENT when a row the trace holds at a challenged (layer,
 * pos) was not offered, ENOMEM. */
char *engy_ga_open_json(struct engy_ga_open *o);
void engy_ga_open_free(struct engy_ga_open *o);

/* Parser bounds: a row's values, rows and sub-trees per opening. */
#define ENGY_GA_MAX_ROW	  (1u << 20)
#define ENGY_GA_MAX_ROWS  65536u
#define ENGY_GA_MAX_CELLS 4096u

struct engy_ga_opening; /* parsed, untrusted */
int engy_ga_opening_parse(const char *buf, size_t len,
			  struct engy_ga_opening **out, char *err,
			  size_t errlen);
void engy_ga_opening_free(struct engy_ga_opening *o);
/* A parsed opening written out again in the canonical form (malloc'd):
 * parse(json(parse(x))) equals parse(x). */
char *engy_ga_opening_json(const struct engy_ga_opening *o);

/* ---- The check (auditor side) ---- */

/*
 * One weight matrix W [out, in] as the verifier holds it: exactly the
 * dequantized values, as float32 when every one is a float32 (@wf: half
 * the memory traffic), else float64 (@w); one of the two is set.
 * @colsq[k] = sum_j W[j][k]^2 and @rerr[k] = sum_j (bf16(W[j][k]) -
 * W[j][k])^2 (what rounding the weights to bf16 moves) do not depend on
 * the challenge: an owner caches them with W (NULL: the check computes
 * them).
 */
struct engy_ga_matrix {
	const double *w;
	const float *wf;
	size_t out, in;
	const double *colsq, *rerr;
};

/* Where the verifier gets W, from its own checkpoint checked against the
 * pinned root. */
struct engy_ga_weights {
	void *arg;
	/* 0 with *@m borrowed until the check returns; -ENOENT none. */
	int (*get)(void *arg, uint32_t layer, int mm, uint32_t expert,
		   struct engy_ga_matrix *m);
	bool tied;
	uint32_t n_layers, top_k; /* top_k: experts per token (0 dense) */
};

/* engy_ga_cols() - colsq and rerr of @m (in doubles each), as
 * engy_ga_check() computes them when the owner has none. */
void engy_ga_cols(const struct engy_ga_matrix *m, double *colsq, double *rerr);

/* The tolerance's units (specs/gemm-audit.md §5). */
#define ENGY_GA_U_F32  (1.0 / 16777216.0) /* 2^-24: f32 rounding */
#define ENGY_GA_U_BF16 (1.0 / 256.0)	  /* 2^-8: bf16 rounding */
#define ENGY_GA_U_ACC  (1.0 / 16777216.0) /* 2^-24: f32 accumulation */

enum engy_ga_outcome {
	ENGY_GA_PASS = 0,
	ENGY_GA_CHEAT = 1,    /* provably the miner's: evidence in reason */
	ENGY_GA_UNPROVEN = 2, /* cannot be judged (not the miner's fault) */
};

struct engy_ga_verdict {
	int outcome; /* enum engy_ga_outcome */
	/* ok; cheat: path, spec_root, ids, sampling, cells, extra_row,
	 * duplicate, missing_row, shape, nonfinite, input, routing,
	 * product, spot; unproven: no_cells, params, weights
	 * (specs/gemm-audit.md §5). */
	char reason[64];
	char where[96]; /* e.g. "layer 3 down_proj pos 17" */
	double rho_max; /* the largest D/tol seen (honest << 1) */
	uint32_t products;
};

/*
 * engy_ga_check() - the whole audit of one opening: every path against
 * the trace root the commitment declared (@trace_root), the gemm root's
 * binding (@bind: the auditor's own spec_root, ids hash, counts and
 * sampling hash from the commitment it holds), the cells being exactly
 * those @seed gives, MoE routing consistent with the opened router row,
 * and each opened product by Freivalds (@p->projections ±1 projections
 * from the seed's PRNG, fp64 with compensated sums) and @p->spots
 * elementwise recomputes.  Returns 0 with *@v filled, -ENOMEM.
 */
int engy_ga_check(const struct engy_ga_opening *o, const uint8_t seed[32],
		  const uint8_t trace_root[32], const uint8_t toploc_hash[32],
		  const struct engy_ga_bind *bind,
		  const struct engy_ga_params *p,
		  const struct engy_ga_weights *w, struct engy_ga_verdict *v);

#endif /* ENGY_GEMM_H */
