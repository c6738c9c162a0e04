/* SPDX-License-Identifier: MIT */
/*
 * chain-dev: the devnet's chain.  A subnet held in the config (hotkeys by
 * uid, from `hotkeys` then `hotkeys_file`, which a devnet script can write;
 * which uids hold a validator permit; the rate limit), blocks from
 * the wall clock (one per block_ms), and set_weights checked the way
 * subtensor checks it (commit-reveal, registration, permit, rate limit,
 * lengths) with the chain's error names, then appended as one JSON line to
 * `file`:
 *
 *   {"block":N,"netuid":53,"hotkey":"5...","uid":U,"ok":true,
 *    "uids":[...],"weights":[...]}      (ok false: "error":"Name")
 *
 * The signer is exercised for real: it signs the line's digest and the
 * signature is verified before anything is written.  Rate limits survive
 * restarts: the file's accepted lines are read back at start.
 */
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include <engy/engy.h>

#include "checkfmt.h"
#include "fsutil.h"
#include "sr25519.h"
#include "ss58.h"

struct dev_conf {
	const char *file;
	struct engy_strv hotkeys;
	const char *hotkeys_file;
	struct engy_strv permits;
	int64_t netuid;
	int64_t rate_limit;
	int64_t block_ms;
	int64_t version_key;
	bool commit_reveal;
};

struct dev {
	const struct engy_host *h;
	const struct dev_conf *c;
	size_t n;
	uint8_t (*acc)[32];
	bool *permit;
	uint64_t *last; /* under lock: workers write it */
	pthread_mutex_t lock;
	bool stopping;
};

struct job {
	struct dev *d;
	int op;
	void *arg;
	void (*done_block)(void *, const struct engy_chain_block *);
	void (*done_mg)(void *, const struct engy_chain_metagraph *);
	void (*done_sub)(void *, const struct engy_chain_submit *);
	uint16_t netuid;
	size_t n;
	uint16_t *uids, *weights;
	uint64_t version_key;
	struct engy_chain_signer signer;
	struct engy_chain_submit res;
	uint64_t block;
	char error[256];
};

static uint64_t dev_block(const struct dev *d)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000) /
	       (uint64_t)d->c->block_ms;
}

static long uid_of(const struct dev *d, const uint8_t acc[32])
{
	size_t u;

	for (u = 0; u < d->n; u++)
		if (memcmp(d->acc[u], acc, 32) == 0)
			return (long)u;
	return -1;
}

/* Subtensor's order of checks, with its error names. */
static const char *check(struct job *j, long *me)
{
	struct dev *d = j->d;
	size_t i, k;

	if (j->netuid != d->c->netuid)
		return "SubtensorModule.SubNetworkDoesNotExist";
	if (d->c->commit_reveal)
		return "SubtensorModule.CommitRevealEnabled";
	*me = uid_of(d, j->signer.account);
	if (*me < 0)
		return "SubtensorModule.HotKeyNotRegisteredInSubNet";
	if (j->version_key < (uint64_t)d->c->version_key)
		return "SubtensorModule.IncorrectWeightVersionKey";
	if (d->last[*me] &&
	    j->block - d->last[*me] < (uint64_t)d->c->rate_limit)
		return "SubtensorModule.SettingWeightsTooFast";
	if (!d->permit[*me] && !(j->n == 1 && j->uids[0] == *me))
		return "SubtensorModule.NeuronNoValidatorPermit";
	for (i = 0; i < j->n; i++) {
		if (j->uids[i] >= d->n)
			return "SubtensorModule.UidVecContainInvalidOne";
		for (k = 0; k < i; k++)
			if (j->uids[k] == j->uids[i])
				return "SubtensorModule.DuplicateUids";
	}
	return NULL;
}

static int append(const char *path, const char *line)
{
	FILE *f = fopen(path, "a");
	int rc;

	if (!f)
		return -errno;
	rc = fputs(line, f) < 0 ? -EIO : 0;
	if (fclose(f) != 0 && !rc)
		rc = -EIO;
	return rc;
}

