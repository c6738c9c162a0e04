/* SPDX-License-Identifier: MIT */
/*
 * A driver for the chain integration tests (never installed):
 *
 *   chain_tool extrinsic key=value...   build and sign set_weights; print
 *       call, payload, signed (the bytes signed), signature, extrinsic
 *       and hash as "name hex" lines.  Keys: mini rng spec tx genesis
 *       era_period era_block era_hash nonce tip pallet call netuid uids
 *       weights version_key ids (lists comma separated); call_hex
 *       signs that call instead of set_weights (the commit extrinsic),
 *       meta=FILE takes the signed extensions from that metadata (as
 *       chain-subtensor does) instead of ids.
 *   chain_tool meta FILE                parse a metadata blob (hex text, as
 *       state_getMetadata answers) and print what chain-subtensor uses.
 *   chain_tool commit FILE key=value... the timelocked commit call
 *       against that metadata: "name", "call" lines, or "error" with the
 *       reason.  Keys: version (0: no storage item) netuid round commit
 *       (hex).
 *   chain_tool payload key=value...     the commit plaintext (SCALE) as
 *       hex.  Keys: version hotkey (hex) uids weights version_key.
 *   chain_tool reveal key=value...      the reveal block and drand round:
 *       "block", "round" lines or "error".  Keys: block period block_time
 *       now tempo, then netuid (epochs every tempo+1 blocks) or last
 *       pending index since (the stateful epoch schedule).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit.h"
#include "extrinsic.h"
#include "fsutil.h"
#include "metadata.h"
#include "scale.h"
#include "sr25519.h"

static const char *opt(int argc, char **argv, const char *key);
static int load_meta(const char *path, struct engy_metadata **md);

static const char *arg(int argc, char **argv, const char *key)
{
	size_t n = strlen(key);
	int i;

	for (i = 2; i < argc; i++)
		if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=')
			return argv[i] + n + 1;
	fprintf(stderr, "chain_tool: missing %s=\n", key);
	exit(2);
}

static uint64_t num(int argc, char **argv, const char *key)
{
	return strtoull(arg(argc, argv, key), NULL, 0);
}

static void hex32(int argc, char **argv, const char *key, uint8_t out[32])
{
	if (engy_hex_decode(out, 32, arg(argc, argv, key)) != 32) {
		fprintf(stderr, "chain_tool: %s is not 32 bytes of hex\n", key);
		exit(2);
	}
}

static size_t list16(const char *s, uint16_t *out, size_t cap)
{
	size_t n = 0;

	while (*s && n < cap) {
		char *end;

		out[n++] = (uint16_t)strtoul(s, &end, 10);
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

static void print(const char *name, const uint8_t *p, size_t n)
{
	char *h = malloc(2 * n + 3);

	engy_hex_encode(h, p, n);
	printf("%s %s\n", name, h + 2);
	free(h);
}

static int extrinsic(int argc, char **argv)
{
	static uint16_t uids[4096], w[4096];
	const char *ids[ENGY_EXT_MAX];
	char idbuf[2048], err[256], *tok, *save;
	struct engy_sr25519_keypair kp;
	struct engy_ext_layout l;
	struct engy_ext_params p = { 0 };
	struct engy_scale_buf call, pay, ext;
	uint8_t mini[32], rng[32], sig[64], hash[32];
	const uint8_t *msg;
	size_t n, nw, n_ids = 0, mlen;

	hex32(argc, argv, "mini", mini);
	hex32(argc, argv, "rng", rng);
	p.spec_version = (uint32_t)num(argc, argv, "spec");
	p.tx_version = (uint32_t)num(argc, argv, "tx");
	hex32(argc, argv, "genesis", p.genesis);
	p.era_period = num(argc, argv, "era_period");
	p.era_block = num(argc, argv, "era_block");
	hex32(argc, argv, "era_hash", p.era_hash);
	p.nonce = (uint32_t)num(argc, argv, "nonce");
	p.tip = num(argc, argv, "tip");
	n = list16(arg(argc, argv, "uids"), uids, 4096);
	nw = list16(arg(argc, argv, "weights"), w, 4096);
	snprintf(idbuf, sizeof(idbuf), "%s", arg(argc, argv, "ids"));
	for (tok = strtok_r(idbuf, ",", &save); tok && n_ids < ENGY_EXT_MAX;
	     tok = strtok_r(NULL, ",", &save))
		ids[n_ids++] = tok;
	if (opt(argc, argv, "meta")) {
		/* The runtime's own layout, as chain-subtensor reads it. */
		struct engy_metadata *md;
		int lrc;

		if (load_meta(opt(argc, argv, "meta"), &md))
			return 1;
		lrc = engy_ext_layout_meta(&l, md, err, sizeof(err));
		engy_meta_free(md);
		if (lrc) {
			fprintf(stderr, "chain_tool: %s\n", err);
			return 2;
		}
	} else if (n == nw &&
		   engy_ext_layout_names(&l, ids, n_ids, err, sizeof(err))) {
		fprintf(stderr, "chain_tool: %s\n", err);
		return 2;
	}
	if (n != nw) {
		fprintf(stderr,
			"chain_tool: uids and weights differ in length\n");
		return 2;
	}
	engy_sr25519_keypair_from_mini(&kp, mini, ENGY_SR25519_EXPAND_ED25519);
	engy_scale_buf_init(&call);
	engy_scale_buf_init(&pay);
	engy_scale_buf_init(&ext);
	if (opt(argc, argv, "call_hex")) {
		uint8_t *cb = NULL;
		size_t cn = 0;

		if (engy_hex_decode_alloc(opt(argc, argv, "call_hex"), &cb,
					  &cn)) {
			fprintf(stderr, "chain_tool: call_hex= is not hex\n");
			return 2;
		}
		engy_scale_put(&call, cb, cn);
		free(cb);
	} else {
		engy_call_set_weights(NULL, (uint8_t)num(argc, argv, "pallet"),
				      (uint8_t)num(argc, argv, "call"),
				      (uint16_t)num(argc, argv, "netuid"), uids,
				      w, n, num(argc, argv, "version_key"),
				      &call);
	}
	engy_ext_payload(&l, &p, call.p, call.len, &pay);
	msg = engy_ext_to_sign(pay.p, pay.len, hash, &mlen);
	engy_sr25519_sign_rng(&kp, ENGY_SR25519_SUBSTRATE_CTX, msg, mlen, rng,
			      sig);
	engy_ext_signed(&l, &p, call.p, call.len, kp.pub, sig, &ext);
	print("call", call.p, call.len);
	print("payload", pay.p, pay.len);
	print("signed", msg, mlen);
	print("signature", sig, 64);
	print("extrinsic", ext.p, ext.len);
	engy_ext_hash(ext.p, ext.len, hash);
	print("hash", hash, 32);
	print("public", kp.pub, 32);
	engy_scale_buf_free(&call);
	engy_scale_buf_free(&pay);
	engy_scale_buf_free(&ext);
	return 0;
}

