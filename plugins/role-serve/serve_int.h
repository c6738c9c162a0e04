/* SPDX-License-Identifier: MIT */
/*
 * The serve role's state, shared by serve.c (wiring, the small routes,
 * abort) and serve_gen.c (one /generate from body to last byte).
 */
#ifndef ENGY_ROLE_SERVE_INT_H
#define ENGY_ROLE_SERVE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <engy/backend.h>
#include <engy/transport.h>

#include "sglang_json.h"

struct engy_host;
struct serve_conf;
struct event;
struct engy_metric;
struct engy_tokenizer;

enum { RQ_QUEUED = 1, RQ_RUNNING, RQ_DONE };

struct sreq {
	struct sreq *next, **pprev; /* every open request */
	struct sreq *qnext;	    /* the wait queue */
	struct serve *s;
	struct engy_http_exchange *x; /* NULL once the client left */
	struct engy_gen *g;	      /* the backend's, while running */
	struct engy_sgl_gen p;
	char rid[ENGY_SGL_MAX_RID + 1];
	int state;
	bool stream;
	bool aborting; /* cancel() sent */
	bool mark;     /* matched by /abort_request */
	bool done;     /* on_done came */
	bool client_gone;
	unsigned busy; /* inside a backend call */
	const char *abort_msg;
	int abort_status; /* finish_reason.status_code, 0: null */
	uint32_t max_new;
	struct engy_gen_result res;
	char res_error[128];
	uint32_t *ids;
	size_t n_ids, cap_ids;
	float *lp; /* one per id when logprobs came */
	bool lp_missing;
	char *ctext; /* text of the first ctext_ids ids */
	size_t ctext_len, ctext_ids;
	char **tok_text; /* each id's own text, when asked */
	size_t n_tok_text, cap_tok_text;
	/* top_logprobs_num alternatives per id (logprob NaN: none came),
	 * and their texts when asked (n_top_text of them made) */
	uint32_t *top_ids;
	float *top_lp;
	size_t n_top, cap_top_ids, cap_top_lp;
	char **top_text;
	size_t n_top_text, cap_top_text;
	float *rows; /* F32, n_rows x hidden */
	size_t n_rows, cap_rows;
	uint32_t hidden;
	bool prefill_empty; /* token 0 came without a row */
	size_t rows_sent;   /* rows a running event of the stream had */
	struct timespec t0;
	struct event *flush_ev; /* stream: sends the pending event */
	char *gemm; /* meta_info.gemm: the backend's gemm_commit(), or NULL */
};

/* One POST /engy/gemm_open waiting for the backend (serve_gemm.c). */
struct sopen {
	struct sopen *next;
	struct serve *s;
	struct engy_http_exchange *x; /* NULL once the client left */
};

struct serve {
	const struct engy_host *h;
	const struct serve_conf *c;
	const char *t_name, *b_name;
	const struct engy_transport_ops *t;
	void *ti;
	const struct engy_backend_ops *b;
	void *bi;
	struct engy_model_info info;
	bool have_info;
	struct engy_tokenizer *tok;
	struct sreq *open;
	struct sreq *qhead, **qtail;
	unsigned n_open, n_running, n_queued;
	unsigned max_running, max_queued;
	size_t stream_hidden_max;  /* floats in a running event */
	bool stream_hidden_repeat; /* sglang's: every row so far */
	bool stopping, pumping;
	struct engy_metric *m_running, *m_queued, *m_tokens;
	struct sopen *opens; /* gemm_open() calls the backend still owes */
	unsigned n_opens;
};

/* serve.c */
bool serve_model(struct serve *s); /* info (and tokenizer) known? */
void serve_count(struct serve *s, const char *result);
void serve_reply_error(struct serve *s, struct engy_http_exchange *x,
		       int status, const char *msg);

/* serve_gen.c */
int serve_generate(struct serve *s, struct engy_http_exchange *x,
		   const struct engy_http_request *r);
void serve_gone(struct serve *s, struct engy_http_exchange *x);
/* Abort @r (/abort_request): a queued one ends now, a running one is
 * cancelled at the backend and ends when it says so. */
void serve_abort(struct sreq *r, const char *msg);
void serve_req_free(struct sreq *r);

/* serve_gemm.c: the GEMM audit extension (specs/serve.md). */
/* Whether the backend has gemm_commit() and gemm_open() (ABI 1.4). */
bool serve_has_gemm(const struct serve *s);
int serve_gemm_open(struct serve *s, struct engy_http_exchange *x,
		    const struct engy_http_request *r);
void serve_gemm_gone(struct serve *s, struct engy_http_exchange *x);
/* destroy(): what the backend never answered, without callbacks. */
void serve_gemm_free_all(struct serve *s);

#endif /* ENGY_ROLE_SERVE_INT_H */
