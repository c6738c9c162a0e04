/* SPDX-License-Identifier: MIT */
/* engyctl admin: models (spec, limits, price card, roots) and miners. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "billing.h"
#include "catalogspec.h"
#include "engyctl_admin.h"

#define SPEC_MAX (64u << 20)

static const char models_usage[] =
	"usage: engyctl admin models put NAME [--spec FILE|-] [--root HEX] [--quant Q]\n"
	"           [--spec-root HEX]\n"
	"           [--max-input-tokens N] [--max-output-tokens N] [--max-request-s N]\n"
	"           [--toploc-topk N] [--toploc-v N] [--toploc-p P]\n"
	"           [--qual-ttft-p99-ms N] [--qual-tpot-p99-ms N] [--score-rate MICRO]\n"
	"           [--price-input USD] [--price-cached-input USD] [--price-output USD]\n"
	"           [--toploc-mant-mean M] [--toploc-mant-median M]\n"
	"           [--gemm-layers N] [--gemm-tokens N] [--gemm-projections N]\n"
	"           [--gemm-spots N] [--gemm-z X] [--gemm-c-el X] [--gemm-rate R]\n"
	"           [--enable | --disable]\n"
	"       engyctl admin models list\n"
	"       engyctl admin models show NAME\n"
	"       engyctl admin models roots [MODEL]\n"
	"       engyctl admin models root-add MODEL --root HEX [--quant Q] [--spec FILE|-]\n"
	"           [--spec-root HEX]\n"
	"       engyctl admin models root-del HEX\n"
	"\n"
	"put creates or updates a buyer-facing model.  --spec reads a published\n"
	"model spec (JSON; zcat a .gz into --spec -): its model_root is kept as\n"
	"the weight commitment and config.arch as the architecture, and any of\n"
	"max_input_tokens, max_output_tokens, max_request_s, toploc_topk (or\n"
	"toploc_k), toploc_v, toploc_p, qual_ttft_p99_ms, qual_tpot_p99_ms,\n"
	"score_rate, price {input, cached_input, output} (micro-USD per 1M\n"
	"tokens), toploc_mant_mean and toploc_mant_median it carries (a field of\n"
	"the wrong type or range refuses the file); flags override them.  --root is the checkpoint\n"
	"identity miners send as hello.model_root (default: the spec's\n"
	"model_root); --spec-root the checkpoint's pinned Merkle root\n"
	"(engyctl model-spec build; default: the spec's model_root), which an\n"
	"auditor checks its checkpoint against at start.  Prices are US dollars per 1M tokens, --score-rate\n"
	"micro-USD per 1k tokens, --toploc-p a share (0.99).  A new model needs\n"
	"the three limits; TOPLOC defaults to topk 128, v 40, p 0.99, and no\n"
	"mantissa limits (0: a chunk's mantissa mean and median unchecked).\n"
	"The GEMM audit's sizes (specs/gemm-audit.md §6: gemm_layers,\n"
	"gemm_tokens, gemm_projections, gemm_spots, gemm_z, gemm_c_el,\n"
	"gemm_rate) come from the spec and the --gemm-* flags; a new model gets\n"
	"§6's defaults (4, 4, 2, 2, 6, 6, 0.05).  A size, z or c_el of 0 leaves\n"
	"it to the verifier's option; --gemm-rate is a share (0: never opened).\n";

static const char miners_usage[] =
	"usage: engyctl admin miners register HOTKEY [--label L] [--first-party] [--priority N]\n"
	"       engyctl admin miners set HOTKEY [--label L] [--priority N]\n"
	"           [--first-party | --no-first-party] [--enable | --disable] [--rotate-key]\n"
	"       engyctl admin miners list\n"
	"\n"
	"register issues the miner's MINER_KEY (mk-engy-...) for the SS58 hotkey\n"
	"its score is paid to and prints it on stdout, once; the store keeps\n"
	"only its keyed hash.  --rotate-key issues a new one and retires the old.\n";

enum {
	F_IN,
	F_OUT,
	F_REQ,
	F_TOPK,
	F_V,
	F_P,
	F_TTFT,
	F_TPOT,
	F_RATE,
	F_PIN,
	F_PCACHE,
	F_POUT,
	F_MEAN,
	F_MEDIAN,
	F_N
};

/* The GEMM audit's flags (the spec file's gemm_* fields). */
enum { G_LAYERS = 256, G_TOKENS, G_PROJ, G_SPOTS, G_Z, G_CEL, G_RATE, G_END };
#define G_N (G_END - G_LAYERS)

