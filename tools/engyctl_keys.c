/* SPDX-License-Identifier: MIT */
/*
 * engyctl keys: sr25519 hotkey files in bittensor's layout.
 *
 *   engyctl keys new --out FILE [--seed-hex HEX]
 *   engyctl keys show FILE
 *
 * new writes a fresh hotkey (a random 32-byte seed unless --seed-hex
 * gives one) with mode 0600 and never replaces an existing file; show
 * prints the SS58 address and public key.  Neither prints the secret.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "engyctl.h"
#include "hotkey.h"

int engyctl_keys(int argc, char **argv);

static const char usage_text[] =
	"usage: engyctl keys new --out FILE [--seed-hex HEX]\n"
	"       engyctl keys show FILE\n"
	"\n"
	"new writes an unencrypted sr25519 hotkey file (bittensor's keyfile\n"
	"layout, mode 0600) from a random seed, or from the 32-byte mini secret\n"
	"given as 64 hex digits (which then sits on the command line: use it to\n"
	"restore a known key, not for fresh ones); it refuses to overwrite.\n"
	"show prints the file's ss58Address and publicKey, never the secret.\n";

static int usage(FILE *f, int rc)
{
	fputs(usage_text, f);
	return rc;
}

static void print_key(const struct engy_hotkey *hk)
{
	char hex[2 * ENGY_SR25519_PUBLIC_BYTES + 1];

	sodium_bin2hex(hex, sizeof(hex), hk->kp.pub, sizeof(hk->kp.pub));
	printf("ss58Address: %s\npublicKey: 0x%s\n", hk->ss58, hex);
}

/* Hotkeys hold secrets: say so when others can read one. */
static void warn_mode(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && (st.st_mode & 077))
		fprintf(stderr,
			"engyctl: warning: %s is accessible by group or others (mode %03o); chmod 600 it\n",
			path, (unsigned)(st.st_mode & 0777));
}

static int seed_from_hex(uint8_t seed[32], char *s)
{
	size_t n = strlen(s), bin_len = 0;
	const char *p = s;
	int rc = 0;

	if (n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		p += 2;
		n -= 2;
	}
	if (n != 64 ||
	    sodium_hex2bin(seed, 32, p, n, NULL, &bin_len, NULL) != 0 ||
	    bin_len != 32)
		rc = -EINVAL;
	/* Keep the seed out of /proc/PID/cmdline from here on. */
	sodium_memzero(s, strlen(s));
	return rc;
}

static int cmd_new(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "seed-hex", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct engy_hotkey hk;
	const char *out = NULL;
	char err[512];
	uint8_t seed[32];
	int c, have_seed = 0, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 's':
			if (seed_from_hex(seed, optarg) < 0) {
				fprintf(stderr,
					"engyctl: keys new: --seed-hex must be 64 hex digits (32 bytes)\n");
				return 2;
			}
			have_seed = 1;
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			fprintf(stderr,
				"engyctl: keys new: unknown option or missing value: '%s' (--help)\n",
				argv[optind - 1]);
			sodium_memzero(seed, sizeof(seed));
			return 2;
		}
	}
	if (!out || optind != argc) {
		fprintf(stderr,
			"engyctl: keys new: --out FILE is required, and nothing else\n");
		sodium_memzero(seed, sizeof(seed));
		return 2;
	}
	if (sodium_init() < 0)
		return engyctl_fail("keys new: libsodium failed to initialise");
	if (!have_seed)
		randombytes_buf(seed, sizeof(seed));
	rc = engy_hotkey_write(out, seed, NULL, err, sizeof(err));
	sodium_memzero(seed, sizeof(seed));
	if (rc < 0)
		return engyctl_fail("keys new: %s", err);
	/* Read back what was written: the file must load as any hotkey. */
	rc = engy_hotkey_load(&hk, out, err, sizeof(err));
	if (rc < 0)
		return engyctl_fail("keys new: wrote an unreadable file: %s",
				    err);
	print_key(&hk);
	engy_hotkey_wipe(&hk);
	return 0;
}

static int cmd_show(int argc, char **argv)
{
	struct engy_hotkey hk;
	char err[512];

	if (argc == 2 &&
	    (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
		return usage(stdout, 0);
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "engyctl: keys show: give one hotkey FILE\n");
		return 2;
	}
	if (engy_hotkey_load(&hk, argv[1], err, sizeof(err)) < 0)
		return engyctl_fail("keys show: %s", err);
	if (hk.source != ENGY_HOTKEY_PUBLIC_ONLY)
		warn_mode(argv[1]);
	print_key(&hk);
	printf("secret: %s\n", hk.source == ENGY_HOTKEY_PUBLIC_ONLY
				       ? "none (public key only)"
				       : engy_hotkey_source_name(hk.source));
	engy_hotkey_wipe(&hk);
	return 0;
}

int engyctl_keys(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)
		return usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
	if (strcmp(argv[1], "new") == 0)
		return cmd_new(argc - 1, argv + 1);
	if (strcmp(argv[1], "show") == 0)
		return cmd_show(argc - 1, argv + 1);
	fprintf(stderr, "engyctl: keys: unknown command '%s' (new or show)\n",
		argv[1]);
	return 2;
}
