/* SPDX-License-Identifier: MIT */
/*
 * gemm_verify: checks a GEMM opening against the member it answers, for
 * tests/integration/serve_gemm.sh, with lib/gemm:
 *
 *   gemm_verify challenge MEMBER.json NONCE RID CKPT > CHALLENGE.json
 *   gemm_verify MEMBER.json OPENING.json CHALLENGE.json IDS SPEC_ROOT
 *               [CKPT RID]
 *
 * challenge: the auditor's cells for NONCE (64 hex digits) and request id
 * RID over the member (trace root with no TOPLOC member), all layers and
 * up to 4 positions each, as engy_ga_challenge() draws them.
 * IDS: prompt ‖ output, comma-separated; SPEC_ROOT: the checkpoint's model
 * root (engyctl model-spec build).  Checked: the opening parses; its
 * binding is the member's (spec root, the ids' hash, counts, sampling);
 * its cells are the challenge's; every layer cell opens q_proj's X and Y
 * rows there and every lm_head cell lm_head's; every row's leaf folds
 * along its token path into a token root, every sub leaf along its sub
 * path into one sub root, and that with the binding into the member's
 * gemm root.  With CKPT and RID, then engy_ga_check() with the
 * checkpoint's weights (lib/gemm's gemm_ckpt) must say pass.  Prints
 * "ok: ..." and exits 0, or names the first failure and exits 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gemm.h"
#include "gemm_ckpt.h"
#include "gemm_int.h"
#include "merkle.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1)) &&
	    fread(b, 1, (size_t)n, f) == (size_t)n) {
		b[n] = '\0';
		*len = (size_t)n;
	} else {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

static int bad(const char *what)
{
	fprintf(stderr, "gemm_verify: %s\n", what);
	return 1;
}

static int hex_of(const cJSON *m, const char *k, uint8_t out[32])
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, k);

	return cJSON_IsString(v) && strlen(v->valuestring) == 64 &&
			       engy_mc_unhex(v->valuestring, out, 32) == 0
		       ? 0
		       : -1;
}

static const struct engy_ga_params params = { .layers = 100,
					      .tokens = 4,
					      .projections = 2,
					      .spots = 4,
					      .z = 6,
					      .c_el = 6 };

/* The seed an auditor derives for @rid and @nonce from the member. */
static int seed_of(const cJSON *m, const char *rid, const char *nonce_hex,
		   uint8_t nonce[32], uint8_t trace_root[32], uint8_t seed[32])
{
	uint8_t groot[32], spec[32], tl[32];

	if (hex_of(m, "gemm_root", groot) || hex_of(m, "spec_root", spec) ||
	    strlen(nonce_hex) != 64 || engy_mc_unhex(nonce_hex, nonce, 32))
		return -1;
	engy_ga_toploc_hash(NULL, 0, tl);
	engy_ga_trace_root(groot, tl, trace_root);
	engy_ga_seed(spec, trace_root, rid, nonce, seed);
	return 0;
}

static struct engy_ga_ckpt *ckpt_open(const char *dir)
{
	struct engy_ga_ckpt *c;
	char err[256];

	if (engy_ga_ckpt_open(dir, (size_t)1 << 28, &c, err, sizeof(err))) {
		fprintf(stderr, "gemm_verify: %s\n", err);
		exit(1);
	}
	return c;
}

static int challenge(char **argv)
{
	struct engy_ga_cell cells[ENGY_GA_MAX_CELLS];
	uint8_t nonce[32], tr[32], seed[32];
	struct engy_ga_ckpt *c;
	size_t ml, n;
	char *mtext = slurp(argv[2], &ml), *json;
	cJSON *m = mtext ? cJSON_Parse(mtext) : NULL;

	if (!m || seed_of(m, argv[4], argv[3], nonce, tr, seed))
		return bad("challenge: member or nonce");
	c = ckpt_open(argv[5]);
	if (engy_ga_challenge(
		    seed, engy_ga_ckpt_layers(c),
		    (uint32_t)cJSON_GetObjectItem(m, "n_prompt")->valuedouble,
		    (uint32_t)cJSON_GetObjectItem(m, "n_tokens")->valuedouble,
		    &params, cells, ENGY_GA_MAX_CELLS, &n) ||
	    !n)
		return bad("challenge: no cells");
	json = engy_ga_challenge_json(nonce, cells, n);
	if (!json)
		return bad("challenge: out of memory");
	printf("%s", json);
	free(json);
	engy_ga_ckpt_close(c);
	cJSON_Delete(m);
	free(mtext);
	return 0;
}

