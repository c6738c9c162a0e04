/* SPDX-License-Identifier: MIT */
/*
 * backend-ref as the host sees it: dlopen() the built module, fill its
 * conf from the option table, and drive it through backend.h's ops with
 * a fake host whose work() queues jobs (run on a thread, done on the
 * "loop", here the test) or, in one test, runs them inline.  Results are
 * checked against lib/qwen3 driven directly.
 *
 * Oracle: engy itself: the plugin's results against lib/qwen3 driven
 * directly (self-consistency). lib/qwen3's numbers are held against an
 * independent numpy forward pass in backend_ref_reference.sh.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <engy/backend.h>
#include <engy/plugin.h>

#include "config.h"
#include "fake_host.h"
#include "gemm.h"
#include "modelspec.h"
#include "qwen3.h"
#include "ref_testlib.h"

#define MAXTOK 64
#define H      64

static void *dl;
static const struct engy_plugin *plug;
static const struct engy_backend_ops *ops;

static void load(void)
{
	dl = dlopen(BACKEND_REF_SO, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dl != NULL, "dlopen: %s", dlerror());
	plug = dlsym(dl, ENGY_PLUGIN_SYMBOL);
	ck_assert_ptr_nonnull(plug);
	ops = plug->ops;
}

static const struct engy_opt *opt(const char *name)
{
	const struct engy_opt *o;

	for (o = plug->opts; o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	ck_abort_msg("no option %s", name);
	return NULL;
}

/* The host's job: defaults into the conf, then the test's values. */
static void *conf_new(const char *dir)
{
	uint8_t *c = calloc(1, plug->conf_size);
	const struct engy_opt *o;

	for (o = plug->opts; o->name; o++) {
		int64_t i = o->def ? strtoll(o->def, NULL, 10) : 0;

		if (o->type == ENGY_OPT_STR)
			memcpy(c + o->offset, &o->def, sizeof(o->def));
		else if (o->type == ENGY_OPT_INT)
			memcpy(c + o->offset, &i, sizeof(i));
		else if (o->type == ENGY_OPT_BOOL)
			*(bool *)(c + o->offset) =
				o->def && !strcmp(o->def, "true");
		else
			ck_abort_msg("unexpected option type for %s", o->name);
	}
	memcpy(c + opt("checkpoint")->offset, &dir, sizeof(dir));
	return c;
}

static void set_int(void *c, const char *name, int64_t v)
{
	memcpy((uint8_t *)c + opt(name)->offset, &v, sizeof(v));
}

static void set_str(void *c, const char *name, const char *v)
{
	memcpy((uint8_t *)c + opt(name)->offset, &v, sizeof(v));
}

/* ---- A host whose work() queues: the test is the loop. ---- */

struct job {
	void (*fn)(void *);
	void (*done)(void *, int);
	void *arg;
	struct job *next;
};

static struct job *jq;

static int q_work(const struct engy_host *h, void (*fn)(void *),
		  void (*done)(void *, int), void *arg)
{
	struct job *j = calloc(1, sizeof(*j)), **p;

	j->fn = fn;
	j->done = done;
	j->arg = arg;
	for (p = &jq; *p; p = &(*p)->next)
		;
	*p = j;
	return 0;
}

static void *thr(void *a)
{
	struct job *j = a;

	j->fn(j->arg);
	return NULL;
}

/* Run queued jobs (fn on a worker thread, done here) until @stop or idle. */
static void run_loop(const int *stop)
{
	pthread_t t;
	struct job *j;

	while (jq && !(stop && *stop)) {
		j = jq;
		jq = j->next;
		ck_assert_int_eq(pthread_create(&t, NULL, thr, j), 0);
		pthread_join(t, NULL);
		j->done(j->arg, 0);
		free(j);
	}
}

struct inst {
	struct engy_host *h;
	void *conf, *p;
};

static struct inst start_q(const char *dir, int64_t batch, int64_t ctx,
			   int64_t queue, bool queued)
{
	struct inst in = { fake_host_new("ref0"), conf_new(dir), NULL };

	if (queued)
		in.h->work = q_work;
	set_int(in.conf, "max_batch", batch);
	set_int(in.conf, "max_queue", queue);
	set_int(in.conf, "max_context", ctx);
	set_int(in.conf, "prefill_chunk", 8);
	set_int(in.conf, "threads", 2);
	ck_assert_int_eq(plug->create(in.h, in.conf, &in.p), 0);
	ck_assert_int_eq(plug->start(in.p), 0);
	run_loop(NULL);
	ck_assert_ptr_nonnull(
		strstr(fake_host_log(in.h), "event=model_loaded"));
	return in;
}

static struct inst start(const char *dir, int64_t batch, int64_t ctx,
			 bool queued)
{
	return start_q(dir, batch, ctx, 64, queued);
}

static void finish(struct inst *in)
{
	ck_assert_ptr_null(jq);
	plug->destroy(in->p);
	fake_host_free(in->h);
	free(in->conf);
}

/* ---- Collecting one request ---- */

struct col {
	uint32_t ids[MAXTOK];
	float rows[MAXTOK][H], lp[MAXTOK];
	size_t n;
	int done;
	struct engy_gen_result res;
	struct engy_gen *g;
	void *inst;
	size_t cancel_after;
	bool rows_seen, lp_seen;
	/* top_logprobs: each token's alternatives, given just before it */
	uint32_t top_ids[MAXTOK][ENGY_TOP_LOGPROBS_MAX];
	float top_lp[MAXTOK][ENGY_TOP_LOGPROBS_MAX];
	uint32_t top_k[MAXTOK];
	size_t n_top;
	char *gemm; /* gemm_commit() in on_done */
};