static void submit_run(struct job *j)
{
	struct dev *d = j->d;
	uint8_t digest[32], sig[64];
	const char *err;
	char *line = NULL;
	size_t i, cap;
	long me = -1;
	char ss58[ENGY_SS58_ADDR_SIZE];
	int rc;

	j->block = dev_block(d);
	{
		crypto_generichash_state hs;

		crypto_generichash_init(&hs, NULL, 0, 32);
		crypto_generichash_update(&hs, (const uint8_t *)&j->netuid, 2);
		crypto_generichash_update(&hs, (const uint8_t *)j->uids,
					  j->n * 2);
		crypto_generichash_update(&hs, (const uint8_t *)j->weights,
					  j->n * 2);
		crypto_generichash_final(&hs, digest, 32);
	}
	rc = j->signer.sign(j->signer.arg, digest, 32, sig);
	if (!rc)
		rc = engy_sr25519_verify(j->signer.account,
					 ENGY_SR25519_SUBSTRATE_CTX, digest, 32,
					 sig);
	if (rc) {
		/* The node would answer BadProof before any block. */
		snprintf(
			j->error, sizeof(j->error),
			"Invalid Transaction: Transaction has a bad signature");
		return;
	}
	engy_ss58_encode(ss58, sizeof(ss58), j->signer.account,
			 ENGY_SS58_PREFIX_BITTENSOR);
	cap = 256 + j->n * 16;
	line = malloc(cap);
	if (!line) {
		j->res.status = -ENOMEM;
		return;
	}
	pthread_mutex_lock(&d->lock);
	err = check(j, &me);
	i = (size_t)snprintf(
		line, cap,
		"{\"block\":%" PRIu64
		",\"netuid\":%u,\"hotkey\":\"%s\",\"uid\":%ld,\"ok\":%s",
		j->block, j->netuid, ss58, me, err ? "false" : "true");
	if (err)
		i += (size_t)snprintf(line + i, cap - i, ",\"error\":\"%s\"",
				      err);
	i += (size_t)snprintf(line + i, cap - i, ",\"uids\":[");
	for (size_t k = 0; k < j->n; k++)
		i += (size_t)snprintf(line + i, cap - i, "%s%u", k ? "," : "",
				      j->uids[k]);
	i += (size_t)snprintf(line + i, cap - i, "],\"weights\":[");
	for (size_t k = 0; k < j->n; k++)
		i += (size_t)snprintf(line + i, cap - i, "%s%u", k ? "," : "",
				      j->weights[k]);
	snprintf(line + i, cap - i, "]}\n");
	rc = append(d->c->file, line);
	if (!rc && !err)
		d->last[me] = j->block;
	pthread_mutex_unlock(&d->lock);
	free(line);
	if (rc) {
		j->res.status = rc;
		snprintf(j->error, sizeof(j->error), "cannot append to %s: %s",
			 d->c->file, strerror(-rc));
		return;
	}
	j->res.included = true;
	j->res.block = j->block;
	j->res.success = !err;
	if (err)
		snprintf(j->error, sizeof(j->error), "%s", err);
}

static void job_run(void *arg)
{
	struct job *j = arg;

	if (j->op == 3)
		submit_run(j);
}

static void job_done(void *arg, int rc)
{
	struct job *j = arg;
	struct dev *d = j->d;
	uint64_t *last = NULL;

	if (j->op == 1) {
		struct engy_chain_block b = { .status = rc,
					      .number = dev_block(d) };

		b.error = rc ? strerror(-rc) : NULL;
		j->done_block(j->arg, &b);
	} else if (j->op == 2) {
		struct engy_chain_metagraph m = {
			.status = rc,
			.error = rc ? strerror(-rc) : NULL,
			.block = dev_block(d),
			.netuid = j->netuid,
			.exists = j->netuid == d->c->netuid,
			.rate_limit = (uint64_t)d->c->rate_limit,
			.version_key = (uint64_t)d->c->version_key,
			.commit_reveal = d->c->commit_reveal,
		};

		if (m.exists) {
			m.n = d->n;
			m.uids = (const uint8_t(*)[32])d->acc;
			m.permit = d->permit;
			last = calloc(d->n ? d->n : 1, sizeof(*last));
			if (last) {
				pthread_mutex_lock(&d->lock);
				memcpy(last, d->last, d->n * sizeof(*last));
				pthread_mutex_unlock(&d->lock);
			} else {
				m.status = -ENOMEM;
				m.error = strerror(ENOMEM);
			}
			m.last_update = last;
		}
		j->done_mg(j->arg, &m);
		free(last);
	} else {
		if (rc)
			j->res.status = rc;
		j->res.error = j->error[0] ? j->error : NULL;
		j->done_sub(j->arg, &j->res);
	}
	free(j->uids);
	free(j->weights);
	free(j);
}

static int queue(struct dev *d, struct job *j)
{
	int rc;

	j->d = d;
	rc = d->stopping ? -ESHUTDOWN : d->h->work(d->h, job_run, job_done, j);
	if (rc) {
		free(j->uids);
		free(j->weights);
		free(j);
	}
	return rc;
}