/* engy_ga_check() with the checkpoint's weights: must pass. */
static int check(const cJSON *m, const struct engy_ga_opening *op,
		 const uint8_t ids_hash[32], const char *nonce_hex,
		 const char *dir, const char *rid)
{
	uint8_t nonce[32], tr[32], seed[32], tl[32];
	struct engy_ga_ckpt *c = ckpt_open(dir);
	struct engy_ga_ckpt_use *u;
	struct engy_ga_weights w;
	struct engy_ga_verdict v;
	struct engy_ga_bind b;

	if (seed_of(m, rid, nonce_hex, nonce, tr, seed))
		return bad("check: member or nonce");
	memset(&b, 0, sizeof(b));
	hex_of(m, "spec_root", b.spec_root);
	hex_of(m, "sampling", b.sampling);
	memcpy(b.ids_hash, ids_hash, 32);
	b.n_prompt = (uint32_t)cJSON_GetObjectItem(m, "n_prompt")->valuedouble;
	b.n_tokens = (uint32_t)cJSON_GetObjectItem(m, "n_tokens")->valuedouble;
	engy_ga_toploc_hash(NULL, 0, tl);
	u = engy_ga_ckpt_use(c, &w);
	if (!u || engy_ga_check(op, seed, tr, tl, &b, &params, &w, &v))
		return bad("check: out of memory");
	engy_ga_ckpt_done(u);
	engy_ga_ckpt_close(c);
	if (v.outcome != ENGY_GA_PASS) {
		fprintf(stderr, "gemm_verify: engy_ga_check: %d %s at %s\n",
			v.outcome, v.reason, v.where);
		return 1;
	}
	printf("ok: engy_ga_check pass, %u products, rho_max %.3g\n",
	       v.products, v.rho_max);
	return 0;
}