static int load_meta(const char *path, struct engy_metadata **md)
{
	uint8_t *text, *blob;
	size_t len, n;
	char err[256];
	int rc;

	if (engy_read_file(path, 64u << 20, &text, &len)) {
		fprintf(stderr, "chain_tool: cannot read %s\n", path);
		return 1;
	}
	while (len && (text[len - 1] == '\n' || text[len - 1] == '"'))
		text[--len] = '\0';
	rc = engy_hex_decode_alloc((const char *)text + (text[0] == '"'), &blob,
				   &n);
	free(text);
	if (rc) {
		fprintf(stderr, "chain_tool: %s is not hex\n", path);
		return 1;
	}
	rc = engy_meta_parse(blob, n, md, err, sizeof(err));
	free(blob);
	if (rc) {
		printf("error %s\n", err);
		return 1;
	}
	return 0;
}

static int commit(int argc, char **argv)
{
	struct engy_metadata *md;
	struct engy_cr_call c;
	struct engy_scale_buf call;
	uint8_t *bytes = NULL;
	size_t n = 0;
	char err[256];
	int rc;

	if (load_meta(argv[2], &md))
		return 1;
	if (engy_hex_decode_alloc(arg(argc, argv, "commit"), &bytes, &n)) {
		fprintf(stderr, "chain_tool: commit= is not hex\n");
		engy_meta_free(md);
		return 2;
	}
	engy_scale_buf_init(&call);
	rc = engy_cr_find_call(md, (unsigned)num(argc, argv, "version"), &c,
			       err, sizeof(err));
	if (!rc)
		rc = engy_cr_call_encode(
			md, &c, (uint16_t)num(argc, argv, "netuid"), bytes, n,
			num(argc, argv, "round"), &call, err, sizeof(err));
	if (rc) {
		printf("error %s\n", err);
	} else {
		printf("name %s\n", c.name);
		print("call", call.p, call.len);
	}
	free(bytes);
	engy_scale_buf_free(&call);
	engy_meta_free(md);
	return rc ? 1 : 0;
}