static const struct option put_lo[] = {
	{ "max-input-tokens", required_argument, NULL, F_IN },
	{ "max-output-tokens", required_argument, NULL, F_OUT },
	{ "max-request-s", required_argument, NULL, F_REQ },
	{ "toploc-topk", required_argument, NULL, F_TOPK },
	{ "toploc-v", required_argument, NULL, F_V },
	{ "toploc-p", required_argument, NULL, F_P },
	{ "qual-ttft-p99-ms", required_argument, NULL, F_TTFT },
	{ "qual-tpot-p99-ms", required_argument, NULL, F_TPOT },
	{ "score-rate", required_argument, NULL, F_RATE },
	{ "price-input", required_argument, NULL, F_PIN },
	{ "price-cached-input", required_argument, NULL, F_PCACHE },
	{ "price-output", required_argument, NULL, F_POUT },
	{ "toploc-mant-mean", required_argument, NULL, F_MEAN },
	{ "toploc-mant-median", required_argument, NULL, F_MEDIAN },
	{ "gemm-layers", required_argument, NULL, G_LAYERS },
	{ "gemm-tokens", required_argument, NULL, G_TOKENS },
	{ "gemm-projections", required_argument, NULL, G_PROJ },
	{ "gemm-spots", required_argument, NULL, G_SPOTS },
	{ "gemm-z", required_argument, NULL, G_Z },
	{ "gemm-c-el", required_argument, NULL, G_CEL },
	{ "gemm-rate", required_argument, NULL, G_RATE },
	{ "spec", required_argument, NULL, 's' },
	{ "root", required_argument, NULL, 'r' },
	{ "quant", required_argument, NULL, 'q' },
	{ "spec-root", required_argument, NULL, 'S' },
	{ "enable", no_argument, NULL, 'e' },
	{ "disable", no_argument, NULL, 'd' },
	{ NULL, 0, NULL, 0 }
};

/* A published spec file's fields (lib/model/catalogspec.h) are the flags'. */
_Static_assert((int)F_N == (int)ENGY_CS_N,
	       "the flags follow the spec file's fields");