static void on_top(void *arg, size_t n, uint32_t k, const uint32_t *ids,
		   const float *lps)
{
	struct col *c = arg;
	size_t i;

	/* exactly the ids of the on_tokens that follows */
	ck_assert_uint_eq(c->n_top, c->n);
	ck_assert_uint_le(k, ENGY_TOP_LOGPROBS_MAX);
	for (i = 0; i < n; i++) {
		ck_assert_uint_lt(c->n_top, MAXTOK);
		c->top_k[c->n_top] = k;
		memcpy(c->top_ids[c->n_top], ids + i * k, k * sizeof(*ids));
		memcpy(c->top_lp[c->n_top], lps + i * k, k * sizeof(*lps));
		c->n_top++;
	}
}

static void on_tokens(void *arg, const uint32_t *ids, size_t n,
		      const struct engy_rows *rows, const float *lp)
{
	struct col *c = arg;
	size_t k;

	ck_assert_int_eq(c->done, 0);
	ck_assert_uint_ge(n, 1);
	if (rows) {
		ck_assert_uint_eq(rows->dtype, ENGY_DTYPE_F32);
		ck_assert_uint_eq(rows->n_rows, n);
		ck_assert_uint_eq(rows->hidden, H);
		ck_assert_uint_eq(rows->n_prefill, 0);
	}
	for (k = 0; k < n; k++) {
		ck_assert_uint_lt(c->n, MAXTOK);
		c->ids[c->n] = ids[k];
		if (rows)
			memcpy(c->rows[c->n], (const float *)rows->data + k * H,
			       H * 4);
		if (lp)
			c->lp[c->n] = lp[k];
		c->n++;
	}
	c->rows_seen |= rows != NULL;
	c->lp_seen |= lp != NULL;
	if (c->cancel_after && c->n == c->cancel_after)
		ops->cancel(c->inst, c->g);
}

static void on_done(void *arg, const struct engy_gen_result *res)
{
	struct col *c = arg;

	c->done++;
	c->res = *res;
	c->res.error = NULL;
	/* the GEMM member is asked for here, the handle still alive */
	c->gemm = ops->gemm_commit(c->inst, c->g);
}

static const struct engy_gen_cb cb = { on_tokens, on_done };

static struct engy_gen_params params(const uint32_t *ids, size_t n,
				     uint32_t max_new)
{
	struct engy_gen_params p = { .size = sizeof(p),
				     .input_ids = ids,
				     .n_input = n,
				     .max_new_tokens = max_new,
				     .top_p = 1,
				     .return_hidden = true,
				     .return_logprobs = true };

	return p;
}

static void gen(struct inst *in, const struct engy_gen_params *p, struct col *c)
{
	memset(c, 0, sizeof(*c));
	c->inst = in->p;
	ck_assert_int_eq(ops->generate(in->p, p, &cb, c, &c->g), 0);
	run_loop(&c->done);
	ck_assert_int_eq(c->done, 1);
}

static const uint32_t prompt[] = {
	12, 250, 7,   99, 480, 3,  77, 301, 5,	 42,
	9,  1,	 260, 33, 400, 18, 2,  64,  128, 256
};
#define NPROMPT (sizeof(prompt) / sizeof(prompt[0]))

START_TEST(test_descriptor)
{
	const struct engy_opt *o;

	load();
	ck_assert_uint_eq(plug->magic, ENGY_PLUGIN_MAGIC);
	ck_assert_uint_eq(plug->kind, ENGY_KIND_BACKEND);
	ck_assert_str_eq(plug->name, "backend-ref");
	ck_assert(plug->create && plug->start && plug->stop && plug->destroy);
	ck_assert_uint_ge(ops->size, sizeof(struct engy_backend_ops));
	ck_assert(ops->info && ops->generate && ops->cancel && ops->prefill);
	o = opt("checkpoint");
	ck_assert(o->type == ENGY_OPT_STR && (o->flags & ENGY_OPT_REQUIRED));
	ck_assert_str_eq(opt("device")->def, "cpu");
	ck_assert_str_eq(opt("threads")->def, "0");
	ck_assert_str_eq(opt("max_batch")->def, "4");
	ck_assert_str_eq(opt("max_queue")->def, "64");
	ck_assert_str_eq(opt("max_context")->def, "0");
	ck_assert_str_eq(opt("prefill_chunk")->def, "128");
	ck_assert_str_eq(opt("kernel_profile")->def, "ref");
	for (o = plug->opts; o->name; o++)
		ck_assert(o->help && *o->help);
}
END_TEST

