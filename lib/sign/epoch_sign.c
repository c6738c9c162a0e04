/* SPDX-License-Identifier: MIT */
/*
 * The epoch message, its signature, and the payload checks.  The digest
 * in the message is always recomputed from the result_json bytes, never
 * taken from a payload, so a signature can only vouch for those bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "errbuf.h"
#include "epoch_sign.h"

static void hexenc(char *out, const uint8_t *in, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

void engy_epoch_digest(const void *result_json, size_t len,
		       char hex[ENGY_EPOCH_DIGEST_HEX + 1])
{
	uint8_t h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, result_json, len);
	hexenc(hex, h, sizeof(h));
}

static bool lower_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

int engy_epoch_message(char *out, size_t cap, uint16_t netuid, uint64_t epoch,
		       const char *digest)
{
	int n;

	if (!lower_hex(digest, ENGY_EPOCH_DIGEST_HEX) ||
	    epoch > ENGY_EPOCH_MAX_INDEX)
		return -EINVAL;
	n = snprintf(out, cap, ENGY_EPOCH_MSG_PREFIX "%u:%" PRIu64 ":%s",
		     (unsigned)netuid, epoch, digest);
	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	return n;
}

static int build_message(char msg[ENGY_EPOCH_MSG_MAX], uint16_t netuid,
			 uint64_t epoch, const void *result_json, size_t len)
{
	char digest[ENGY_EPOCH_DIGEST_HEX + 1];

	if (sodium_init() < 0)
		return -EIO;
	engy_epoch_digest(result_json, len, digest);
	return engy_epoch_message(msg, ENGY_EPOCH_MSG_MAX, netuid, epoch,
				  digest);
}

int engy_epoch_sign(const struct engy_sr25519_keypair *kp, uint16_t netuid,
		    uint64_t epoch, const void *result_json, size_t len,
		    const uint8_t *rng, uint8_t sig[ENGY_SR25519_SIG_BYTES])
{
	char msg[ENGY_EPOCH_MSG_MAX];
	int n;

	n = build_message(msg, netuid, epoch, result_json, len);
	if (n < 0)
		return n;
	if (rng)
		return engy_sr25519_sign_rng(kp, ENGY_SR25519_SUBSTRATE_CTX,
					     msg, (size_t)n, rng, sig);
	return engy_sr25519_sign(kp, ENGY_SR25519_SUBSTRATE_CTX, msg, (size_t)n,
				 sig);
}

int engy_epoch_verify(const uint8_t pub[ENGY_SR25519_PUBLIC_BYTES],
		      uint16_t netuid, uint64_t epoch, const void *result_json,
		      size_t len, const uint8_t sig[ENGY_SR25519_SIG_BYTES])
{
	char msg[ENGY_EPOCH_MSG_MAX];
	int n;

	n = build_message(msg, netuid, epoch, result_json, len);
	if (n < 0)
		return n;
	return engy_sr25519_verify(pub, ENGY_SR25519_SUBSTRATE_CTX, msg,
				   (size_t)n, sig);
}

/* A JSON integer 0..@max (booleans are not numbers to cJSON). */
static bool json_uint(const cJSON *it, uint64_t max, uint64_t *v)
{
	double d;

	if (!it || !cJSON_IsNumber(it))
		return false;
	d = it->valuedouble;
	if (!(d >= 0) || d > (double)max || d != (double)(uint64_t)d)
		return false;
	*v = (uint64_t)d;
	return true;
}

static int check_weights(const cJSON *w, char *why, size_t whylen)
{
	const cJSON *row;
	uint64_t v;
	int i = 0;

	if (!cJSON_IsArray(w)) {
		engy_seterr(why, whylen, "result_json: weights is not a list");
		return -EINVAL;
	}
	cJSON_ArrayForEach(row, w)
	{
		if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != 2 ||
		    !cJSON_IsString(cJSON_GetArrayItem(row, 0)) ||
		    !json_uint(cJSON_GetArrayItem(row, 1), 65535, &v)) {
			engy_seterr(
				why, whylen,
				"result_json: weights[%d] is not a [hotkey, 0..65535] pair",
				i);
			return -EINVAL;
		}
		i++;
	}
	return 0;
}