static int op_block(void *inst,
		    void (*done)(void *, const struct engy_chain_block *),
		    void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->op = 1;
	j->done_block = done;
	j->arg = arg;
	return queue(inst, j);
}

static int op_metagraph(void *inst, uint16_t netuid,
			void (*done)(void *,
				     const struct engy_chain_metagraph *),
			void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->op = 2;
	j->netuid = netuid;
	j->done_mg = done;
	j->arg = arg;
	return queue(inst, j);
}

static int op_set_weights(void *inst, const struct engy_chain_weights *w,
			  const struct engy_chain_signer *s,
			  void (*done)(void *,
				       const struct engy_chain_submit *),
			  void *arg)
{
	struct job *j;

	if (!w || w->size < sizeof(*w) || !s || s->size < sizeof(*s) ||
	    !s->sign)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->uids = calloc(w->n ? w->n : 1, 2);
	j->weights = calloc(w->n ? w->n : 1, 2);
	if (!j->uids || !j->weights) {
		free(j->uids);
		free(j->weights);
		free(j);
		return -ENOMEM;
	}
	memcpy(j->uids, w->uids, w->n * 2);
	memcpy(j->weights, w->weights, w->n * 2);
	j->n = w->n;
	j->netuid = w->netuid;
	j->version_key = w->version_key;
	j->signer = *s;
	j->op = 3;
	j->done_sub = done;
	j->arg = arg;
	return queue(inst, j);
}

static const struct engy_chain_ops ops = {
	.size = sizeof(ops),
	.block = op_block,
	.metagraph = op_metagraph,
	.set_weights = op_set_weights,
};

/* Rate limits survive restarts: the last accepted block per uid. */
static void read_back(struct dev *d)
{
	char line[65536];
	FILE *f = fopen(d->c->file, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		cJSON *o = cJSON_Parse(line);
		const cJSON *ok = cJSON_GetObjectItemCaseSensitive(o, "ok");
		const cJSON *uid = cJSON_GetObjectItemCaseSensitive(o, "uid");
		const cJSON *blk = cJSON_GetObjectItemCaseSensitive(o, "block");

		if (cJSON_IsTrue(ok) && cJSON_IsNumber(uid) &&
		    cJSON_IsNumber(blk) && uid->valuedouble >= 0 &&
		    uid->valuedouble < (double)d->n && blk->valuedouble >= 0)
			d->last[(size_t)uid->valuedouble] =
				(uint64_t)blk->valuedouble;
		cJSON_Delete(o);
	}
	fclose(f);
}

