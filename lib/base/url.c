/* SPDX-License-Identifier: MIT */
/* ws/wss/http/https URL parser (see url.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "url.h"

static const struct {
	const char *name;
	uint16_t port;
	bool tls;
} schemes[] = {
	{ "ws", 80, false },
	{ "wss", 443, true },
	{ "http", 80, false },
	{ "https", 443, true },
};

static bool host_char(int c)
{
	return isalnum(c) || c == '.' || c == '-' || c == '_';
}

/* Path and query: printable ASCII without space, '#' or '\'. */
static bool target_ok(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= 0x20 || c >= 0x7f || c == '#' || c == '\\')
			return false;
	}
	return true;
}

static int parse_port(const char *s, size_t n, uint16_t *port)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > 5)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* The scheme's index in schemes[], or -1; *@rest is past "://". */
static int find_scheme(const char *url, const char **rest, const char **why)
{
	const char *p = strstr(url, "://");
	size_t i, n;
	int si = -1;

	if (!p) {
		*why = "not a URL (scheme:// missing)";
		return -1;
	}
	n = (size_t)(p - url);
	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strlen(schemes[i].name) == n &&
		    strncasecmp(url, schemes[i].name, n) == 0)
			si = (int)i;
	if (si < 0)
		*why = "unsupported scheme (ws, wss, http or https)";
	*rest = p + 3;
	return si;
}

/* What may not follow or sit in the authority [@auth, @auth_end). */
static const char *check_rest(const char *auth, const char *auth_end)
{
	if (*auth_end == '#' || strchr(auth_end, '#'))
		return "a fragment (#) is not allowed";
	if (memchr(auth, '@', (size_t)(auth_end - auth)))
		return "user info in the URL is not supported";
	if (!target_ok(auth_end))
		return "space, control or non-ASCII character in the path";
	return NULL;
}

/*
 * The host in [@auth, @auth_end): [*@h, *@h_end), and where what follows
 * it (a port, or nothing) starts; NULL and @why when malformed.
 */
static const char *parse_host(struct engy_url *u, const char *auth,
			      const char *auth_end, const char **h,
			      const char **h_end, const char **why)
{
	const char *p;

	if (*auth == '[') {
		*h = auth + 1;
		*h_end = memchr(*h, ']', (size_t)(auth_end - *h));
		if (!*h_end || *h_end == *h) {
			*why = "malformed [IPv6] host";
			return NULL;
		}
		for (p = *h; p < *h_end; p++)
			if (!isxdigit((unsigned char)*p) && *p != ':' &&
			    *p != '.') {
				*why = "malformed [IPv6] host";
				return NULL;
			}
		u->ipv6 = true;
		p = *h_end + 1;
	} else {
		*h = auth;
		*h_end = auth + strcspn(auth, ":/?");
		if (*h_end > auth_end)
			*h_end = auth_end;
		for (p = *h; p < *h_end; p++)
			if (!host_char((unsigned char)*p)) {
				*why = "invalid character in the host";
				return NULL;
			}
		p = *h_end;
	}
	if (*h_end == *h) {
		*why = "no host";
		return NULL;
	}
	return p;
}

/* The port after the host at @p, if any, up to @auth_end. */
static const char *parse_authority_port(struct engy_url *u, const char *p,
					const char *auth_end)
{
	if (p >= auth_end)
		return NULL;
	if (*p != ':')
		return "malformed authority";
	if (parse_port(p + 1, (size_t)(auth_end - p - 1), &u->port) < 0)
		return "port must be 1-65535";
	return NULL;
}

/* The parts, lower-cased where case does not matter, into one buffer. */
static int fill(struct engy_url *u, const char *url, int si, const char *h,
		size_t n_host, const char *auth, size_t n_auth,
		const char *auth_end)
{
	size_t i, cap = 5 * strlen(url) + 32;
	char *w;

	u->buf = malloc(cap);
	if (!u->buf)
		return -ENOMEM;
	w = u->buf;
	u->scheme = w;
	w += sprintf(w, "%s", schemes[si].name) + 1;
	u->host = w;
	for (i = 0; i < n_host; i++)
		*w++ = (char)tolower((unsigned char)h[i]);
	*w++ = '\0';
	u->authority = w;
	for (i = 0; i < n_auth; i++)
		*w++ = (char)tolower((unsigned char)auth[i]);
	*w++ = '\0';
	u->target = w;
	w += sprintf(w, "%s%s", *auth_end == '/' ? "" : "/", auth_end) + 1;
	u->path = w;
	i = strcspn(u->target, "?");
	memcpy(w, u->target, i);
	w[i] = '\0';
	w += i + 1;
	if (u->target[i] == '?') {
		u->query = w;
		w += sprintf(w, "%s", u->target + i + 1) + 1;
	}
	u->safe = w;
	sprintf(w, "%s://%s%s", u->scheme, u->authority, u->path);
	return 0;
}

int engy_url_parse(struct engy_url *u, const char *url, const char **why)
{
	const char *p, *auth, *auth_end, *h, *h_end;
	int si;

	memset(u, 0, sizeof(*u));
	*why = NULL;
	si = find_scheme(url, &auth, why);
	if (si < 0)
		return -EINVAL;
	auth_end = auth + strcspn(auth, "/?#");
	*why = check_rest(auth, auth_end);
	if (*why)
		return -EINVAL;
	u->port = schemes[si].port;
	u->tls = schemes[si].tls;
	p = parse_host(u, auth, auth_end, &h, &h_end, why);
	if (!p)
		return -EINVAL;
	*why = parse_authority_port(u, p, auth_end);
	if (*why)
		return -EINVAL;
	return fill(u, url, si, h, (size_t)(h_end - h), auth,
		    (size_t)(auth_end - auth), auth_end);
}

void engy_url_free(struct engy_url *u)
{
	free(u->buf);
	memset(u, 0, sizeof(*u));
}
