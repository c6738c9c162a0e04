/* SPDX-License-Identifier: MIT */
/*
 * engyctl epoch: the signed epoch result (specs/signing.md).
 *
 *   engyctl epoch sign   --hotkey FILE --netuid N --epoch I [--payload] RESULT_JSON
 *   engyctl epoch verify --ss58 ADDR --netuid N --epoch I --sig HEX RESULT_JSON
 *   engyctl epoch verify --ss58 ADDR --netuid N --payload PAYLOAD_JSON
 *
 * RESULT_JSON is a file ("-" = stdin) whose exact bytes are signed.
 * Subcommands are rows of the table at the end; add new ones there.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "engyctl.h"
#include "epoch_sign.h"
#include "fsutil.h"
#include "hotkey.h"
#include "ss58.h"

int engyctl_epoch(int argc, char **argv);
int engyctl_epoch_score(int argc, char **argv); /* engyctl_epoch_score.c */

/* The light validator's payload cap (specs/settlement.md §5.1). */
#define EPOCH_MAX_INPUT (1u << 20)

static const char usage_text[] =
	"usage: engyctl epoch sign   --hotkey FILE --netuid N --epoch I [--payload] RESULT_JSON\n"
	"       engyctl epoch verify --ss58 ADDR --netuid N --epoch I --sig HEX RESULT_JSON\n"
	"       engyctl epoch verify --ss58 ADDR --netuid N --payload PAYLOAD_JSON\n"
	"       engyctl epoch score  --aggregates FILE [...] (engyctl epoch score --help)\n"
	"\n"
	"sign prints the sr25519 signature (128 hex digits) over\n"
	"engy-sn53:epoch:v1:<netuid>:<epoch>:<sha256 hex of RESULT_JSON's bytes>,\n"
	"or with --payload the whole published payload.  verify checks such a\n"
	"signature, or a payload as the light validator does, against the\n"
	"pinned hotkey ADDR; it exits 0 when it verifies, 1 when it does not.\n"
	"A file name of - reads stdin.\n";

static int usage(FILE *f, int rc)
{
	fputs(usage_text, f);
	return rc;
}

struct opts {
	const char *hotkey, *ss58, *sig;
	uint64_t netuid, epoch;
	int have_netuid, have_epoch, payload;
	const char *file;
};

/* Options shared by the subcommands; 0, -1 after --help, or exit status 2. */
static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "hotkey", required_argument, NULL, 'k' },
		{ "ss58", required_argument, NULL, 'a' },
		{ "sig", required_argument, NULL, 's' },
		{ "netuid", required_argument, NULL, 'n' },
		{ "epoch", required_argument, NULL, 'e' },
		{ "payload", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, li = 0;

	memset(o, 0, sizeof(*o));
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, &li)) != -1) {
		int bad = 0;

		switch (c) {
		case 'k':
			o->hotkey = optarg;
			break;
		case 'a':
			o->ss58 = optarg;
			break;
		case 's':
			o->sig = optarg;
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
		case 'p':
			o->payload = 1;
			break;
		case 'h':
			usage(stdout, 0);
			return -1;
		default:
			fprintf(stderr,
				"engyctl: epoch %s: unknown option or missing value: '%s' (--help)\n",
				argv[0], argv[optind - 1]);
			return 2;
		}
		if (bad) {
			fprintf(stderr,
				"engyctl: epoch %s: bad value '%s' for --%s\n",
				argv[0], optarg, lo[li].name);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr,
			"engyctl: epoch %s: give exactly one input file (- for stdin)\n",
			argv[0]);
		return 2;
	}
	o->file = argv[optind];
	return 0;
}

static int read_input(const char *what, const char *path, uint8_t **buf,
		      size_t *len)
{
	int rc = engy_read_file(path, EPOCH_MAX_INPUT, buf, len);

	if (rc == -EFBIG)
		return engyctl_fail("epoch %s: %s: over %u bytes", what, path,
				    EPOCH_MAX_INPUT);
	if (rc < 0)
		return engyctl_fail("epoch %s: %s: %s", what, path,
				    strerror(-rc));
	return 0;
}

static int epoch_sign(int argc, char **argv)
{
	struct engy_hotkey hk;
	struct opts o;
	uint8_t sig[ENGY_SR25519_SIG_BYTES], *buf = NULL;
	char err[512], hex[2 * ENGY_SR25519_SIG_BYTES + 1], *payload = NULL;
	size_t len = 0;
	struct stat st;
	int rc;

	rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!o.hotkey || !o.have_netuid || !o.have_epoch || o.ss58 || o.sig) {
		fprintf(stderr,
			"engyctl: epoch sign: --hotkey, --netuid and --epoch are required (--ss58 and --sig are verify's)\n");
		return 2;
	}
	if (read_input("sign", o.file, &buf, &len))
		return 1;
	if (engy_epoch_result_check((const char *)buf, len, (uint16_t)o.netuid,
				    o.epoch, err, sizeof(err)) < 0) {
		rc = engyctl_fail("epoch sign: %s: %s", o.file, err);
		goto out;
	}
	if (engy_hotkey_load(&hk, o.hotkey, err, sizeof(err)) < 0) {
		rc = engyctl_fail("epoch sign: %s", err);
		goto out;
	}
	if (hk.source == ENGY_HOTKEY_PUBLIC_ONLY) {
		rc = engyctl_fail(
			"epoch sign: %s: public key only, cannot sign",
			o.hotkey);
		goto wipe;
	}
	if (stat(o.hotkey, &st) == 0 && (st.st_mode & 077))
		fprintf(stderr,
			"engyctl: warning: %s is accessible by group or others (mode %03o); chmod 600 it\n",
			o.hotkey, (unsigned)(st.st_mode & 0777));
	rc = engy_epoch_sign(&hk.kp, (uint16_t)o.netuid, o.epoch, buf, len,
			     NULL, sig);
	if (rc < 0) {
		rc = engyctl_fail("epoch sign: signing failed (%s)",
				  strerror(-rc));
		goto wipe;
	}
	if (o.payload) {
		rc = engy_epoch_payload(&payload, (uint16_t)o.netuid, o.epoch,
					(const char *)buf, len, sig, hk.ss58);
		if (rc < 0) {
			rc = engyctl_fail(
				"epoch sign: %s: cannot build the payload (%s)",
				o.file,
				rc == -EINVAL ? "result_json holds a NUL byte"
					      : strerror(-rc));
			goto wipe;
		}
		puts(payload);
	} else {
		sodium_bin2hex(hex, sizeof(hex), sig, sizeof(sig));
		puts(hex);
	}
	rc = 0;