int main(int argc, char **argv)
{
	uint8_t groot[32], spec[32], samp[32], ids_hash[32], want[32];
	uint8_t sub_root[32], leaf[32], troot[32], sleaf[32], sr[32];
	struct engy_ga_opening *op;
	struct engy_ga_cell *cells = NULL;
	uint8_t nonce[32];
	size_t ml, ol, cl, n_cells = 0, i, j, k, n_ids = 0, rows = 0;
	char *mtext, *otext, *ctext, err[160], *p;
	uint32_t *ids;
	struct engy_mh *h;
	cJSON *m;
	bool have_sub = false;

	if (argc == 6 && !strcmp(argv[1], "challenge"))
		return challenge(argv);
	if (argc != 6 && argc != 8)
		return bad("usage: MEMBER OPENING CHALLENGE IDS SPEC_ROOT "
			   "[CKPT RID]");
	mtext = slurp(argv[1], &ml);
	otext = slurp(argv[2], &ol);
	ctext = slurp(argv[3], &cl);
	if (!mtext || !otext || !ctext)
		return bad("cannot read the files");
	m = cJSON_Parse(mtext);
	if (!m || hex_of(m, "gemm_root", groot) ||
	    hex_of(m, "sampling", samp) || hex_of(m, "spec_root", spec))
		return bad("member: not the expected object");
	if (engy_mc_unhex(argv[5], want, 32) || memcmp(want, spec, 32))
		return bad("member: spec_root is not the checkpoint's");
	ids = calloc(strlen(argv[4]) + 1, sizeof(*ids));
	for (p = argv[4]; ids && *p; p++) {
		ids[n_ids++] = (uint32_t)strtoul(p, &p, 10);
		if (*p != ',')
			break;
	}
	engy_ga_ids_hash(ids, n_ids, ids_hash);
	if (engy_ga_opening_parse(otext, ol, &op, err, sizeof(err)))
		return bad(err);
	if (engy_ga_challenge_parse(ctext, cl, nonce, &cells, &n_cells, err,
				    sizeof(err)))
		return bad(err);
	if (memcmp(op->bind.spec_root, spec, 32))
		return bad("opening: spec root");
	if (memcmp(op->bind.ids_hash, ids_hash, 32))
		return bad("opening: the ids are not prompt ‖ output");
	if (memcmp(op->bind.sampling, samp, 32))
		return bad("opening: sampling");
	if ((double)op->bind.n_prompt !=
		    cJSON_GetObjectItemCaseSensitive(m, "n_prompt")
			    ->valuedouble ||
	    (double)op->bind.n_tokens !=
		    cJSON_GetObjectItemCaseSensitive(m, "n_tokens")
			    ->valuedouble ||
	    op->bind.n_tokens != n_ids)
		return bad("opening: counts");
	if (op->n_cells != n_cells)
		return bad("opening: not the challenge's cells");
	for (i = 0; i < n_cells; i++) {
		bool x = false, y = false;
		int mm = cells[i].layer == ENGY_GA_LM_LAYER ? ENGY_GA_MM_LM_HEAD
							    : ENGY_GA_MM_Q;

		if (op->cells[i].layer != cells[i].layer ||
		    op->cells[i].pos != cells[i].pos)
			return bad("opening: not the challenge's cells");
		for (j = 0; j < op->n_osubs; j++) {
			const struct engy_ga_osub *s = &op->subs[j];

			if (s->key.layer != cells[i].layer || s->key.mm != mm)
				continue;
			for (k = 0; k < s->n_rows; k++)
				if (s->rows[k].pos == cells[i].pos) {
					x |= s->key.role == ENGY_GA_X;
					y |= s->key.role == ENGY_GA_Y;
				}
		}
		if (!x || !y)
			return bad("opening: a challenged cell's rows are "
				   "missing");
	}
	h = engy_mh_new();
	if (!h)
		return bad("no hasher");
	for (j = 0; j < op->n_osubs; j++) {
		const struct engy_ga_osub *s = &op->subs[j];

		for (k = 0; k < s->n_rows; k++) {
			const struct engy_ga_orow *r = &s->rows[k];

			engy_ga_leaf(&s->key, r->pos, r->data, r->n, leaf);
			engy_ga_fold(h, leaf, r->pos, r->path, r->depth,
				     k ? sr : troot);
			if (k && memcmp(sr, troot, 32))
				return bad("opening: rows of one sub fold "
					   "into different token roots");
			rows++;
		}
		engy_ga_sub_leaf(h, &s->key, troot, sleaf);
		engy_ga_fold(h, sleaf, s->index, s->path, s->depth, sr);
		if (have_sub && memcmp(sr, sub_root, 32))
			return bad("opening: subs fold into different sub "
				   "roots");
		memcpy(sub_root, sr, 32);
		have_sub = true;
	}
	if (!have_sub)
		return bad("opening: no rows");
	engy_ga_gemm_hash(h, &op->bind, op->n_subs, sub_root, sr);
	if (memcmp(sr, groot, 32))
		return bad("opening: the paths do not lead to the member's "
			   "gemm root");
	printf("ok: %zu cells, %zu subs, %zu rows; paths lead to the gemm "
	       "root\n",
	       n_cells, op->n_osubs, rows);
	if (argc == 8) {
		char nh[65];

		engy_mc_hex(nonce, 32, nh);
		if (check(m, op, ids_hash, nh, argv[6], argv[7]))
			return 1;
	}
	engy_mh_free(h);
	engy_ga_opening_free(op);
	free(cells);
	free(ids);
	cJSON_Delete(m);
	free(mtext);
	free(otext);
	free(ctext);
	return 0;
}