static int check_result(const cJSON *rj, uint16_t netuid, uint64_t epoch,
			char *why, size_t whylen)
{
	uint64_t v;

	if (!cJSON_IsObject(rj)) {
		engy_seterr(why, whylen, "result_json is not a JSON object");
		return -EINVAL;
	}
	if (!json_uint(cJSON_GetObjectItemCaseSensitive(rj, "epoch_index"),
		       ENGY_EPOCH_MAX_INDEX, &v)) {
		engy_seterr(
			why, whylen,
			"result_json: epoch_index missing or not an integer");
		return -EINVAL;
	}
	if (v != epoch) {
		engy_seterr(why, whylen,
			    "result_json: epoch_index %" PRIu64
			    ", expected %" PRIu64,
			    v, epoch);
		return -EINVAL;
	}
	if (!json_uint(cJSON_GetObjectItemCaseSensitive(rj, "netuid"), 65535,
		       &v)) {
		engy_seterr(why, whylen,
			    "result_json: netuid missing or not an integer");
		return -EINVAL;
	}
	if (v != netuid) {
		engy_seterr(why, whylen,
			    "result_json: netuid %" PRIu64 ", expected %u", v,
			    (unsigned)netuid);
		return -EINVAL;
	}
	return check_weights(cJSON_GetObjectItemCaseSensitive(rj, "weights"),
			     why, whylen);
}

int engy_epoch_result_check(const char *result_json, size_t len,
			    uint16_t netuid, uint64_t epoch, char *why,
			    size_t whylen)
{
	cJSON *rj = cJSON_ParseWithLength(result_json, len);
	int rc;

	if (!rj) {
		engy_seterr(why, whylen, "result_json is not valid JSON");
		return -EINVAL;
	}
	rc = check_result(rj, netuid, epoch, why, whylen);
	cJSON_Delete(rj);
	return rc;
}

int engy_epoch_payload(char **out, uint16_t netuid, uint64_t epoch,
		       const char *result_json, size_t len,
		       const uint8_t sig[ENGY_SR25519_SIG_BYTES],
		       const char *signed_hotkey)
{
	char digest[ENGY_EPOCH_DIGEST_HEX + 1],
		sighex[2 * ENGY_SR25519_SIG_BYTES + 1];
	char num[24];
	cJSON *p = NULL, *rj = NULL, *w;
	char *copy = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	/* result_json travels as a JSON string: no NUL inside. */
	if (memchr(result_json, '\0', len))
		return -EINVAL;
	rj = cJSON_ParseWithLength(result_json, len);
	if (!rj || check_result(rj, netuid, epoch, NULL, 0) < 0) {
		rc = -EINVAL;
		goto out;
	}
	copy = malloc(len + 1);
	if (!copy)
		goto out;
	memcpy(copy, result_json, len);
	copy[len] = '\0';
	engy_epoch_digest(result_json, len, digest);
	hexenc(sighex, sig, ENGY_SR25519_SIG_BYTES);
	/* cJSON prints large doubles to 15 digits: write the integer itself. */
	snprintf(num, sizeof(num), "%" PRIu64, epoch);
	w = cJSON_DetachItemFromObjectCaseSensitive(rj, "weights");
	p = cJSON_CreateObject();
	if (!p || !w || !cJSON_AddNumberToObject(p, "v", 1) ||
	    !cJSON_AddNumberToObject(p, "netuid", netuid) ||
	    !cJSON_AddRawToObject(p, "epoch_index", num) ||
	    !cJSON_AddStringToObject(p, "digest", digest) ||
	    !cJSON_AddStringToObject(p, "result_json", copy) ||
	    !cJSON_AddStringToObject(p, "signature", sighex)) {
		cJSON_Delete(w);
		goto out;
	}
	cJSON_AddItemToObject(p, "weights", w);
	if (signed_hotkey &&
	    !cJSON_AddStringToObject(p, "signed_hotkey", signed_hotkey))
		goto out;
	*out = cJSON_PrintUnformatted(p);
	rc = *out ? 0 : -ENOMEM;
out:
	free(copy);
	cJSON_Delete(rj);
	cJSON_Delete(p);
	return rc;
}

const char *engy_epoch_reject_name(enum engy_epoch_reject r)
{
	switch (r) {
	case ENGY_EPOCH_ACCEPT:
		return "accept";
	case ENGY_EPOCH_REJECT_VERSION:
		return "version";
	case ENGY_EPOCH_REJECT_NETUID:
		return "netuid";
	case ENGY_EPOCH_REJECT_DIGEST:
		return "digest";
	case ENGY_EPOCH_REJECT_SIGNATURE:
		return "signature";
	default:
		return "malformed";
	}
}

