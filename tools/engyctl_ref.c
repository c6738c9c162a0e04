/* SPDX-License-Identifier: MIT */
/*
 * engyctl ref: run the reference engine on a checkpoint.  Feeds a prompt
 * (ids, text, or one chat user turn) in prefill chunks or one token at a
 * time, decodes N tokens with the KV cache (greedy, or sampled with a
 * seed), prints the generated ids (or text), and can dump the final
 * hidden state and the logits of every fed position as little-endian
 * float32 rows: what tests/ref/qwen3_ref.py checks against numpy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "chat_template.h"
#include "constrain.h"
#include "engyctl.h"
#include "qwen3.h"
#include "sampler.h"
#include "tokenizer.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "engyctl ref writes host floats as little-endian"
#endif

struct ref_args {
	const char *dir, *ids, *text, *chat, *hidden, *logits, *device;
	const char *profile;
	const char *json_schema; /* a file: constrained decoding */
	uint32_t gen, chunk, threads;
	bool step, decode, ignore_eos;
	struct q3_sampling sp;
	uint64_t seed;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: engyctl ref --checkpoint DIR (--ids \"ID ...\" | --text TEXT | --chat TEXT)\n"
		"                  [--generate N] [--chunk C] [--step] [--threads T]\n"
		"                  [--device cpu|cuda] [--temperature T] [--top-p P]\n"
		"                  [--top-k K] [--seed S] [--ignore-eos] [--decode]\n"
		"                  [--hidden FILE] [--logits FILE] [--json-schema FILE]\n"
		"                  [--kernel-profile PROFILE]\n"
		"\n"
		"Runs the reference engine: feeds the prompt in chunks of C tokens\n"
		"(default 128; --step: one at a time), then generates up to N tokens\n"
		"(default 0) with the KV cache, greedy unless --temperature > 0,\n"
		"stopping at an EOS id unless --ignore-eos.  Prints the generated ids\n"
		"on one line (--decode: the text).  --hidden and --logits receive\n"
		"the final hidden state / logits of every position fed (prompt, then\n"
		"each generated token but the last), little-endian float32, row\n"
		"after row.  --chat wraps TEXT as one user turn of the checkpoint's\n"
		"Qwen3 chat template.  --kernel-profile computes in another\n"
		"summation order or activation precision: ref (default), splitk,\n"
		"warp32, bf16act, splitk-f32, fp8-bf16, bf16dp, amx (specs/checkpoints.md,\n"
		"\"Kernel profiles\"); with --device cuda, ref (float32 SGEMM) or\n"
		"bf16act (cuBLAS's bf16 GEMM on the tensor cores).  --json-schema: sampling is masked so that the\n"
		"output is JSON matching the schema in FILE (lib/constrain; an EOS\n"
		"id only once it is complete).  Timings go to stderr.\n");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || !*s || *end || *s == '-' || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_ids(const char *s, uint32_t **ids, size_t *n)
{
	char *copy = strdup(s), *tok, *save = NULL;
	uint32_t *v = NULL, *t;
	size_t k = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, " \t\n,", &save); tok;
	     tok = strtok_r(NULL, " \t\n,", &save)) {
		t = realloc(v, (k + 1) * sizeof(*v));
		if (!t || parse_u32(tok, &t[k])) {
			free(t ? t : v);
			free(copy);
			return -EINVAL;
		}
		v = t;
		k++;
	}
	free(copy);
	*ids = v;
	*n = k;
	return k ? 0 : -EINVAL;
}

/* One user turn through the Qwen3 template, as a server would render it. */
static int chat_prompt(const char *text, char **prompt, size_t *len)
{
	struct engy_chat_opts o = { .variant = ENGY_CHAT_QWEN3,
				    .enable_thinking = -1 };
	cJSON *body = cJSON_CreateObject(), *msgs, *m;
	char err[256];
	int rc;

	msgs = cJSON_AddArrayToObject(body, "messages");
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "user");
	cJSON_AddStringToObject(m, "content", text);
	cJSON_AddItemToArray(msgs, m);
	rc = engy_chat_render(body, &o, prompt, len, NULL, err, sizeof(err));
	cJSON_Delete(body);
	return rc;
}

