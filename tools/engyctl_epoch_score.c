// SPDX-License-Identifier: MIT
/*
 * engyctl epoch score: recompute a closed epoch from its public
 * aggregates (specs/scoring.md), so that anyone can falsify a published
 * result:
 *
 *   engyctl epoch score --aggregates FILE [--netuid N] [--epoch I]
 *                       [--owner HOTKEY] [--out FILE]
 *                       [--digest HEX | --payload FILE]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "engyctl.h"
#include "epoch_sign.h"
#include "fsutil.h"
#include "score.h"

int engyctl_epoch_score(int argc, char **argv);

#define AGGREGATES_MAX (64u << 20)
#define PAYLOAD_MAX    (1u << 20) /* the light validator's cap */

static const char usage_text[] =
	"usage: engyctl epoch score --aggregates FILE [--netuid N] [--epoch I]\n"
	"                           [--owner HOTKEY] [--out FILE]\n"
	"                           [--digest HEX | --payload FILE]\n"
	"\n"
	"Settles the epoch whose public aggregates FILE holds (- = stdin) by\n"
	"the rules of specs/scoring.md and prints its result_json on the first\n"
	"line, then `digest HEX`, one `weight HOTKEY U16` line per weight and\n"
	"one `row ...` line per (miner, model).  --netuid, --epoch and --owner\n"
	"supply what the file lacks and must agree with what it has.  --out\n"
	"writes result_json's exact bytes (what `engyctl epoch sign` signs).\n"
	"--digest or --payload (a published payload) compares: exit 1 when the\n"
	"published result differs from the recomputed one.\n";

struct sopts {
	const char *agg, *owner, *out, *digest, *payload;
	uint64_t netuid, epoch;
	int have_netuid, have_epoch;
};

static int parse(int argc, char **argv, struct sopts *o)
{
	static const struct option lo[] = {
		{ "aggregates", required_argument, NULL, 'a' },
		{ "netuid", required_argument, NULL, 'n' },
		{ "epoch", required_argument, NULL, 'e' },
		{ "owner", required_argument, NULL, 'o' },
		{ "out", required_argument, NULL, 'w' },
		{ "digest", required_argument, NULL, 'd' },
		{ "payload", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, li = 0, bad;

	memset(o, 0, sizeof(*o));
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, &li)) != -1) {
		bad = 0;
		switch (c) {
		case 'a':
			o->agg = optarg;
			break;
		case 'n':
			bad = engyctl_parse_u64(optarg, 65535, &o->netuid) < 0;
			o->have_netuid = 1;
			break;
		case 'e':
			bad = engyctl_parse_u64(optarg, ENGY_EPOCH_MAX_INDEX,
						&o->epoch) < 0;
			o->have_epoch = 1;
			break;
		case 'o':
			o->owner = optarg;
			break;
		case 'w':
			o->out = optarg;
			break;
		case 'd':
			o->digest = optarg;
			bad = strlen(optarg) != ENGY_EPOCH_DIGEST_HEX ||
			      strspn(optarg, "0123456789abcdefABCDEF") !=
				      ENGY_EPOCH_DIGEST_HEX;
			break;
		case 'p':
			o->payload = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return -1;
		default:
			fprintf(stderr,
				"engyctl: epoch score: unknown option or missing value: '%s' (--help)\n",
				argv[optind - 1]);
			return 2;
		}
		if (bad) {
			fprintf(stderr,
				"engyctl: epoch score: bad value '%s' for --%s\n",
				optarg, lo[li].name);
			return 2;
		}
	}
	if (optind != argc || !o->agg || (o->digest && o->payload)) {
		fprintf(stderr,
			"engyctl: epoch score: --aggregates FILE is required, takes no other argument, and --digest and --payload exclude each other (--help)\n");
		return 2;
	}
	return 0;
}

/* The command line supplies what the file lacks and must agree with the rest. */
static int merge(const struct sopts *o, struct engy_score_doc *d)
{
	if (o->have_netuid && d->have_netuid && o->netuid != d->in.netuid)
		return engyctl_fail("epoch score: --netuid %" PRIu64
				    " but the aggregates' netuid is %u",
				    o->netuid, (unsigned)d->in.netuid);
	if (o->have_epoch && d->have_epoch && o->epoch != d->in.epoch_index)
		return engyctl_fail(
			"epoch score: --epoch %" PRIu64
			" but the aggregates' epoch_index is %" PRIu64,
			o->epoch, d->in.epoch_index);
	if (o->owner && d->have_owner && strcmp(o->owner, d->owner))
		return engyctl_fail(
			"epoch score: --owner %s but the aggregates' owner_hotkey is %s",
			o->owner, d->owner);
	if (!o->have_netuid && !d->have_netuid)
		return engyctl_fail(
			"epoch score: %s: netuid: missing (give --netuid)",
			o->agg);
	if (!o->have_epoch && !d->have_epoch)
		return engyctl_fail(
			"epoch score: %s: epoch_index: missing (give --epoch)",
			o->agg);
	if (!o->owner && !d->have_owner)
		return engyctl_fail(
			"epoch score: %s: owner_hotkey: missing (give --owner)",
			o->agg);
	if (o->have_netuid)
		d->in.netuid = (uint16_t)o->netuid;
	if (o->have_epoch)
		d->in.epoch_index = o->epoch;
	if (o->owner)
		d->in.owner_hotkey = o->owner;
	return 0;
}