static bool sig_from_hex(uint8_t sig[ENGY_SR25519_SIG_BYTES], const char *s)
{
	size_t bin_len;

	if (strlen(s) != 2 * ENGY_SR25519_SIG_BYTES)
		return false;
	return sodium_hex2bin(sig, ENGY_SR25519_SIG_BYTES, s, strlen(s), NULL,
			      &bin_len, NULL) == 0 &&
	       bin_len == ENGY_SR25519_SIG_BYTES;
}

enum engy_epoch_reject
engy_epoch_payload_check(const char *payload, size_t len, uint16_t netuid,
			 const uint8_t master_pub[ENGY_SR25519_PUBLIC_BYTES],
			 struct engy_epoch_verified *out, char *why,
			 size_t whylen)
{
	enum engy_epoch_reject r = ENGY_EPOCH_REJECT_MALFORMED;
	uint8_t sig[ENGY_SR25519_SIG_BYTES];
	char digest[ENGY_EPOCH_DIGEST_HEX + 1];
	const cJSON *rjs, *d, *s;
	cJSON *p, *rj = NULL;
	uint64_t v, epoch;
	size_t rlen;
	int rc;

	memset(out, 0, sizeof(*out));
	if (sodium_init() < 0) {
		engy_seterr(why, whylen, "libsodium failed to initialise");
		return r;
	}
	p = cJSON_ParseWithLength(payload, len);
	if (!p || !cJSON_IsObject(p)) {
		engy_seterr(why, whylen, "the payload is not a JSON object");
		goto out;
	}
	if (!json_uint(cJSON_GetObjectItemCaseSensitive(p, "v"), 1000, &v) ||
	    v != 1) {
		engy_seterr(why, whylen, "payload version is not 1");
		r = ENGY_EPOCH_REJECT_VERSION;
		goto out;
	}
	if (!json_uint(cJSON_GetObjectItemCaseSensitive(p, "netuid"), 65535,
		       &v) ||
	    v != netuid) {
		engy_seterr(why, whylen, "payload netuid is not %u",
			    (unsigned)netuid);
		r = ENGY_EPOCH_REJECT_NETUID;
		goto out;
	}
	rjs = cJSON_GetObjectItemCaseSensitive(p, "result_json");
	if (!cJSON_IsString(rjs) || !rjs->valuestring) {
		engy_seterr(why, whylen, "result_json is not a string");
		goto out;
	}
	if (!json_uint(cJSON_GetObjectItemCaseSensitive(p, "epoch_index"),
		       ENGY_EPOCH_MAX_INDEX, &epoch)) {
		engy_seterr(why, whylen,
			    "epoch_index missing or not an integer");
		goto out;
	}
	rlen = strlen(rjs->valuestring);
	engy_epoch_digest(rjs->valuestring, rlen, digest);
	d = cJSON_GetObjectItemCaseSensitive(p, "digest");
	if (!cJSON_IsString(d) || !d->valuestring ||
	    strcasecmp(d->valuestring, digest) != 0) {
		engy_seterr(why, whylen,
			    "digest is not the SHA-256 of result_json");
		r = ENGY_EPOCH_REJECT_DIGEST;
		goto out;
	}
	s = cJSON_GetObjectItemCaseSensitive(p, "signature");
	if (!cJSON_IsString(s) || !s->valuestring ||
	    !sig_from_hex(sig, s->valuestring)) {
		engy_seterr(why, whylen, "signature is not 128 hex digits");
		r = ENGY_EPOCH_REJECT_SIGNATURE;
		goto out;
	}
	rc = engy_epoch_verify(master_pub, netuid, epoch, rjs->valuestring,
			       rlen, sig);
	if (rc < 0) {
		engy_seterr(
			why, whylen,
			"the signature does not verify against the master hotkey");
		r = ENGY_EPOCH_REJECT_SIGNATURE;
		goto out;
	}
	rj = cJSON_Parse(rjs->valuestring);
	if (!rj) {
		engy_seterr(why, whylen, "result_json is not valid JSON");
		goto out;
	}
	if (check_result(rj, netuid, epoch, why, whylen) < 0)
		goto out;
	out->result_json = malloc(rlen + 1);
	if (!out->result_json) {
		engy_seterr(why, whylen, "out of memory");
		goto out;
	}
	memcpy(out->result_json, rjs->valuestring, rlen + 1);
	out->result_len = rlen;
	out->epoch_index = epoch;
	memcpy(out->digest, digest, sizeof(digest));
	r = ENGY_EPOCH_ACCEPT;
out:
	cJSON_Delete(rj);
	cJSON_Delete(p);
	return r;
}

void engy_epoch_verified_free(struct engy_epoch_verified *v)
{
	free(v->result_json);
	memset(v, 0, sizeof(*v));
}