static int prompt_ids(const struct ref_args *a, struct engy_tokenizer *tok,
		      uint32_t **ids, size_t *n)
{
	char *p = NULL;
	size_t len;
	int rc;

	if (a->ids)
		return parse_ids(a->ids, ids, n)
			       ? engyctl_fail("ref: --ids wants decimal ids")
			       : 0;
	if (a->chat) {
		rc = chat_prompt(a->chat, &p, &len);
		if (rc)
			return engyctl_fail("ref: chat rendering failed");
	}
	rc = engy_tokenizer_encode(tok, p ? p : a->text,
				   p ? len : strlen(a->text), ids, n);
	free(p);
	if (rc || !*n)
		return engyctl_fail(
			"ref: the prompt is not valid UTF-8 or encodes to nothing");
	return 0;
}

static int dump(FILE *f, const float *v, size_t n, const char *path)
{
	if (f && fwrite(v, sizeof(float), n, f) != n)
		return engyctl_fail("ref: %s: write failed", path);
	return 0;
}

static bool is_eos(const struct q3_config *c, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < c->n_eos; i++)
		if (c->eos[i] == id)
			return true;
	return false;
}

/* --json-schema: the compiled schema, its matcher, the vocabulary's
 * bytes. */
struct ref_cons {
	struct engy_cons *c;
	struct engy_cons_state *s;
	struct engy_cons_vocab *v;
	uint8_t *scratch;
};

static int cons_open(const char *file, const struct engy_tokenizer *tok,
		     uint32_t n_ids, struct ref_cons *rc)
{
	char *text = NULL, why[200];
	size_t len = 0, n;
	const uint8_t *p;
	FILE *f = fopen(file, "rb");
	cJSON *j = NULL;
	uint32_t id;

	if (f) {
		text = malloc(1 << 20);
		len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
		fclose(f);
	}
	if (!text) {
		free(text);
		return engyctl_fail("ref: %s: %s", file, strerror(errno));
	}
	text[len] = 0;
	j = cJSON_Parse(text);
	free(text);
	if (!j)
		return engyctl_fail("ref: %s: not JSON", file);
	if (engy_cons_compile(j, NULL, NULL, &rc->c, why, sizeof(why))) {
		cJSON_Delete(j);
		return engyctl_fail("ref: %s: %s", file, why);
	}
	cJSON_Delete(j);
	rc->s = engy_cons_state_new(rc->c);
	rc->v = engy_cons_vocab_new(n_ids);
	rc->scratch = malloc(n_ids);
	if (!rc->s || !rc->v || !rc->scratch)
		return engyctl_fail("ref: out of memory");
	for (id = 0; id < n_ids; id++)
		if (!engy_tokenizer_token_bytes(tok, id, &p, &n) &&
		    !engy_tokenizer_is_special(tok, id) &&
		    engy_cons_vocab_set(rc->v, id, p, n))
			return engyctl_fail("ref: out of memory");
	if (engy_cons_vocab_seal(rc->v))
		return engyctl_fail("ref: out of memory");
	return 0;
}

static void cons_close(struct ref_cons *rc)
{
	engy_cons_state_free(rc->s);
	engy_cons_free(rc->c);
	engy_cons_vocab_free(rc->v);
	free(rc->scratch);
}

static int run(const struct ref_args *a, struct q3_model *m,
	       struct engy_tokenizer *tok, FILE *fh, FILE *fl)
{
	struct ref_cons cons = { 0 };
	const struct q3_config *c = engy_q3_model_config(m);
	uint32_t *ids = NULL, *out = NULL, i, n_out = 0;
	size_t n = 0, off, step;
	struct q3_sampler *smp = engy_q3_sampler_new(c->vocab);
	float *hid = NULL, *lg = NULL;
	struct q3_row *rows = NULL;
	struct q3_seq *seq = NULL;
	struct q3_rng rng;
	double t0, t_pre, t_dec = 0;
	const char *how = engy_q3_model_profile_kernel(m);
	int rc = 1;