START_TEST(test_create_refusals)
{
	struct engy_host *h = fake_host_new("ref0");
	char *dir = tiny_model(false, 1, 0);
	void *c, *p = NULL;
	struct col col;

	load();
	c = conf_new(NULL);
	ck_assert_int_eq(plug->create(h, c, &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(fake_host_log(h), "option=checkpoint"));
	set_str(c, "checkpoint", "/nonexistent/ckpt");
	ck_assert_int_lt(plug->create(h, c, &p), 0);
	ck_assert_ptr_nonnull(
		strstr(fake_host_log(h), "/nonexistent/ckpt/config.json"));
	set_str(c, "checkpoint", dir);
	set_str(c, "device", "tpu");
	ck_assert_int_eq(plug->create(h, c, &p), -EINVAL);
	set_str(c, "device", "cuda");
#ifdef HAVE_CUDA
	/* Builds with CUDA accept it; with no device the load says so. */
	ck_assert_int_eq(plug->create(h, c, &p), 0);
	ck_assert_int_eq(plug->start(p), 0);
	if (strstr(fake_host_log(h), "event=model_load_failed")) {
		ck_assert_ptr_nonnull(strstr(fake_host_log(h), "CUDA device"));
		memset(&col, 0, sizeof(col));
		{
			struct engy_gen_params q = params(prompt, 4, 2);

			ck_assert_int_eq(
				ops->generate(p, &q, &cb, &col, &col.g), -EIO);
		}
	} else {
		struct engy_gen_params q = params(prompt, NPROMPT, 6);
		struct inst cpu = start(dir, 1, 0, true);
		struct col ref;

		gen(&cpu, &q, &ref);
		memset(&col, 0, sizeof(col));
		ck_assert_int_eq(ops->generate(p, &q, &cb, &col, &col.g), 0);
		ck_assert_int_eq(col.done, 1); /* the sync host ran it */
		ck_assert(memcmp(col.ids, ref.ids, sizeof(col.ids)) == 0);
		ck_assert(fabsf(col.rows[5][0] - ref.rows[5][0]) < 1e-3f);
		finish(&cpu);
	}
	plug->destroy(p);
#else
	ck_assert_int_eq(plug->create(h, c, &p), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(fake_host_log(h), "no CUDA path"));
	(void)col;
#endif
	free(c);
	fake_host_free(h);
	rm_model(dir);
}
END_TEST

START_TEST(test_info)
{
	char *dir = tiny_model(false, 1, 0);
	struct engy_model_info mi = { .size = sizeof(mi) };
	struct inst in;

	load();
	in = start(dir, 2, 0, true);
	ck_assert_int_eq(ops->info(in.p, &mi), 0);
	ck_assert_uint_eq(mi.size, sizeof(mi));
	ck_assert_str_eq(mi.path, dir);
	ck_assert_str_eq(mi.name, strrchr(dir, '/') + 1);
	ck_assert_uint_eq(mi.hidden_size, H);
	ck_assert_uint_eq(mi.vocab_size, 512);
	ck_assert_uint_eq(mi.max_context, 4096); /* max_position_embeddings */
	ck_assert_uint_eq(mi.eos_ids[0], 488);	 /* <|im_end|> */
	ck_assert_uint_eq(mi.eos_ids[1], 486);	 /* <|endoftext|> */
	ck_assert_uint_eq(mi.eos_ids[2], 0);
	ck_assert_uint_eq(mi.caps, ENGY_BACKEND_CAP_TOP_LOGPROBS);
	/* a caller built before 1.4: nothing past its size is written */
	memset(&mi, 0xa5, sizeof(mi));
	mi.size = offsetof(struct engy_model_info, caps);
	ck_assert_int_eq(ops->info(in.p, &mi), 0);
	ck_assert_uint_eq(mi.size, offsetof(struct engy_model_info, caps));
	ck_assert_uint_eq(mi.caps, 0xa5a5a5a5u);
	ck_assert_uint_eq(mi.vocab_size, 512);
	finish(&in);
	rm_model(dir);
}
END_TEST

struct pre {
	int rc, calls;
	float *rows;
	uint32_t n, n_prefill;
};

static void on_prefill(void *arg, int rc, const struct engy_rows *rows)
{
	struct pre *p = arg;

	p->calls++;
	p->rc = rc;
	if (rc)
		return;
	ck_assert_uint_eq(rows->dtype, ENGY_DTYPE_F32);
	ck_assert_uint_eq(rows->hidden, H);
	p->n = rows->n_rows;
	p->n_prefill = rows->n_prefill;
	p->rows = malloc((size_t)rows->n_rows * H * 4);
	memcpy(p->rows, rows->data, (size_t)rows->n_rows * H * 4);
}

/*
 * The plugin's top-N alternatives against an independent log-softmax of
 * the same logits, in double: the N largest logits (ties: lower id), each
 * log p = logit - log(sum(exp(logit))) computed here from scratch.
 */
static void check_top(const float *lg, uint32_t vocab, const uint32_t *ids,
		      const float *lps, uint32_t k, uint32_t want)
{
	double mx = -INFINITY, sum = 0, lp;
	bool used[512] = { false };
	uint32_t i, j, b;

	ck_assert_uint_le(vocab, 512);
	ck_assert_uint_eq(k, want);
	for (i = 0; i < vocab; i++)
		mx = lg[i] > mx ? lg[i] : mx;
	for (i = 0; i < vocab; i++)
		sum += exp((double)lg[i] - mx);
	for (j = 0; j < k; j++) {
		for (b = vocab, i = 0; i < vocab; i++)
			if (!used[i] && (b == vocab || lg[i] > lg[b]))
				b = i;
		used[b] = true;
		lp = (double)lg[b] - mx - log(sum);
		ck_assert_uint_eq(ids[j], b);
		ck_assert(lps[j] <= 0);
		ck_assert(fabs((double)lps[j] - lp) < 1e-6);
		if (j)
			ck_assert(lps[j] <= lps[j - 1]);
	}
}

/* Greedy through the plugin == greedy through lib/qwen3, and the auditor's
 * prefill of prompt + output reproduces the streamed rows bit for bit. */
static void stream_and_audit(bool moe)
{
	char *dir = tiny_model(moe, 2, 0);
	struct engy_gen_params p = params(prompt, NPROMPT, 16);
	uint32_t all[NPROMPT + 16];
	struct q3_model *m;
	struct q3_seq *s;
	struct q3_row rows[NPROMPT];
	float h[NPROMPT * H], *lg;
	struct pre pre = { 0 };
	struct inst in;
	struct col c;
	size_t i, k;

	p.top_logprobs = 5;
	p.on_top_logprobs = on_top;
	load();
	in = start(dir, 2, 0, true);
	gen(&in, &p, &c);
	ck_assert_uint_eq(c.n_top, 16);
	ck_assert_int_eq(c.res.status, 0);
	ck_assert_int_eq(c.res.finish, ENGY_FINISH_LENGTH);
	ck_assert_int_eq(c.res.matched_stop, -1);
	ck_assert_uint_eq(c.res.prompt_tokens, NPROMPT);
	ck_assert_uint_eq(c.res.completion_tokens, 16);
	ck_assert_uint_eq(c.n, 16);
	ck_assert(c.rows_seen && c.lp_seen);
	for (i = 0; i < 16; i++)
		ck_assert(c.lp[i] <= 0 && isfinite(c.lp[i]));
	/* The engine directly: argmax after each row. */
	ck_assert_int_eq(engy_q3_model_load(dir, NULL, &m, NULL, 0), 0);
	s = engy_q3_seq_new(m, 64);
	lg = malloc(512 * 4);
	for (i = 0; i < NPROMPT; i++)
		rows[i] = (struct q3_row){ s, prompt[i] };
	ck_assert_int_eq(engy_q3_forward(m, rows, NPROMPT, h), 0);
	memmove(h, h + (NPROMPT - 1) * H, H * 4);
	for (i = 0; i < 16; i++) {
		uint32_t best = 0;

		engy_q3_logits(m, h, 1, lg);
		for (k = 1; k < 512; k++)
			best = lg[k] > lg[best] ? (uint32_t)k : best;
		ck_assert_uint_eq(c.ids[i], best);
		check_top(lg, 512, c.top_ids[i], c.top_lp[i], c.top_k[i], 5);
		/* greedy: the sampled token is the first alternative, with
		 * the same logprob */
		ck_assert_uint_eq(c.top_ids[i][0], best);
		ck_assert_float_eq(c.top_lp[i][0], c.lp[i]);
		ck_assert(memcmp(c.rows[i], h, H * 4) == 0);
		rows[0] = (struct q3_row){ s, best };
		ck_assert_int_eq(engy_q3_forward(m, rows, 1, h), 0);
	}
	/* The auditor: prefill(prompt + output minus the last token). */
	memcpy(all, prompt, sizeof(prompt));
	memcpy(all + NPROMPT, c.ids, 16 * 4);
	ck_assert_int_eq(
		ops->prefill(in.p, all, NPROMPT + 15, on_prefill, &pre, NULL),
		0);
	run_loop(&pre.calls);
	ck_assert_int_eq(pre.calls, 1);
	ck_assert_int_eq(pre.rc, 0);
	ck_assert_uint_eq(pre.n, NPROMPT + 15);
	ck_assert_uint_eq(pre.n_prefill, NPROMPT + 15);
	for (i = 0; i < 16; i++)
		ck_assert(memcmp(pre.rows + (NPROMPT - 1 + i) * H, c.rows[i],
				 H * 4) == 0);
	free(pre.rows);
	free(lg);
	engy_q3_seq_free(s);
	engy_q3_model_free(m);
	finish(&in);
	rm_model(dir);
}

START_TEST(test_stream_dense)
{
	stream_and_audit(false);
}
END_TEST

START_TEST(test_stream_moe)
{
	stream_and_audit(true);
}
END_TEST

START_TEST(test_sampling_seeded)
{
	char *dir = tiny_model(false, 1, 0);
	struct engy_gen_params p = params(prompt, 6, 24);
	struct col a, b, d;
	struct inst in;

	load();
	in = start(dir, 2, 0, true);
	p.temperature = 0.9;
	p.top_p = 0.95;
	p.top_k = 50;
	p.has_seed = true;
	p.seed = 7;
	gen(&in, &p, &a);
	gen(&in, &p, &b);
	ck_assert_uint_eq(a.n, b.n);
	ck_assert(memcmp(a.ids, b.ids, a.n * 4) == 0);
	p.seed = 8;
	gen(&in, &p, &d);
	ck_assert(a.n != d.n || memcmp(a.ids, d.ids, a.n * 4) != 0);
	finish(&in);
	rm_model(dir);
}
END_TEST

START_TEST(test_cancel)
{
	char *dir = tiny_model(false, 1, 0);
	struct engy_gen_params p = params(prompt, NPROMPT, 40), p2;
	struct engy_gen *busy;
	struct col a, b, z;
	struct inst in;

	load();
	/* Mid-generation, from inside on_tokens. */
	in = start(dir, 1, 0, true);
	memset(&a, 0, sizeof(a));
	a.inst = in.p;
	a.cancel_after = 3;
	ck_assert_int_eq(ops->generate(in.p, &p, &cb, &a, &a.g), 0);
	run_loop(&a.done);
	ck_assert_int_eq(a.done, 1);
	ck_assert_int_eq(a.res.finish, ENGY_FINISH_ABORT);
	ck_assert_uint_eq(a.n, 3);
	ck_assert_uint_eq(a.res.completion_tokens, 3);
	run_loop(NULL);
	ck_assert_int_eq(a.done, 1); /* once */
	/* Queued behind max_batch 1 (max_queue 1): cancelled before it ran;
	 * a third request is refused while both slots are taken. */
	finish(&in);
	in = start_q(dir, 1, 0, 1, true);
	p2 = params(prompt + 3, 5, 8);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	ck_assert_int_eq(ops->generate(in.p, &p2, &cb, &a, &a.g), 0);
	ck_assert_int_eq(ops->generate(in.p, &p2, &cb, &b, &b.g), 0);
	ck_assert_int_eq(ops->generate(in.p, &p2, &cb, &z, &busy), -EBUSY);
	ops->cancel(in.p, b.g);
	run_loop(NULL);
	ck_assert_int_eq(b.done, 1);
	ck_assert_int_eq(b.res.finish, ENGY_FINISH_ABORT);
	ck_assert_uint_eq(b.n, 0);
	ck_assert_int_eq(a.done, 1);
	ck_assert_int_eq(a.res.finish, ENGY_FINISH_LENGTH);
	ck_assert_uint_eq(a.n, 8);
	gen(&in, &p2, &z); /* room again */
	ck_assert(memcmp(z.ids, a.ids, 8 * 4) == 0);
	finish(&in);
	rm_model(dir);
}
END_TEST

/* Three requests decoded together give what each gives alone. */
/*
 * kernel_profile is per instance: two instances on one checkpoint, ref and
 * splitk, in one process, give rows that differ bitwise but stay close
 * (the same model in another summation order, bf16 activations), and the
 * load line names the profile; unknown names, and a profile other than
 * ref on CUDA, are refused at create.
 */
START_TEST(test_kernel_profile)
{
	struct engy_host *h = fake_host_new("ref0");
	char *dir = tiny_model(false, 1, 0);
	struct engy_gen_params q = params(prompt, NPROMPT, 6);
	struct inst a, b;
	struct col ra, rb;
	void *c, *p = NULL;
	size_t i;
	double d = 0;

	load();
	c = conf_new(dir);
	set_str(c, "kernel_profile", "fast");
	ck_assert_int_eq(plug->create(h, c, &p), -EINVAL);
	ck_assert_ptr_nonnull(
		strstr(fake_host_log(h), "option=kernel_profile"));
	set_str(c, "kernel_profile", "splitk");
	set_str(c, "device", "cuda");
	ck_assert_int_eq(plug->create(h, c, &p), -EINVAL);
	free(c);
	fake_host_free(h);

	a = start(dir, 1, 0, true);
	ck_assert_ptr_nonnull(strstr(fake_host_log(a.h), "device=\"cpu "));
	ck_assert_ptr_null(strstr(fake_host_log(a.h), "splitk"));
	b.h = fake_host_new("ref1");
	b.conf = conf_new(dir);
	set_int(b.conf, "threads", 2);
	set_str(b.conf, "kernel_profile", "splitk");
	ck_assert_int_eq(plug->create(b.h, b.conf, &b.p), 0);
	ck_assert_int_eq(plug->start(b.p), 0);
	run_loop(NULL);
	ck_assert_ptr_nonnull(
		strstr(fake_host_log(b.h), "device=\"cpu splitk x2\""));
	gen(&a, &q, &ra);
	gen(&b, &q, &rb);
	ck_assert_uint_eq(ra.n, 6);
	ck_assert_uint_eq(rb.n, 6);
	ck_assert(memcmp(ra.rows, rb.rows, sizeof(ra.rows)) != 0);
	/* The prompt's last row: the same inputs, only the kernels differ. */
	for (i = 0; i < H; i++)
		d = fmax(d, fabs((double)ra.rows[0][i] - rb.rows[0][i]) /
				    (fabs(ra.rows[0][i]) + 1));
	ck_assert_msg(d < 0.05, "the first row differs by %g", d);
	finish(&a);
	finish(&b);
	rm_model(dir);
}
END_TEST

START_TEST(test_batch_equals_solo)
{
	char *dir = tiny_model(true, 6, 0);
	struct engy_gen_params p[3] = { params(prompt, NPROMPT, 12),
					params(prompt + 5, 3, 20),
					params(prompt + 1, 17, 9) };
	struct col solo[3], both[3];
	struct inst in;
	int k;

	load();
	in = start(dir, 4, 0, true);
	for (k = 0; k < 3; k++)
		gen(&in, &p[k], &solo[k]);
	memset(both, 0, sizeof(both));
	for (k = 0; k < 3; k++) {
		both[k].inst = in.p;
		ck_assert_int_eq(
			ops->generate(in.p, &p[k], &cb, &both[k], &both[k].g),
			0);
	}
	run_loop(NULL);
	for (k = 0; k < 3; k++) {
		ck_assert_int_eq(both[k].done, 1);
		ck_assert_uint_eq(both[k].n, solo[k].n);
		ck_assert(memcmp(both[k].ids, solo[k].ids, solo[k].n * 4) == 0);
		ck_assert(memcmp(both[k].rows, solo[k].rows,
				 solo[k].n * H * 4) == 0);
	}
	finish(&in);
	rm_model(dir);
}
END_TEST

START_TEST(test_stop_eos_context)
{
	char *dir = tiny_model(false, 1, 0);
	struct engy_gen_params p = params(prompt, NPROMPT, 12);
	struct q3_model *m;
	struct q3_seq *s;
	struct q3_row row;
	uint32_t stop, t, k, first = 0, start_tok = 512;
	float h[H], lg[512];
	struct col a, b;
	struct inst in;

	load();
	in = start(dir, 2, NPROMPT + 3, true);
	gen(&in, &p, &a);
	ck_assert_int_eq(a.res.finish, ENGY_FINISH_LENGTH); /* max_context */
	ck_assert_uint_eq(a.n, 3);
	finish(&in);
	in = start(dir, 2, 0, true);
	gen(&in, &p, &a);
	ck_assert_uint_eq(a.n, 12);
	stop = a.ids[4];
	while (a.ids[first] != stop)
		first++;
	p.stop_ids = &stop;
	p.n_stop = 1;
	gen(&in, &p, &b);
	ck_assert_int_eq(b.res.finish, ENGY_FINISH_STOP);
	ck_assert_int_eq(b.res.matched_stop, (int32_t)stop);
	ck_assert_uint_eq(b.n, first + 1);
	/* EOS: a token whose greedy successor is <|im_end|> or <|endoftext|>. */
	ck_assert_int_eq(engy_q3_model_load(dir, NULL, &m, NULL, 0), 0);
	for (t = 0; t < 486 && start_tok == 512; t++) {
		s = engy_q3_seq_new(m, 4);
		row = (struct q3_row){ s, t };
		ck_assert_int_eq(engy_q3_forward(m, &row, 1, h), 0);
		engy_q3_logits(m, h, 1, lg);
		for (k = 1, stop = 0; k < 512; k++)
			stop = lg[k] > lg[stop] ? k : stop;
		if (stop == 486 || stop == 488)
			start_tok = t;
		engy_q3_seq_free(s);
	}
	ck_assert_msg(start_tok < 512, "no token leads to EOS in this model");
	p = params(&start_tok, 1, 5);
	gen(&in, &p, &b);
	ck_assert_int_eq(b.res.finish, ENGY_FINISH_STOP);
	ck_assert(b.res.matched_stop == 486 || b.res.matched_stop == 488);
	ck_assert_uint_eq(b.n, 1);
	/* max_new_tokens 0: the prompt is read, nothing generated. */
	p = params(prompt, 4, 0);
	gen(&in, &p, &b);
	ck_assert_int_eq(b.res.finish, ENGY_FINISH_LENGTH);
	ck_assert_uint_eq(b.n, 0);
	engy_q3_model_free(m);
	finish(&in);
	rm_model(dir);
}
END_TEST

START_TEST(test_refusals)
{
	char *dir = tiny_model(false, 1, 0);
	struct engy_gen_params p = params(prompt, 4, 4);
	uint32_t big[20] = { 0 }, bad = 512;
	struct engy_gen *g;
	struct pre pre = { 0 };
	struct col c;
	struct inst in;

	load();
	in = start(dir, 2, 20, true);
	p.temperature = -1;
	ck_assert_int_eq(ops->generate(in.p, &p, &cb, &c, &g), -EINVAL);
	p.temperature = 0;
	p.top_p = 0;
	ck_assert_int_eq(ops->generate(in.p, &p, &cb, &c, &g), -EINVAL);
	/* more alternatives than OpenAI's bound */
	p = params(prompt, 4, 4);
	p.top_logprobs = ENGY_TOP_LOGPROBS_MAX + 1;
	p.on_top_logprobs = on_top;
	ck_assert_int_eq(ops->generate(in.p, &p, &cb, &c, &g), -EINVAL);
	p = params(&bad, 1, 4);
	ck_assert_int_eq(ops->generate(in.p, &p, &cb, &c, &g), -ERANGE);
	p = params(prompt, 0, 4);
	ck_assert_int_eq(ops->generate(in.p, &p, &cb, &c, &g), -EINVAL);
	p = params(big, 20, 4);
	ck_assert_int_eq(ops->generate(in.p, &p, &cb, &c, &g), -E2BIG);
	ck_assert_int_eq(ops->generate(in.p, &p, NULL, &c, &g), -EINVAL);
	ck_assert_int_eq(ops->prefill(in.p, big, 0, on_prefill, &pre, &g),
			 -EINVAL);
	ck_assert_int_eq(ops->prefill(in.p, &bad, 1, on_prefill, &pre, &g),
			 -ERANGE);
	ck_assert_int_eq(ops->prefill(in.p, big, 20, on_prefill, &pre, &g), 0);
	run_loop(&pre.calls);
	ck_assert_int_eq(pre.rc, 0);
	ck_assert_uint_eq(pre.n, 20);
	free(pre.rows);
	ck_assert_ptr_null(jq);
	plug->stop(in.p);
	p = params(prompt, 4, 4);
	ck_assert_int_eq(ops->generate(in.p, &p, &cb, &c, &g), -ESHUTDOWN);
	finish(&in);
	rm_model(dir);
}
END_TEST

/* work() inline: the whole request runs inside generate(). */
START_TEST(test_sync_host)
{
	char *dir = tiny_model(false, 1, 0);
	struct engy_gen_params p = params(prompt, NPROMPT, 10);
	struct inst qi, si;
	struct col a, b;

	load();
	qi = start(dir, 2, 0, true);
	gen(&qi, &p, &a);
	finish(&qi);
	si = start(dir, 2, 0, false);
	memset(&b, 0, sizeof(b));
	ck_assert_int_eq(ops->generate(si.p, &p, &cb, &b, &b.g), 0);
	ck_assert_int_eq(b.done, 1);
	ck_assert_uint_eq(b.n, 10);
	ck_assert(memcmp(a.ids, b.ids, 10 * 4) == 0);
	finish(&si);
	rm_model(dir);
}
END_TEST

START_TEST(test_load_failure)
{
	char *dir = tiny_model(false, 1, 0), path[600];
	struct engy_gen_params p = params(prompt, 4, 4);
	struct engy_host *h = fake_host_new("ref0");
	struct engy_gen *g;
	void *c, *inst;
	struct col a;

	load();
	h->work = q_work;
	c = conf_new(dir);
	ck_assert_int_eq(plug->create(h, c, &inst),
			 0); /* config.json is fine */
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	ck_assert_int_eq(truncate(path, 100), 0);
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(ops->generate(inst, &p, &cb, &a, &a.g),
			 0); /* queued */
	ck_assert_int_eq(plug->start(inst), 0);
	run_loop(NULL);
	ck_assert_ptr_nonnull(
		strstr(fake_host_log(h), "event=model_load_failed"));
	ck_assert_ptr_nonnull(strstr(fake_host_log(h), "truncated"));
	ck_assert_int_eq(a.done, 1);
	ck_assert_int_eq(a.res.finish, ENGY_FINISH_ERROR);
	ck_assert_int_lt(a.res.status, 0);
	ck_assert_int_eq(ops->generate(inst, &p, &cb, &a, &g), -EIO);
	plug->destroy(inst);
	free(c);
	fake_host_free(h);
	rm_model(dir);
}
END_TEST

/* ---- The GEMM audit trace (ABI 1.4) ---- */

static char err_[256];

struct opened {
	int done, rc;
	char *json;
};

static void open_cb(void *arg, int rc, const char *json, size_t len)
{
	struct opened *o = arg;

	o->done++;
	o->rc = rc;
	o->json = json ? strndup(json, len) : NULL;
}

static int gemm_open(struct inst *in, const char *rid, const char *ch,
		     struct opened *o)
{
	int rc;

	memset(o, 0, sizeof(*o));
	rc = ops->gemm_open(in->p, rid, ch, strlen(ch), open_cb, o);
	if (rc)
		return rc;
	run_loop(&o->done);
	ck_assert_int_eq(o->done, 1);
	return o->rc;
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	ck_assert_msg(cJSON_IsString(v), "member %s", k);
	return v->valuestring;
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	ck_assert_msg(cJSON_IsNumber(v), "member %s", k);
	return v->valuedouble;
}

/*
 * A traced request's member: its fields against values computed here
 * (lib/model's model root of the checkpoint, lib/gemm's sampling hash),
 * the same gemm root solo and batched with other requests, an opening
 * of challenged cells (lm_head included) that lib/gemm's parser takes,
 * and the refusals.
 */
static void gemm_trace(bool moe)
{
	char *dir = tiny_model(moe, moe ? 6 : 1, 0);
	struct engy_gen_params p[3] = { params(prompt, NPROMPT, 7),
					params(prompt + 5, 3, 9),
					params(prompt + 1, 12, 5) };
	struct col solo, both[3], plain;
	struct engy_ms *ms;
	struct opened o;
	struct inst in;
	char hex[65], *ch;
	uint8_t samp[32], nonce[32];
	cJSON *m, *m2;
	int k;

	load();
	ck_assert_int_eq(engy_ms_open(dir, &ms, err_, sizeof(err_)), 0);
	ck_assert_int_eq(
		engy_ms_build(ms, 1, NULL, NULL, 0, err_, sizeof(err_)), 0);
	engy_mc_hex(engy_ms_model_root(ms), 32, hex);
	engy_ms_close(ms);
	in = start(dir, 4, 0, true);
	ck_assert_ptr_nonnull(strstr(fake_host_log(in.h), hex));
	for (k = 0; k < 3; k++) {
		p[k].gemm_trace = true;
		p[k].rid = k == 0 ? "req-0" : k == 1 ? "req-1" : NULL;
	}
	p[0].temperature = 0.7;
	p[0].seed = 99;
	p[0].has_seed = true;
	p[0].top_k = 20;
	gen(&in, &p[0], &solo);
	ck_assert_ptr_nonnull(solo.gemm);
	m = cJSON_Parse(solo.gemm);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(jstr(m, "hashing"), "engy-ga1");
	ck_assert_str_eq(jstr(m, "spec_root"), hex);
	ck_assert_str_eq(jstr(m, "rid"), "req-0");
	ck_assert_int_eq((int)jnum(m, "n_prompt"), NPROMPT);
	ck_assert_int_eq((int)jnum(m, "n_tokens"), NPROMPT + solo.n);
	engy_ga_sampling_hash(0.7, 1, 20, 99, true, 7, samp);
	engy_mc_hex(samp, 32, hex);
	ck_assert_str_eq(jstr(m, "sampling"), hex);
	ck_assert_uint_eq(strlen(jstr(m, "gemm_root")), 64);

	/* Batched with two others (and an untraced one): the same root. */
	memset(both, 0, sizeof(both));
	memset(&plain, 0, sizeof(plain));
	plain.inst = in.p;
	ck_assert_int_eq(ops->generate(in.p, &p[1], &cb, &plain, &plain.g), 0);
	for (k = 0; k < 3; k++) {
		both[k].inst = in.p;
		ck_assert_int_eq(
			ops->generate(in.p, &p[k], &cb, &both[k], &both[k].g),
			0);
	}
	run_loop(NULL);
	ck_assert_int_eq(plain.done, 1);
	free(plain.gemm);
	for (k = 0; k < 3; k++) {
		ck_assert_int_eq(both[k].done, 1);
		ck_assert_ptr_nonnull(both[k].gemm);
	}
	m2 = cJSON_Parse(both[0].gemm);
	ck_assert_ptr_nonnull(m2);
	ck_assert_uint_eq(both[0].n, solo.n);
	ck_assert_str_eq(jstr(m2, "gemm_root"), jstr(m, "gemm_root"));
	cJSON_Delete(m2);
	/* the third had no rid of its own: the backend named it */
	m2 = cJSON_Parse(both[2].gemm);
	ck_assert(strncmp(jstr(m2, "rid"), "ref-", 4) == 0);
	cJSON_Delete(m2);

	/* Not asked: no member. */
	p[1].gemm_trace = false;
	gen(&in, &p[1], &plain);
	ck_assert_ptr_null(plain.gemm);

	/* An opening: layers 0 and last, lm_head, first and last rows. */
	{
		const struct q3_config *cf = NULL;
		struct q3_config c;
		struct engy_ga_cell cells[4];
		struct engy_ga_opening *op;
		char e[128];

		ck_assert_int_eq(engy_q3_config_load(dir, &c, e, sizeof(e)), 0);
		cf = &c;
		cells[0] = (struct engy_ga_cell){ 0, 0 };
		cells[1] = (struct engy_ga_cell){ (uint16_t)(cf->n_layers - 1),
						  NPROMPT + 1 };
		cells[2] =
			(struct engy_ga_cell){ ENGY_GA_LM_LAYER, NPROMPT - 1 };
		cells[3] = (struct engy_ga_cell){
			ENGY_GA_LM_LAYER, (uint32_t)(NPROMPT + solo.n - 2)
		};
		memset(nonce, 7, sizeof(nonce));
		ch = engy_ga_challenge_json(nonce, cells, 4);
		ck_assert_ptr_nonnull(ch);
		ck_assert_int_eq(gemm_open(&in, "req-0", ch, &o), 0);
		ck_assert_ptr_nonnull(o.json);
		ck_assert_msg(engy_ga_opening_parse(o.json, strlen(o.json), &op,
						    e, sizeof(e)) == 0,
			      "%s", e);
		engy_ga_opening_free(op);
		free(o.json);
		ck_assert_int_eq(gemm_open(&in, "nope", ch, &o), -ENOENT);
		ck_assert_int_eq(gemm_open(&in, "req-0", "{\"nonce\":1}", &o),
				 -EINVAL);
		free(ch);
	}
	ck_assert_ptr_null(strstr(fake_host_log(in.h), "gemm_replay_diverged"));
	cJSON_Delete(m);
	free(solo.gemm);
	for (k = 0; k < 3; k++)
		free(both[k].gemm);
	finish(&in);
	rm_model(dir);
}

START_TEST(test_gemm_trace_dense)
{
	gemm_trace(false);
}
END_TEST

START_TEST(test_gemm_trace_moe)
{
	gemm_trace(true);
}
END_TEST

/* Bytes of the trace the log's event=gemm_kept names. */
static size_t kept_bytes(struct inst *in, const char *rid)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "event=gemm_kept rid=%s bytes=", rid);
	p = strstr(fake_host_log(in->h), pat);
	ck_assert_ptr_nonnull(p);
	return (size_t)strtoull(p + strlen(pat), NULL, 10);
}

