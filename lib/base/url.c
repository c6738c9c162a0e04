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
	{ "ws", 80, false }, { "wss", 443, true },
	{ "http", 80, false }, { "https", 443, true },
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

int engy_url_parse(struct engy_url *u, const char *url, const char **why)
{
	const char *p, *auth, *auth_end, *h, *h_end, *port_s = NULL;
	size_t i, cap, n_scheme, n_host, n_auth;
	char *w;
	int si = -1;

	memset(u, 0, sizeof(*u));
	*why = NULL;
	p = strstr(url, "://");
	if (!p) {
		*why = "not a URL (scheme:// missing)";
		return -EINVAL;
	}
	n_scheme = (size_t)(p - url);
	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strlen(schemes[i].name) == n_scheme &&
		    strncasecmp(url, schemes[i].name, n_scheme) == 0)
			si = (int)i;
	if (si < 0) {
		*why = "unsupported scheme (ws, wss, http or https)";
		return -EINVAL;
	}
	auth = p + 3;
	auth_end = auth + strcspn(auth, "/?#");
	if (*auth_end == '#' || strchr(auth_end, '#')) {
		*why = "a fragment (#) is not allowed";
		return -EINVAL;
	}
	if (memchr(auth, '@', (size_t)(auth_end - auth))) {
		*why = "user info in the URL is not supported";
		return -EINVAL;
	}
	if (!target_ok(auth_end)) {
		*why = "space, control or non-ASCII character in the path";
		return -EINVAL;
	}
	u->port = schemes[si].port;
	u->tls = schemes[si].tls;
	if (*auth == '[') {
		h = auth + 1;
		h_end = memchr(h, ']', (size_t)(auth_end - h));
		if (!h_end || h_end == h) {
			*why = "malformed [IPv6] host";
			return -EINVAL;
		}
		for (p = h; p < h_end; p++)
			if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.') {
				*why = "malformed [IPv6] host";
				return -EINVAL;
			}
		u->ipv6 = true;
		p = h_end + 1;
	} else {
		h = auth;
		h_end = auth + strcspn(auth, ":/?");
		if (h_end > auth_end)
			h_end = auth_end;
		for (p = h; p < h_end; p++)
			if (!host_char((unsigned char)*p)) {
				*why = "invalid character in the host";
				return -EINVAL;
			}
		p = h_end;
	}
	if (h_end == h) {
		*why = "no host";
		return -EINVAL;
	}
	if (p < auth_end) {
		if (*p != ':') {
			*why = "malformed authority";
			return -EINVAL;
		}
		port_s = p + 1;
		if (parse_port(port_s, (size_t)(auth_end - port_s), &u->port) < 0) {
			*why = "port must be 1-65535";
			return -EINVAL;
		}
	}
	n_host = (size_t)(h_end - h);
	n_auth = (size_t)(auth_end - auth);
	cap = 5 * strlen(url) + 32;
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

void engy_url_free(struct engy_url *u)
{
	free(u->buf);
	memset(u, 0, sizeof(*u));
}