	engy_q3_rng_seed(&rng, a->seed);
	if (prompt_ids(a, tok, &ids, &n))
		goto out;
	if (a->json_schema && cons_open(a->json_schema, tok, c->vocab, &cons))
		goto out;
	step = a->step ? 1 : a->chunk;
	seq = engy_q3_seq_new(m, (uint32_t)n + a->gen + 1);
	hid = malloc(step * c->hidden * sizeof(float));
	lg = malloc(step * c->vocab * sizeof(float));
	out = malloc((a->gen + 1) * sizeof(*out));
	rows = malloc(step * sizeof(*rows));
	if (!smp || !seq || !hid || !lg || !out || !rows) {
		engyctl_fail("ref: out of memory");
		goto out;
	}
	t0 = now();
	for (off = 0; off < n; off += step) {
		size_t k, cnt = n - off < step ? n - off : step;

		for (k = 0; k < cnt; k++)
			rows[k] = (struct q3_row){ seq, ids[off + k] };
		rc = engy_q3_forward(m, rows, cnt, hid);
		if (rc) {
			rc = engyctl_fail(
				"ref: forward: %s (an id past vocab_size %u?)",
				strerror(-rc), c->vocab);
			goto out;
		}
		engy_q3_logits(m, hid, cnt, lg);
		rc = dump(fh, hid, cnt * c->hidden, a->hidden) ||
		     dump(fl, lg, cnt * c->vocab, a->logits);
		if (rc)
			goto out;
	}
	t_pre = now() - t0;
	/* lg holds the last prompt row's logits at the end of its chunk. */
	off = ((n - 1) % step) * c->vocab;
	for (i = 0; i < a->gen; i++) {
		struct q3_row row;

		if (cons.c && !engy_cons_mask_logits(
				      cons.s, cons.v, lg + off, c->eos,
				      c->n_eos, a->gen - i, cons.scratch)) {
			rc = engyctl_fail("ref: no token may follow");
			goto out;
		}
		out[n_out++] =
			engy_q3_sample(smp, lg + off, &a->sp, &rng, NULL);
		if (cons.c && is_eos(c, out[n_out - 1]))
			break; /* complete: the constraint ends it */
		if (cons.c &&
		    engy_cons_feed_id(cons.s, cons.v, out[n_out - 1])) {
			rc = engyctl_fail(
				"ref: the constraint refused a token");
			goto out;
		}
		if ((!a->ignore_eos && is_eos(c, out[n_out - 1])) ||
		    i + 1 == a->gen)
			break;
		t0 = now();
		row = (struct q3_row){ seq, out[n_out - 1] };
		rc = engy_q3_forward(m, &row, 1, hid);
		if (rc) {
			rc = engyctl_fail("ref: forward: %s", strerror(-rc));
			goto out;
		}
		engy_q3_logits(m, hid, 1, lg);
		t_dec += now() - t0;
		off = 0;
		rc = dump(fh, hid, c->hidden, a->hidden) ||
		     dump(fl, lg, c->vocab, a->logits);
		if (rc)
			goto out;
	}
	if (a->decode && tok) {
		char *text = NULL;
		size_t len;

		if (engy_tokenizer_decode(tok, out, n_out, false, &text,
					  &len)) {
			rc = engyctl_fail("ref: decoding the output failed");
			goto out;
		}
		printf("%s\n", text);
		free(text);
	} else {
		for (i = 0; i < n_out; i++)
			printf("%s%u", i ? " " : "", out[i]);
		printf("\n");
	}
	fprintf(stderr,
		"ref: %zu prompt tokens in %.3f s (%.1f tok/s), %u generated, "
		"decode %.1f tok/s, %s%s%s%s%s\n",
		n, t_pre, n / (t_pre > 0 ? t_pre : 1e-9), n_out,
		n_out > 1 ? (n_out - 1) / (t_dec > 0 ? t_dec : 1e-9) : 0.0,
		engy_q3_model_device(m), *how ? ", profile " : "",
		*how ? engy_q3_profile_name(engy_q3_model_profile(m)) : "",
		*how ? " on " : "", how);
	rc = 0;
out:
	cons_close(&cons);
	engy_q3_sampler_free(smp);
	engy_q3_seq_free(seq);
	free(hid);
	free(lg);
	free(ids);
	free(out);
	free(rows);
	return rc;
}

static bool num(const char *v, double *out)
{
	char *end;

	*out = strtod(v, &end);
	return *v && !*end;
}