static int payload(int argc, char **argv)
{
	uint16_t uids[4096], w[4096];
	uint8_t *hk = NULL;
	size_t n, nw, hn = 0;
	struct engy_scale_buf out;
	char err[256];
	int rc;

	n = list16(arg(argc, argv, "uids"), uids, 4096);
	nw = list16(arg(argc, argv, "weights"), w, 4096);
	if (n != nw ||
	    engy_hex_decode_alloc(arg(argc, argv, "hotkey"), &hk, &hn) ||
	    hn != 32) {
		fprintf(stderr, "chain_tool: bad uids/weights/hotkey\n");
		free(hk);
		return 2;
	}
	engy_scale_buf_init(&out);
	rc = engy_cr_payload((unsigned)num(argc, argv, "version"), hk, uids, w,
			     n, num(argc, argv, "version_key"), &out, err,
			     sizeof(err));
	if (rc)
		printf("error %s\n", err);
	else
		print("payload", out.p, out.len);
	free(hk);
	engy_scale_buf_free(&out);
	return rc ? 1 : 0;
}

static const char *opt(int argc, char **argv, const char *key)
{
	size_t n = strlen(key);

	for (int i = 2; i < argc; i++)
		if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=')
			return argv[i] + n + 1;
	return NULL;
}

static int reveal(int argc, char **argv)
{
	uint64_t block = num(argc, argv, "block"),
		 period = num(argc, argv, "period");
	double bt = strtod(arg(argc, argv, "block_time"), NULL);
	double now = strtod(arg(argc, argv, "now"), NULL);
	uint16_t tempo = (uint16_t)num(argc, argv, "tempo");
	uint64_t rb = 0, round = 0;
	char err[256];
	int rc;

	if (opt(argc, argv, "netuid")) {
		struct engy_cr_sched s = { .netuid = (uint16_t)num(argc, argv,
								   "netuid"),
					   .tempo = tempo,
					   .reveal_period = period,
					   .block = block,
					   .block_time = bt,
					   .now = now };
		rc = engy_cr_reveal_round(&s, &round, &rb, err, sizeof(err));
	} else {
		struct engy_cr_epochs e = {
			.last_epoch_block = num(argc, argv, "last"),
			.pending_epoch_at = num(argc, argv, "pending"),
			.epoch_index = num(argc, argv, "index"),
			.blocks_since_last_step = num(argc, argv, "since"),
			.block = block,
			.tempo = tempo,
		};
		rc = engy_cr_reveal_block_epochs(&e, period, &rb, err,
						 sizeof(err));
		if (!rc)
			rc = engy_cr_round_for_block(block, rb, bt, now, &round,
						     err, sizeof(err));
	}
	if (rc) {
		printf("error %s\n", err);
		return 1;
	}
	printf("block %" PRIu64 "\nround %" PRIu64 "\n", rb, round);
	return 0;
}

static int meta(const char *path)
{
	struct engy_metadata *md;
	struct engy_ext_layout l;
	uint8_t *text, *blob, pi, ci;
	size_t len, n, i;
	char err[256];
	int rc;

	if (engy_read_file(path, 64u << 20, &text, &len)) {
		fprintf(stderr, "chain_tool: cannot read %s\n", path);
		return 1;
	}
	while (len && (text[len - 1] == '\n' || text[len - 1] == '"'))
		text[--len] = '\0';
	rc = engy_hex_decode_alloc((const char *)text + (text[0] == '"'), &blob,
				   &n);
	free(text);
	if (rc) {
		fprintf(stderr, "chain_tool: %s is not hex\n", path);
		return 1;
	}
	rc = engy_meta_parse(blob, n, &md, err, sizeof(err));
	free(blob);
	if (rc) {
		printf("error %s\n", err);
		return 1;
	}
	printf("version %u\ntypes %u\npallets %u\n", md->version, md->n_types,
	       md->n_pallets);
	if (engy_meta_call(md, "SubtensorModule", "set_weights", &pi, &ci,
			   NULL) == 0)
		printf("set_weights %u %u\n", pi, ci);
	printf("extensions");
	for (i = 0; i < md->n_exts; i++)
		printf(" %s", md->exts[i].identifier);
	printf("\n");
	if (engy_ext_layout_meta(&l, md, err, sizeof(err)))
		printf("layout error %s\n", err);
	else
		printf("layout ok %zu\n", l.n);
	engy_meta_free(md);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "extrinsic") == 0)
		return extrinsic(argc, argv);
	if (argc == 3 && strcmp(argv[1], "meta") == 0)
		return meta(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "commit") == 0)
		return commit(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "payload") == 0)
		return payload(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "reveal") == 0)
		return reveal(argc, argv);
	fprintf(stderr, "usage: chain_tool extrinsic key=value... | chain_tool "
			"meta FILE | chain_tool commit FILE key=value... | "
			"chain_tool payload key=value...\n");
	return 2;
}