wipe:
	engy_hotkey_wipe(&hk);
out:
	free(payload);
	free(buf);
	return rc;
}

static int pinned_key(const char *ss58, uint8_t pub[32])
{
	int rc = engy_ss58_decode_prefix(ss58, ENGY_SS58_PREFIX_BITTENSOR, pub);

	if (rc == -EPROTO)
		return engyctl_fail(
			"epoch verify: --ss58 %s: not a bittensor address (SS58 prefix is not 42)",
			ss58);
	if (rc < 0)
		return engyctl_fail("epoch verify: --ss58 %s: %s", ss58,
				    engy_ss58_strerror(rc));
	if (!engy_sr25519_valid_public(pub))
		return engyctl_fail(
			"epoch verify: --ss58 %s: not a valid sr25519 public key",
			ss58);
	return 0;
}

static int verify_payload(const struct opts *o, const uint8_t pub[32])
{
	struct engy_epoch_verified v;
	enum engy_epoch_reject r;
	uint8_t *buf = NULL;
	size_t len = 0;
	char why[256];

	if (read_input("verify", o->file, &buf, &len))
		return 1;
	r = engy_epoch_payload_check((const char *)buf, len,
				     (uint16_t)o->netuid, pub, &v, why,
				     sizeof(why));
	free(buf);
	if (r != ENGY_EPOCH_ACCEPT)
		return engyctl_fail("epoch verify: %s: rejected (%s): %s",
				    o->file, engy_epoch_reject_name(r), why);
	printf("ok: epoch %" PRIu64 " netuid %u digest %s signed by %s\n",
	       v.epoch_index, (unsigned)o->netuid, v.digest, o->ss58);
	engy_epoch_verified_free(&v);
	return 0;
}

static int epoch_verify(int argc, char **argv)
{
	uint8_t pub[32], sig[ENGY_SR25519_SIG_BYTES], *buf = NULL;
	char digest[ENGY_EPOCH_DIGEST_HEX + 1];
	size_t len = 0, bin_len = 0;
	const char *hex;
	struct opts o;
	int rc;

	rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!o.ss58 || !o.have_netuid || o.hotkey ||
	    (o.payload ? (o.have_epoch || o.sig) : (!o.have_epoch || !o.sig))) {
		fprintf(stderr,
			"engyctl: epoch verify: --ss58 and --netuid, then --epoch and --sig, or --payload alone\n");
		return 2;
	}
	hex = o.sig;
	if (hex && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
		hex += 2;
	if (hex && (strlen(hex) != 2 * ENGY_SR25519_SIG_BYTES ||
		    sodium_hex2bin(sig, sizeof(sig), hex, strlen(hex), NULL,
				   &bin_len, NULL) ||
		    bin_len != sizeof(sig))) {
		fprintf(stderr,
			"engyctl: epoch verify: --sig must be 128 hex digits (64 bytes)\n");
		return 2;
	}
	if (pinned_key(o.ss58, pub))
		return 1;
	if (o.payload)
		return verify_payload(&o, pub);
	if (read_input("verify", o.file, &buf, &len))
		return 1;
	rc = engy_epoch_verify(pub, (uint16_t)o.netuid, o.epoch, buf, len, sig);
	engy_epoch_digest(buf, len, digest);
	free(buf);
	if (rc == -EPROTO)
		return engyctl_fail(
			"epoch verify: --sig is not a well-formed sr25519 signature");
	if (rc < 0)
		return engyctl_fail(
			"epoch verify: the signature does not verify for %s over " ENGY_EPOCH_MSG_PREFIX
			"%u:%" PRIu64 ":%s",
			o.ss58, (unsigned)o.netuid, o.epoch, digest);
	printf("ok: " ENGY_EPOCH_MSG_PREFIX "%u:%" PRIu64 ":%s signed by %s\n",
	       (unsigned)o.netuid, o.epoch, digest, o.ss58);
	return 0;
}

static const struct engyctl_cmd epoch_cmds[] = {
	{ "sign", "sign an epoch result with the master hotkey", epoch_sign },
	{ "verify", "verify an epoch signature or a published payload",
	  epoch_verify },
	{ "score", "recompute an epoch from its public aggregates",
	  engyctl_epoch_score },
	{ NULL, NULL, NULL },
};

int engyctl_epoch(int argc, char **argv)
{
	const struct engyctl_cmd *c;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)
		return usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
	for (c = epoch_cmds; c->name; c++)
		if (strcmp(c->name, argv[1]) == 0)
			return c->run(argc - 1, argv + 1);
	fprintf(stderr, "engyctl: epoch: unknown command '%s' (", argv[1]);
	for (c = epoch_cmds; c->name; c++)
		fprintf(stderr, "%s%s", c == epoch_cmds ? "" : ", ", c->name);
	fprintf(stderr, ")\n");
	return 2;
}