/* The memory cap: the oldest trace goes, is logged, and opens -ENOENT;
 * a trace over the cap on its own is not kept (no member). */
START_TEST(test_gemm_evict)
{
	char *dir = tiny_model(false, 1, 0);
	struct engy_gen_params p = params(prompt, NPROMPT, 6);
	struct engy_ga_cell cell = { 0, 1 };
	struct col a, b;
	struct opened o;
	struct inst in;
	uint8_t nonce[32] = { 1 };
	size_t bytes;
	char *ch = engy_ga_challenge_json(nonce, &cell, 1);

	load();
	p.gemm_trace = true;
	in = start(dir, 2, 0, true);
	p.rid = "first";
	gen(&in, &p, &a);
	ck_assert_ptr_nonnull(a.gemm);
	bytes = kept_bytes(&in, "first");
	ck_assert_uint_gt(bytes, 4096);
	free(a.gemm);
	finish(&in);

	/* Room for one and a half. */
	in.h = fake_host_new("ref0");
	in.h->work = q_work;
	in.conf = conf_new(dir);
	set_int(in.conf, "threads", 2);
	set_int(in.conf, "gemm_max_bytes", (int64_t)(bytes + bytes / 2));
	ck_assert_int_eq(plug->create(in.h, in.conf, &in.p), 0);
	ck_assert_int_eq(plug->start(in.p), 0);
	run_loop(NULL);
	p.rid = "first";
	gen(&in, &p, &a);
	p.rid = "second";
	gen(&in, &p, &b);
	ck_assert_ptr_nonnull(a.gemm);
	ck_assert_ptr_nonnull(b.gemm);
	ck_assert_ptr_nonnull(
		strstr(fake_host_log(in.h), "event=gemm_evicted rid=first"));
	ck_assert_ptr_nonnull(strstr(fake_host_log(in.h), "reason=cap"));
	ck_assert_int_eq(gemm_open(&in, "first", ch, &o), -ENOENT);
	ck_assert_int_eq(gemm_open(&in, "second", ch, &o), 0);
	free(o.json);
	free(a.gemm);
	free(b.gemm);
	/* Replays count against max_batch + max_queue (4 + 64 by default):
	 * the 69th open in a row is refused, the others answer. */
	{
		struct opened many[69];
		int k;

		memset(many, 0, sizeof(many));
		for (k = 0; k < 68; k++)
			ck_assert_int_eq(ops->gemm_open(in.p, "second", ch,
							strlen(ch), open_cb,
							&many[k]),
					 0);
		ck_assert_int_eq(ops->gemm_open(in.p, "second", ch, strlen(ch),
						open_cb, &many[68]),
				 -EBUSY);
		run_loop(NULL);
		for (k = 0; k < 68; k++) {
			ck_assert_int_eq(many[k].done, 1);
			ck_assert_int_eq(many[k].rc, 0);
			free(many[k].json);
		}
	}
	finish(&in);

	/* Over the cap alone: not kept, no member. */
	in.h = fake_host_new("ref0");
	in.h->work = q_work;
	in.conf = conf_new(dir);
	set_int(in.conf, "gemm_max_bytes", 4096);
	ck_assert_int_eq(plug->create(in.h, in.conf, &in.p), 0);
	ck_assert_int_eq(plug->start(in.p), 0);
	run_loop(NULL);
	gen(&in, &p, &a);
	ck_assert_ptr_null(a.gemm);
	ck_assert_ptr_nonnull(strstr(fake_host_log(in.h), "reason=too_big"));
	ck_assert_int_eq(gemm_open(&in, "second", ch, &o), -ENOENT);
	finish(&in);

	/* gemm_trace = false: no member, no model root at load. */
	in.h = fake_host_new("ref0");
	in.h->work = q_work;
	in.conf = conf_new(dir);
	*(bool *)((uint8_t *)in.conf + opt("gemm_trace")->offset) = false;
	ck_assert_int_eq(plug->create(in.h, in.conf, &in.p), 0);
	ck_assert_int_eq(plug->start(in.p), 0);
	run_loop(NULL);
	gen(&in, &p, &a);
	ck_assert_ptr_null(a.gemm);
	ck_assert_ptr_null(strstr(fake_host_log(in.h), "gemm_ready"));
	finish(&in);
	free(ch);
	rm_model(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("backend_ref");
	TCase *tc = tcase_create("ops");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_descriptor);
	tcase_add_test(tc, test_create_refusals);
	tcase_add_test(tc, test_info);
	tcase_add_test(tc, test_stream_dense);
	tcase_add_test(tc, test_stream_moe);
	tcase_add_test(tc, test_sampling_seeded);
	tcase_add_test(tc, test_cancel);
	tcase_add_test(tc, test_batch_equals_solo);
	tcase_add_test(tc, test_kernel_profile);
	tcase_add_test(tc, test_stop_eos_context);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_sync_host);
	tcase_add_test(tc, test_load_failure);
	tcase_add_test(tc, test_gemm_trace_dense);
	tcase_add_test(tc, test_gemm_trace_moe);
	tcase_add_test(tc, test_gemm_evict);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