static int parse_args(int argc, char **argv, struct ref_args *a)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint32_t k;
		char *end;

		if (strcmp(o, "--step") == 0) {
			a->step = true;
			continue;
		}
		if (strcmp(o, "--decode") == 0) {
			a->decode = true;
			continue;
		}
		if (strcmp(o, "--ignore-eos") == 0) {
			a->ignore_eos = true;
			continue;
		}
		if (!v)
			return i;
		i++;
		if (strcmp(o, "--checkpoint") == 0)
			a->dir = v;
		else if (strcmp(o, "--ids") == 0)
			a->ids = v;
		else if (strcmp(o, "--text") == 0)
			a->text = v;
		else if (strcmp(o, "--chat") == 0)
			a->chat = v;
		else if (strcmp(o, "--hidden") == 0)
			a->hidden = v;
		else if (strcmp(o, "--logits") == 0)
			a->logits = v;
		else if (strcmp(o, "--json-schema") == 0)
			a->json_schema = v;
		else if (strcmp(o, "--device") == 0)
			a->device = v;
		else if (strcmp(o, "--kernel-profile") == 0)
			a->profile = v;
		else if (strcmp(o, "--generate") == 0 && !parse_u32(v, &a->gen))
			continue;
		else if (strcmp(o, "--chunk") == 0 &&
			 !parse_u32(v, &a->chunk) && a->chunk)
			continue;
		else if (strcmp(o, "--threads") == 0 &&
			 !parse_u32(v, &a->threads))
			continue;
		else if (strcmp(o, "--temperature") == 0 &&
			 num(v, &a->sp.temperature))
			continue;
		else if (strcmp(o, "--top-p") == 0 && num(v, &a->sp.top_p))
			continue;
		else if (strcmp(o, "--top-k") == 0 && !parse_u32(v, &k) &&
			 k <= INT32_MAX)
			a->sp.top_k = (int32_t)k;
		else if (strcmp(o, "--seed") == 0 && *v && *v != '-' &&
			 (a->seed = strtoull(v, &end, 10), !*end))
			continue;
		else
			return i - 1;
	}
	return 0;
}

int engyctl_ref(int argc, char **argv);

int engyctl_ref(int argc, char **argv)
{
	struct ref_args a = { .chunk = 128, .sp = { 0, 1, 0 } };
	struct q3_load_opts lo = { 0 };
	struct engy_tokenizer *tok = NULL;
	struct q3_model *m = NULL;
	const char *why;
	FILE *fh = NULL, *fl = NULL;
	char err[512] = "";
	int bad, rc;

	if (argc == 2 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	bad = parse_args(argc, argv, &a);
	if (bad || !a.dir || !!a.ids + !!a.text + !!a.chat != 1) {
		if (bad)
			fprintf(stderr, "engyctl ref: bad argument '%s'\n",
				argv[bad]);
		else
			fprintf(stderr,
				"engyctl ref: --checkpoint and one of --ids, --text, --chat are required\n");
		usage(stderr);
		return 2;
	}
	if (engy_q3_sampling_check(&a.sp, &why))
		return engyctl_fail("ref: %s", why);
	lo.threads = a.threads;
	if (a.profile && (lo.profile = engy_q3_profile_parse(a.profile)) < 0)
		return engyctl_fail(
			"ref: --kernel-profile '%s': ref, splitk, warp32, bf16act, splitk-f32, fp8-bf16, bf16dp or amx",
			a.profile);
	if (a.device && strcmp(a.device, "cpu") && strcmp(a.device, "cuda"))
		return engyctl_fail("ref: --device '%s': cpu or cuda",
				    a.device);
	lo.device = a.device && !strcmp(a.device, "cuda") ? Q3_DEVICE_CUDA
							  : Q3_DEVICE_CPU;
	rc = engy_q3_model_load(a.dir, &lo, &m, err, sizeof(err));
	if (rc)
		return engyctl_fail("ref: %s", err[0] ? err : strerror(-rc));
	if ((a.text || a.chat || a.decode || a.json_schema) &&
	    engy_tokenizer_load(a.dir, &tok, err, sizeof(err))) {
		rc = engyctl_fail("ref: tokenizer: %s", err);
		goto out;
	}
	if (a.hidden && !(fh = fopen(a.hidden, "wb"))) {
		rc = engyctl_fail("ref: %s: %s", a.hidden, strerror(errno));
		goto out;
	}
	if (a.logits && !(fl = fopen(a.logits, "wb"))) {
		rc = engyctl_fail("ref: %s: %s", a.logits, strerror(errno));
		goto out;
	}
	rc = run(&a, m, tok, fh, fl);
	if (fh && fclose(fh) && !rc)
		rc = engyctl_fail("ref: %s: write failed", a.hidden);
	if (fl && fclose(fl) && !rc)
		rc = engyctl_fail("ref: %s: write failed", a.logits);
	fh = fl = NULL;
out:
	if (fh)
		fclose(fh);
	if (fl)
		fclose(fl);
	engy_tokenizer_free(tok);
	engy_q3_model_free(m);
	return rc;
}