static int read_all(const char *path, char **out, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 0, n = 0;
	char *buf = NULL, *p;
	int rc = 0;

	if (!f)
		return -errno;
	do {
		if (n + 1 >= cap) {
			cap = cap ? cap * 2 : 1 << 16;
			if (cap > SPEC_MAX) {
				rc = -EFBIG;
				break;
			}
			p = realloc(buf, cap);
			if (!p) {
				rc = -ENOMEM;
				break;
			}
			buf = p;
		}
		n += fread(buf + n, 1, cap - n - 1, f);
	} while (!feof(f) && !ferror(f));
	if (!rc && ferror(f))
		rc = -EIO;
	if (f != stdin)
		fclose(f);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static int spec_load(const char *path, struct engy_cspec *sp)
{
	char *text = NULL, err[160];
	size_t len = 0;
	int rc;

	memset(sp, 0, sizeof(*sp));
	rc = read_all(path, &text, &len);
	if (rc) {
		fprintf(stderr, "engyctl: admin models: %s: %s\n", path,
			strerror(-rc));
		return 1;
	}
	if (len >= 2 && (unsigned char)text[0] == 0x1f &&
	    (unsigned char)text[1] == 0x8b) {
		fprintf(stderr,
			"engyctl: admin models: %s is gzip-compressed: zcat it into --spec -\n",
			path);
		free(text);
		return 1;
	}
	rc = engy_cspec_parse(text, len, sp, err, sizeof(err));
	free(text);
	if (rc) {
		fprintf(stderr, "engyctl: admin models: %s: %s\n", path, err);
		return 1;
	}
	return 0;
}

/* A flag's text into its value: dollars, a share, or an integer. */
static int flag_value(int f, const char *s, int64_t *v)
{
	if (f >= F_MEAN) { /* hundredths: at most two decimals */
		if (engy_money_parse(s, v) || *v % 10000 ||
		    *v / 10000 > ENGY_CS_MANT_MAX_CENTI)
			return -EINVAL;
		*v /= 10000;
		return 0;
	}
	if (f >= F_PIN)
		return engy_money_parse(s, v);
	if (f == F_P)
		return engy_money_parse(s, v) || *v > 1000000 ? -EINVAL : 0;
	if (f == F_RATE)
		return admin_int(s, 0, 1000000000000ll, v);
	return admin_int(s, f == F_V ? 0 : 1, UINT32_MAX, v);
}

/* A --gemm-* flag's text into the store's unit: a count, thousandths (z,
 * c_el: 0 or 1..1000) or millionths (rate: 0..1). */
static int gemm_flag_value(int g, const char *s, int64_t *v)
{
	if (g == G_RATE)
		return engy_money_parse(s, v) || *v > 1000000 ? -EINVAL : 0;
	if (g == G_Z || g == G_CEL) {
		if (engy_money_parse(s, v) || *v % 1000 ||
		    (*v && (*v < 1000000 || *v > 1000000000)))
			return -EINVAL;
		*v /= 1000;
		return 0;
	}
	return admin_int(s, 0,
			 g == G_LAYERS ? 65536
			 : g == G_PROJ ? 64
				       : 4096,
			 v);
}

static uint32_t *gemm_field(struct engy_model *m, int g)
{
	uint32_t *u[] = { &m->gemm_layers,	&m->gemm_tokens,
			  &m->gemm_projections, &m->gemm_spots,
			  &m->gemm_z_milli,	&m->gemm_c_el_milli,
			  &m->gemm_rate_ppm };

	return u[g - G_LAYERS];
}

/* The spec's gemm_* fields into @m: those in the file, or all of them
 * (the file's or §6's defaults) when @all. */
static void gemm_from_spec(struct engy_model *m,
			   const struct engy_cspec_gemm *g, int all)
{
	const uint32_t v[G_N] = {
		g->layers,
		g->tokens,
		g->projections,
		g->spots,
		(uint32_t)(g->z * 1000 + 0.5),
		(uint32_t)(g->c_el * 1000 + 0.5),
		(uint32_t)(g->rate * 1000000 + 0.5),
	};
	int i;

	for (i = 0; i < G_N; i++)
		if (all || (g->have & (1u << i)))
			*gemm_field(m, G_LAYERS + i) = v[i];
}

static void model_set(struct engy_model *m, int f, int64_t v)
{
	uint32_t *u[] = { &m->max_input_tokens, &m->max_output_tokens,
			  &m->max_request_s,	&m->toploc_topk,
			  &m->toploc_v,		&m->toploc_p_ppm,
			  &m->qual_ttft_p99_ms, &m->qual_tpot_p99_ms };

	if (f < F_RATE)
		*u[f] = (uint32_t)v;
	else if (f == F_RATE)
		m->score_rate = v;
	else if (f == F_PIN)
		m->price.input = v;
	else if (f == F_PCACHE)
		m->price.cached_input = v;
	else if (f == F_POUT)
		m->price.output = v;
	else if (f == F_MEAN)
		m->toploc_mant_mean_centi = (uint16_t)v;
	else
		m->toploc_mant_median_centi = (uint16_t)v;
}

static void print_model(const struct engy_model *m)
{
	char pi[32], pc[32], po[32], p[32];

	printf("model name=%s status=%s price_input=%s price_cached_input=%s price_output=%s score_rate=%lld max_input_tokens=%u max_output_tokens=%u max_request_s=%u toploc_topk=%u toploc_v=%u toploc_p=%s qual_ttft_p99_ms=%u qual_tpot_p99_ms=%u toploc_mant_mean=%u.%02u toploc_mant_median=%u.%02u",
	       m->name,
	       m->status == ENGY_MODEL_DISABLED ? "disabled" : "enabled",
	       admin_usd(pi, m->price.input),
	       admin_usd(pc, m->price.cached_input),
	       admin_usd(po, m->price.output), (long long)m->score_rate,
	       m->max_input_tokens, m->max_output_tokens, m->max_request_s,
	       m->toploc_topk, m->toploc_v, admin_usd(p, m->toploc_p_ppm),
	       m->qual_ttft_p99_ms, m->qual_tpot_p99_ms,
	       m->toploc_mant_mean_centi / 100u,
	       m->toploc_mant_mean_centi % 100u,
	       m->toploc_mant_median_centi / 100u,
	       m->toploc_mant_median_centi % 100u);
	printf(" gemm_layers=%u gemm_tokens=%u gemm_projections=%u gemm_spots=%u gemm_z=%u.%03u gemm_c_el=%u.%03u gemm_rate=%s\n",
	       m->gemm_layers, m->gemm_tokens, m->gemm_projections,
	       m->gemm_spots, m->gemm_z_milli / 1000u, m->gemm_z_milli % 1000u,
	       m->gemm_c_el_milli / 1000u, m->gemm_c_el_milli % 1000u,
	       admin_usd(p, m->gemm_rate_ppm));
}

static void print_root(const struct engy_model_root *r)
{
	static const uint8_t zero[32];
	char h[65], s[65], t[32];

	admin_hex32_str(r->root, h);
	admin_hex32_str(r->spec_root, s);
	printf("root %s model=%s quant=%s arch=%s spec_root=%s added=%s\n", h,
	       r->model, r->quant[0] ? r->quant : "-",
	       r->arch[0] ? r->arch : "-",
	       memcmp(r->spec_root, zero, 32) ? s : "-",
	       admin_time(t, r->added_ms));
}

/* Put a root for @model: --root, else the spec's own model_root; its
 * pinned spec_root is --spec-root, else the spec's model_root. */
static int put_root(struct admin *a, const char *model, const char *hex,
		    const char *quant, const struct engy_cspec *sp,
		    const char *spec_hex)
{
	struct engy_model_root r;
	int rc;

	memset(&r, 0, sizeof(r));
	if (hex && admin_hex32(hex, r.root))
		return admin_usage("admin models",
				   "--root takes 64 hex digits");
	if (!hex && !sp)
		return admin_usage("admin models",
				   "--spec-root needs --root or --spec");
	if (!hex)
		memcpy(r.root, sp->model_root, 32);
	if (sp) {
		memcpy(r.spec_root, sp->model_root, 32);
		memcpy(r.arch, sp->arch, sizeof(r.arch));
	}
	if (spec_hex && admin_hex32(spec_hex, r.spec_root))
		return admin_usage("admin models",
				   "--spec-root takes 64 hex digits");
	snprintf(r.model, sizeof(r.model), "%s", model);
	snprintf(r.quant, sizeof(r.quant), "%s", quant ? quant : "");
	rc = a->ops->model_root_put(a->inst, &r);
	if (!rc)
		rc = a->ops->model_root_get(a->inst, r.root, &r);
	if (rc)
		return admin_fail("models: root of", model, rc);
	print_root(&r);
	return 0;
}

static int mod_put(struct admin *a, int argc, char **argv)
{
	const char *spec = NULL, *root = NULL, *quant = NULL, *name;
	const char *spec_root = NULL;
	int have[F_N] = { 0 }, c, rc, status = 0, fresh = 0, i;
	int64_t val[F_N], gval[G_N];
	int ghave[G_N] = { 0 };
	struct engy_cspec_gemm gdef;
	struct engy_model m;
	struct engy_cspec sp;

	while ((c = getopt_long(argc, argv, "", put_lo, NULL)) != -1) {
		if (c >= 0 && c < F_N) {
			if (flag_value(c, optarg, &val[c]))
				return admin_usage("admin models put",
						   "bad value for a flag");
			have[c] = 1;
		} else if (c >= G_LAYERS && c < G_END) {
			if (gemm_flag_value(c, optarg, &gval[c - G_LAYERS]))
				return admin_usage("admin models put",
						   "bad value for a flag");
			ghave[c - G_LAYERS] = 1;
		} else if (c == 's') {
			spec = optarg;
		} else if (c == 'r') {
			root = optarg;
		} else if (c == 'q') {
			quant = optarg;
		} else if (c == 'S') {
			spec_root = optarg;
		} else if (c == 'e' || c == 'd') {
			status = c == 'e' ? ENGY_MODEL_ENABLED
					  : ENGY_MODEL_DISABLED;
		} else {
			return admin_usage("admin models put",
					   "unknown option");
		}
	}
	if (optind != argc - 1)
		return admin_usage("admin models put", "give one NAME");
	name = argv[optind];
	if (spec && spec_load(spec, &sp))
		return 1;
	rc = a->ops->model_get(a->inst, name, &m);
	if (rc == -ENOENT) {
		memset(&m, 0, sizeof(m));
		snprintf(m.name, sizeof(m.name), "%s", name);
		m.toploc_topk = 128;
		m.toploc_v = 40;
		m.toploc_p_ppm = 990000;
		engy_cspec_gemm_defaults(&gdef);
		gemm_from_spec(&m, &gdef, 1);
		fresh = 1;
	} else if (rc) {
		return admin_fail("models put", name, rc);
	}
	for (i = 0; spec && i < F_N; i++)
		if (sp.have[i])
			model_set(&m, i, sp.val[i]);
	if (spec)
		gemm_from_spec(&m, &sp.gemm, 0);
	for (i = 0; i < F_N; i++)
		if (have[i])
			model_set(&m, i, val[i]);
	for (i = 0; i < G_N; i++)
		if (ghave[i])
			*gemm_field(&m, G_LAYERS + i) = (uint32_t)gval[i];
	if (status)
		m.status = (uint32_t)status;
	if (fresh &&
	    (!m.max_input_tokens || !m.max_output_tokens || !m.max_request_s))
		return admin_usage(
			"admin models put",
			"a new model needs --max-input-tokens, --max-output-tokens and --max-request-s (or a spec that has them)");
	rc = a->ops->model_put(a->inst, &m);
	if (!rc)
		rc = a->ops->model_get(a->inst, name, &m);
	if (rc)
		return admin_fail("models put", name, rc);
	print_model(&m);
	if (root || spec || spec_root)
		return put_root(a, name, root, quant, spec ? &sp : NULL,
				spec_root);
	return 0;
}

static int mod_list(struct admin *a, int argc, char **argv)
{
	struct engy_model *v;
	size_t n, i;
	int rc;

	if (argc != 1)
		return admin_usage("admin models list", "takes no arguments");
	rc = a->ops->model_list(a->inst, &v, &n);
	if (rc)
		return admin_fail("models list", NULL, rc);
	for (i = 0; i < n; i++)
		print_model(&v[i]);
	free(v);
	return 0;
}

static int mod_roots(struct admin *a, const char *model)
{
	struct engy_model_root *r;
	size_t n, i;
	int rc = a->ops->model_root_list(a->inst, model, &r, &n);

	if (rc)
		return admin_fail("models roots", model, rc);
	for (i = 0; i < n; i++)
		print_root(&r[i]);
	free(r);
	return 0;
}

static int mod_show(struct admin *a, int argc, char **argv)
{
	struct engy_model m;
	int rc;

	if (argc != 2)
		return admin_usage("admin models show", "give one NAME");
	rc = a->ops->model_get(a->inst, argv[1], &m);
	if (rc)
		return admin_fail("models show", argv[1], rc);
	print_model(&m);
	return mod_roots(a, argv[1]);
}

static int mod_roots_cmd(struct admin *a, int argc, char **argv)
{
	if (argc > 2)
		return admin_usage("admin models roots",
				   "give at most one MODEL");
	return mod_roots(a, argc == 2 ? argv[1] : NULL);
}

static int mod_root_add(struct admin *a, int argc, char **argv)
{
	const char *spec = NULL, *root = NULL, *quant = NULL;
	const char *spec_root = NULL;
	struct engy_cspec sp;
	int c;

	while ((c = getopt_long(argc, argv, "", put_lo, NULL)) != -1) {
		if (c == 's')
			spec = optarg;
		else if (c == 'r')
			root = optarg;
		else if (c == 'q')
			quant = optarg;
		else if (c == 'S')
			spec_root = optarg;
		else
			return admin_usage("admin models root-add",
					   "unknown option");
	}
	if (optind != argc - 1 || (!root && !spec))
		return admin_usage("admin models root-add",
				   "give MODEL and --root HEX (or --spec)");
	if (spec && spec_load(spec, &sp))
		return 1;
	return put_root(a, argv[optind], root, quant, spec ? &sp : NULL,
			spec_root);
}

static int mod_root_del(struct admin *a, int argc, char **argv)
{
	uint8_t r[32];
	int rc;

	if (argc != 2 || admin_hex32(argv[1], r))
		return admin_usage("admin models root-del",
				   "give one root as 64 hex digits");
	rc = a->ops->model_root_del(a->inst, r);
	if (rc)
		return admin_fail("models root-del", argv[1], rc);
	printf("root %s deleted\n", argv[1]);
	return 0;
}

int admin_models(struct admin *a, int argc, char **argv)
{
	static const struct admin_cmd cmds[] = {
		{ "put", mod_put },
		{ "list", mod_list },
		{ "show", mod_show },
		{ "roots", mod_roots_cmd },
		{ "root-add", mod_root_add },
		{ "root-del", mod_root_del },
		{ NULL, NULL },
	};

	return admin_dispatch(a, "models", models_usage, cmds, argc, argv);
}

static void print_miner(const struct engy_miner *m)
{
	char t[32];

	printf("miner id=%lld hotkey=%s label=\"%s\" status=%s first_party=%s priority=%d key=%s created=%s\n",
	       (long long)m->id, m->hotkey, m->label,
	       m->status == ENGY_MINER_DISABLED ? "disabled" : "active",
	       m->first_party ? "yes" : "no", m->priority, m->key_shown,
	       admin_time(t, m->created_ms));
}

/* The registered miner with @hotkey: 0 or -ENOENT (or an error). */
static int miner_find(struct admin *a, const char *hotkey,
		      struct engy_miner *out)
{
	struct engy_miner *v;
	size_t n, i;
	int rc = a->ops->miner_list(a->inst, &v, &n);

	if (rc)
		return rc;
	rc = -ENOENT;
	for (i = 0; i < n && rc; i++)
		if (strcmp(v[i].hotkey, hotkey) == 0) {
			*out = v[i];
			rc = 0;
		}
	free(v);
	return rc;
}

static int miner_write(struct admin *a, const struct engy_miner *m, int new_key,
		       const char *what)
{
	struct engy_miner out;
	char *key = NULL;
	int rc = a->ops->miner_put(a->inst, m, new_key ? &key : NULL, &out);

	if (rc)
		return admin_fail(what, m->hotkey, rc);
	if (!key) {
		print_miner(&out);
		return 0;
	}
	printf("%s\n", key);
	fflush(stdout);
	fprintf(stderr,
		"engyctl: MINER_KEY for %s (%s...): shown once, not stored; hand it to the miner now\n",
		out.hotkey, out.key_shown);
	sodium_memzero(key, strlen(key));
	free(key);
	return 0;
}

static int miner_cmd(struct admin *a, int argc, char **argv, int reg)
{
	static const struct option lo[] = {
		{ "label", required_argument, NULL, 'l' },
		{ "priority", required_argument, NULL, 'p' },
		{ "first-party", no_argument, NULL, 'f' },
		{ "no-first-party", no_argument, NULL, 'F' },
		{ "enable", no_argument, NULL, 'e' },
		{ "disable", no_argument, NULL, 'd' },
		{ "rotate-key", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	const char *where = reg ? "admin miners register" : "admin miners set";
	struct engy_miner m, cur;
	int c, rc, rotate = reg, label_set = 0;
	int64_t v;

	memset(&m, 0, sizeof(m));
	m.priority = INT32_MIN; /* unset */
	m.first_party = 2;	/* unset */
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'l' && strlen(optarg) < sizeof(m.label))
			label_set = snprintf(m.label, sizeof(m.label), "%s",
					     optarg) >= 0;
		else if (c == 'p' &&
			 !admin_int(optarg, INT32_MIN + 1, INT32_MAX, &v))
			m.priority = (int32_t)v;
		else if (c == 'f' || c == 'F')
			m.first_party = c == 'f';
		else if ((c == 'e' || c == 'd') && !reg)
			m.status = c == 'e' ? ENGY_MINER_ACTIVE
					    : ENGY_MINER_DISABLED;
		else if (c == 'r' && !reg)
			rotate = 1;
		else
			return admin_usage(where,
					   "unknown option or bad value");
	}
	if (optind != argc - 1 || strlen(argv[optind]) >= sizeof(m.hotkey))
		return admin_usage(where, "give one HOTKEY (an SS58 address)");
	snprintf(m.hotkey, sizeof(m.hotkey), "%s", argv[optind]);
	rc = miner_find(a, m.hotkey, &cur);
	if (reg && rc == 0) {
		fprintf(stderr,
			"engyctl: admin miners register: %s is registered already (miners set --rotate-key issues a new key)\n",
			m.hotkey);
		return 1;
	}
	if (rc && (rc != -ENOENT || !reg))
		return admin_fail(reg ? "miners register" : "miners set",
				  m.hotkey, rc);
	if (!reg) {
		if (!label_set)
			memcpy(m.label, cur.label, sizeof(m.label));
		if (!m.status)
			m.status = cur.status;
		if (m.priority == INT32_MIN)
			m.priority = cur.priority;
		if (m.first_party == 2)
			m.first_party = cur.first_party;
	}
	if (m.priority == INT32_MIN)
		m.priority = 0;
	if (m.first_party == 2)
		m.first_party = 0;
	return miner_write(a, &m, rotate,
			   reg ? "miners register" : "miners set");
}

static int miner_register(struct admin *a, int argc, char **argv)
{
	return miner_cmd(a, argc, argv, 1);
}

static int miner_set(struct admin *a, int argc, char **argv)
{
	return miner_cmd(a, argc, argv, 0);
}

static int miner_list(struct admin *a, int argc, char **argv)
{
	struct engy_miner *v;
	size_t n, i;
	int rc;

	if (argc != 1)
		return admin_usage("admin miners list", "takes no arguments");
	rc = a->ops->miner_list(a->inst, &v, &n);
	if (rc)
		return admin_fail("miners list", NULL, rc);
	for (i = 0; i < n; i++)
		print_miner(&v[i]);
	free(v);
	return 0;
}

int admin_miners(struct admin *a, int argc, char **argv)
{
	static const struct admin_cmd cmds[] = {
		{ "register", miner_register },
		{ "set", miner_set },
		{ "list", miner_list },
		{ NULL, NULL },
	};

	return admin_dispatch(a, "miners", miners_usage, cmds, argc, argv);
}
