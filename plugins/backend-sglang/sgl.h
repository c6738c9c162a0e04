/* SPDX-License-Identifier: MIT */
/* backend-sglang internals: the instance and one request in flight. */
#ifndef SGL_H
#define SGL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <engy/backend.h>
#include <engy/plugin.h>

#include "sgl_resp.h"
#include "sse.h"
#include "sgl_request.h"

struct event;
struct sgl_http;
struct sgl_call;

struct sgl_conf {
	struct engy_strv serve_urls;
	const char *checkpoint;
	const char *api_key;
	int64_t gen_chunk;
	bool stream;
	double stream_flush_s;
	double max_request_s;
	double serve_http_s;
	double connect_timeout_s;
	int64_t max_inflight;
	bool gemm_trace;
};

struct sgl_serve {
	char *url; /* without a trailing '/' */
	unsigned inflight;
};

struct sgl {
	const struct engy_host *host;
	struct event_base *base;
	struct sgl_http *http;
	struct sgl_serve *serves;
	size_t n_serves;
	char **serve_urls; /* as configured, for info() */
	size_t rr;	   /* tie-break between equally idle serves */
	char *checkpoint;
	char *api_key;
	uint32_t gen_chunk;
	bool stream;
	double flush_s, max_request_s, serve_http_s, connect_s;
	unsigned max_inflight, inflight;
	bool started, stopped;
	struct sgl_gen *gens; /* in flight */
	/* what info() answers; see sgl_info.c */
	struct engy_model_info info;
	bool info_ckpt, info_serve, warned_width;
	struct sgl_call *info_call;
	struct event *info_timer;
	int info_step;
	char *info_buf;
	size_t info_len;
	struct engy_metric *m_requests, *m_errors, *m_inflight, *m_calls;
	bool gemm_on;		/* option gemm_trace */
	struct sgl_open *opens; /* gemm_open() calls in flight */
};

/* One generate() or prefill() in flight. */
struct sgl_gen {
	struct sgl *s;
	char *json_schema; /* the constraint (malloc'd), or NULL */
	struct sgl_gen *next, **pprev;
	struct sgl_serve *serve;
	/* the request, copied */
	uint32_t *input;
	size_t n_input;
	uint32_t max_new;
	struct sgl_sampling sp;
	uint32_t *stop;
	bool hidden, logprobs, prefill;
	/* top_logprobs (0: none) and where they go (engy_gen_params 1.4) */
	uint32_t top_n;
	void (*on_top)(void *arg, size_t n, uint32_t k, const uint32_t *ids,
		       const float *logprobs);
	char rid[136];
	char call_rid[160];
	struct engy_gen_cb cb;
	void (*prefill_done)(void *arg, int rc, const struct engy_rows *rows);
	void *arg;
	double deadline; /* monotonic seconds */
	/* output kept so far */
	uint32_t *out;
	float *lp; /* one per kept token (NaN: none) */
	size_t n_out, cap_out;
	uint32_t *tid; /* top_n alternatives per kept token (NaN: none) */
	float *tlp;
	size_t delivered;	       /* tokens handed to on_tokens */
	bool fold;		       /* token 0 has no row (see sgl_gen.c) */
	float *rows;		       /* rows of tokens [row0, row_hi) */
	size_t row0, row_hi, rows_cap; /* tokens; capacity in floats */
	uint32_t hidden_size;
	/* the call in flight */
	unsigned chunk;
	struct sgl_chunk plan;
	size_t c_base;	 /* out index of its first kept token */
	uint32_t *c_ids; /* its output ids so far */
	float *c_lp;
	size_t c_nids, c_nlp, c_cap;
	size_t c_rows;	/* hidden elements taken (or skipped) */
	size_t c_taken; /* call tokens consumed */
	bool c_lp_seen;
	/* its output_top_logprobs so far: top_n per position */
	uint32_t *c_tid;
	float *c_tlp;
	size_t c_ntop, c_tcap;
	bool c_top_seen;
	struct sgl_call *call;
	struct sgl_call *abort_call; /* after cancel, until it answers */
	bool sse_mode, ev_json;
	struct engy_sse sse;
	struct engy_jf *jf;
	char pfx[8];
	size_t pfx_n;
	bool have_final;    /* an event with a finish_reason */
	bool c_hidden_seen; /* an event had hidden_states */
	int c_finish;
	int64_t c_matched;
	char c_msg[ENGY_SGLRESP_MSG_MAX];
	int64_t cached; /* chunk 0's cached_tokens */
	char *errbody;
	size_t errlen;
	/* the outcome */
	int err;
	char errmsg[320];
	bool cancelled, finishing;
	struct event *flush_ev, *done_ev;
	bool flush_armed;
	/* the GEMM audit member (specs/serve.md): asked for, and the one
	 * the serve's final event carried, checked (NULL: none) */
	bool gemm;
	char *gemm_member;
	int64_t gemm_np, gemm_nt; /* its n_prompt and n_tokens */
};

/* sgl_gen.c */
int sgl_generate(struct sgl *s, const struct engy_gen_params *p,
		 const struct engy_gen_cb *cb, void *arg, struct sgl_gen **out);
int sgl_prefill(struct sgl *s, const uint32_t *ids, size_t n,
		void (*done)(void *arg, int rc, const struct engy_rows *rows),
		void *arg, struct sgl_gen **out);
void sgl_cancel(struct sgl_gen *g);
/* Drop a request without calling back (destroy). */
void sgl_gen_drop(struct sgl_gen *g);

/* sgl_gen.c, for sgl_resp.c */
void sgl_gen_fail(struct sgl_gen *g, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void sgl_arm_flush(struct sgl_gen *g);

/* sgl_resp.c: one call's response */
void sgl_resp_begin(struct sgl_gen *g);
int sgl_resp_data(void *arg, const char *p, size_t n);
void sgl_resp_end(struct sgl_gen *g);
void sgl_resp_failed(struct sgl_gen *g, int code, long status);
int sgl_ingest(struct sgl_gen *g, bool final);

/* sgl_gemm.c: the GEMM audit extension of the serve (specs/serve.md) */
void sgl_gemm_take(struct sgl_gen *g, const struct engy_sglresp_gemm *m);
char *sgl_gemm_commit(void *inst, struct engy_gen *g);
int sgl_gemm_open(void *inst, const char *rid, const char *challenge,
		  size_t len,
		  void (*done)(void *arg, int rc, const char *json, size_t len),
		  void *arg);
void sgl_gemm_drop_all(struct sgl *s);

/* sgl_info.c */
int sgl_info_checkpoint(struct sgl *s, const char *dir);
int sgl_info_start(struct sgl *s);
void sgl_info_stop(struct sgl *s);
void sgl_info_learn_width(struct sgl *s, uint32_t width);

double sgl_now(void);

#endif /* SGL_H */