static void print(const struct engy_score_doc *d,
		  const struct engy_epoch_result *r, const char *digest)
{
	size_t i;

	printf("%s\ndigest %s\n", r->result_json, digest);
	for (i = 0; i < r->n_weights; i++)
		printf("weight %s %u\n", r->weights[i].hotkey,
		       (unsigned)r->weights[i].weight);
	for (i = 0; i < d->in.n_rows; i++) {
		const struct engy_epoch_row *row = &d->in.rows[i];
		const struct engy_epoch_row_result *rr = &r->rows[i];

		printf("row uid=%u hotkey=%s model=%s counted=%" PRIu64
		       " tokens=%" PRIu64 " score=%" PRIu64
		       " gate_reason=%s accept_bp=%u ttft_p99_ms=%" PRIu64
		       " tpot_p99_ms=%" PRIu64 "\n",
		       (unsigned)row->uid, row->hotkey, row->model,
		       row->counted, row->tokens, rr->score,
		       engy_gate_name(rr->gate), (unsigned)rr->accept_bp,
		       rr->ttft_p99_ms, rr->tpot_p99_ms);
	}
	fflush(stdout);
}

/*
 * A published payload against the recomputed result: its result_json
 * (which names the netuid and epoch) and its digest.  The signature is
 * `engyctl epoch verify --payload`'s business.
 */
static int compare_payload(const char *path, const struct engy_epoch_result *r,
			   const char *digest)
{
	const cJSON *rj, *dg;
	uint8_t *buf = NULL;
	size_t len = 0;
	cJSON *p;
	int rc;

	rc = engy_read_file(path, PAYLOAD_MAX, &buf, &len);
	if (rc < 0)
		return engyctl_fail("epoch score: --payload %s: %s", path,
				    strerror(-rc));
	p = cJSON_ParseWithLength((const char *)buf, len);
	free(buf);
	rj = cJSON_GetObjectItemCaseSensitive(p, "result_json");
	dg = cJSON_GetObjectItemCaseSensitive(p, "digest");
	if (!cJSON_IsObject(p))
		rc = engyctl_fail(
			"epoch score: --payload %s: not a JSON object", path);
	else if (!cJSON_IsString(rj))
		rc = engyctl_fail(
			"epoch score: --payload %s: result_json: missing or not a string",
			path);
	else if (!cJSON_IsString(dg))
		rc = engyctl_fail(
			"epoch score: --payload %s: digest: missing or not a string",
			path);
	else if (strcmp(rj->valuestring, r->result_json))
		rc = engyctl_fail(
			"epoch score: --payload %s: result_json differs from the recomputed one (digest %s)",
			path, digest);
	else if (strcasecmp(dg->valuestring, digest))
		rc = engyctl_fail(
			"epoch score: --payload %s: digest %s is not the result's %s",
			path, dg->valuestring, digest);
	else
		printf("ok: %s matches the recomputed epoch\n", path);
	cJSON_Delete(p);
	return rc;
}

int engyctl_epoch_score(int argc, char **argv)
{
	struct engy_epoch_result res = { 0 };
	char why[256], digest[ENGY_EPOCH_DIGEST_HEX + 1];
	struct engy_score_doc *d = NULL;
	struct sopts o;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	rc = engy_read_file(o.agg, AGGREGATES_MAX, &buf, &len);
	if (rc == -EFBIG)
		return engyctl_fail("epoch score: %s: over %u bytes", o.agg,
				    AGGREGATES_MAX);
	if (rc < 0)
		return engyctl_fail("epoch score: %s: %s", o.agg,
				    strerror(-rc));
	rc = engy_score_parse((const char *)buf, len, &d, why, sizeof(why));
	free(buf);
	if (rc == -ENOMEM)
		return engyctl_fail("epoch score: out of memory");
	if (rc)
		return engyctl_fail("epoch score: %s: %s", o.agg, why);
	rc = merge(&o, d);
	if (rc)
		goto out;
	rc = engy_score_settle(&d->in, NULL, &res);
	if (rc) {
		rc = rc == -ENOMEM ? engyctl_fail("epoch score: out of memory")
				   : engyctl_fail("epoch score: %s: %s", o.agg,
						  res.error);
		goto out;
	}
	engy_epoch_digest(res.result_json, res.result_len, digest);
	if (o.out) {
		rc = engy_write_file_atomic(o.out, res.result_json,
					    res.result_len, 0644);
		if (rc < 0) {
			rc = engyctl_fail("epoch score: --out %s: %s", o.out,
					  strerror(-rc));
			goto out;
		}
	}
	print(d, &res, digest);
	rc = 0;
	if (o.digest && strcasecmp(o.digest, digest))
		rc = engyctl_fail(
			"epoch score: digest mismatch: published %s, recomputed %s",
			o.digest, digest);
	else if (o.payload)
		rc = compare_payload(o.payload, &res, digest);
out:
	engy_epoch_result_release(&res);
	engy_score_doc_free(d);
	return rc;
}