static void dev_destroy(void *inst)
{
	struct dev *d = inst;

	if (!d)
		return;
	free(d->acc);
	free(d->permit);
	free(d->last);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* The config's hotkeys, then hotkeys_file's lines ('#' comments). */
static int collect(const struct engy_host *h, const struct dev_conf *c,
		   char **text, const char ***out, size_t *n_out)
{
	const char **v;
	size_t n = c->hotkeys.n, cap = n + 1, i;
	uint8_t *buf = NULL;
	size_t len = 0;
	char *line, *save;
	int rc;

	*text = NULL;
	if (c->hotkeys_file) {
		rc = engy_read_file(c->hotkeys_file, 1u << 20, &buf, &len);
		if (rc) {
			engy_err(h,
				 "event=bad_option option=hotkeys_file path=%s "
				 "error=\"%s\"",
				 c->hotkeys_file, strerror(-rc));
			return -EINVAL;
		}
		for (i = 0; i < len; i++)
			cap += buf[i] == '\n';
	}
	v = calloc(cap + 1, sizeof(*v));
	if (!v) {
		free(buf);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		v[i] = c->hotkeys.v[i];
	for (line = buf ? strtok_r((char *)buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "# \t\r")] = '\0';
		if (*line && n < cap)
			v[n++] = line;
	}
	*text = (char *)buf;
	*out = v;
	*n_out = n;
	return 0;
}

static int dev_create(const struct engy_host *h, const void *conf, void **inst)
{
	const struct dev_conf *c = conf;
	const char **keys;
	struct dev *d;
	char *text;
	size_t i;
	int rc;

	*inst = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	d->h = h;
	d->c = c;
	rc = collect(h, c, &text, &keys, &d->n);
	if (rc) {
		dev_destroy(d);
		return rc;
	}
	d->acc = calloc(d->n ? d->n : 1, 32);
	d->permit = calloc(d->n ? d->n : 1, sizeof(bool));
	d->last = calloc(d->n ? d->n : 1, sizeof(uint64_t));
	rc = d->acc && d->permit && d->last ? 0 : -ENOMEM;
	for (i = 0; !rc && i < d->n; i++) {
		rc = engy_ss58_decode(keys[i], d->acc[i], NULL);
		if (rc) {
			engy_err(h,
				 "event=bad_option option=hotkeys index=%zu "
				 "value=%s reason=\"%s\"",
				 i, keys[i], engy_ss58_strerror(rc));
			rc = -EINVAL;
		}
		if (!rc)
			d->permit[i] = c->permits.n == 0;
	}
	free(keys);
	free(text);
	if (rc) {
		dev_destroy(d);
		return rc;
	}
	for (i = 0; i < c->permits.n; i++) {
		char *end;
		unsigned long u = strtoul(c->permits.v[i], &end, 10);

		if (*end || end == c->permits.v[i] || u >= d->n) {
			engy_err(h,
				 "event=bad_option option=permits value=%s "
				 "reason=\"a uid of hotkeys\"",
				 c->permits.v[i]);
			dev_destroy(d);
			return -EINVAL;
		}
		d->permit[u] = true;
	}
	*inst = d;
	return 0;
}

static int dev_start(void *inst)
{
	struct dev *d = inst;

	read_back(d);
	engy_info(d->h,
		  "event=started file=%s netuid=%lld uids=%zu block=%" PRIu64
		  " rate_limit=%lld commit_reveal=%s",
		  d->c->file, (long long)d->c->netuid, d->n, dev_block(d),
		  (long long)d->c->rate_limit,
		  d->c->commit_reveal ? "true" : "false");
	return 0;
}

static void dev_stop(void *inst)
{
	((struct dev *)inst)->stopping = true;
}

#define OFF(f) offsetof(struct dev_conf, f)

static const struct engy_opt opts[] = {
	{ "file", ENGY_OPT_STR, ENGY_OPT_REQUIRED, OFF(file), NULL, NULL, 0, 0,
	  "weights are appended here, one JSON line per submission" },
	{ "hotkeys", ENGY_OPT_STR_LIST, 0, OFF(hotkeys), NULL, NULL, 0, 0,
	  "the subnet's hotkeys (SS58), uid = position" },
	{ "hotkeys_file", ENGY_OPT_STR, 0, OFF(hotkeys_file), NULL,
	  "ENGY_DEV_CHAIN_HOTKEYS", 0, 0,
	  "more hotkeys, one SS58 a line, after those of hotkeys" },
	{ "permits", ENGY_OPT_STR_LIST, 0, OFF(permits), NULL, NULL, 0, 0,
	  "uids holding a validator permit (default: all)" },
	{ "netuid", ENGY_OPT_INT, 0, OFF(netuid), "53", NULL, 0, 65535,
	  "the subnet" },
	{ "rate_limit", ENGY_OPT_INT, 0, OFF(rate_limit), "100", NULL, 0,
	  1000000, "blocks between two weight settings of one hotkey" },
	{ "block_ms", ENGY_OPT_INT, 0, OFF(block_ms), "12000", NULL, 1, 3600000,
	  "milliseconds a block" },
	{ "version_key", ENGY_OPT_INT, 0, OFF(version_key), "0", NULL, 0, 0,
	  "the subnet's weights version key" },
	{ "commit_reveal", ENGY_OPT_BOOL, 0, OFF(commit_reveal), "false", NULL,
	  0, 0, "refuse set_weights as a commit-reveal subnet does" },
	ENGY_OPT_END,
};

/* The check op (engyd -t): the file its weights go to. */
static int dev_check(const struct engy_host *h, const void *conf, void *inst,
		     const struct engy_check_sink *sink)
{
	const struct dev_conf *c = conf;
	struct engy_check_buf b;

	(void)h;
	(void)inst;
	engy_check_begin(&b, "chain", ENGY_PROBE_NONE);
	ENGY_CHECK_SET(&b, target, "chain-dev file %s", c->file ? c->file : "");
	ENGY_CHECK_SET(&b, source, "config");
	return engy_check_add(sink, &b);
}

ENGY_PLUGIN(.kind = ENGY_KIND_CHAIN, .name = "chain-dev", .version = "1.0",
	    .description = "the devnet's chain: a configured subnet, weights "
			   "to a local file",
	    .opts = opts, .conf_size = sizeof(struct dev_conf),
	    .create = dev_create, .start = dev_start, .stop = dev_stop,
	    .destroy = dev_destroy, .ops = &ops, .check = dev_check);
