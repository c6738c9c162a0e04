/* SPDX-License-Identifier: MIT */
/*
 * Parser of the URLs engy dials: ws://, wss://, http://, https://, an
 * authority of host (a name, IPv4, or [IPv6]) and optional port, then an
 * optional path and query.  No user info (credentials travel in headers),
 * no fragment.  The query may carry a secret: callers log engy_url_safe().
 */
#ifndef ENGY_URL_H
#define ENGY_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct engy_url {
	char *buf;	       /* owns every string below */
	const char *scheme;    /* lower case */
	const char *host;      /* lower case, IPv6 without brackets */
	const char *path;      /* "/" when the URL has none */
	const char *query;     /* after '?', or NULL */
	const char *target;    /* path and "?query": the request target */
	const char *authority; /* the Host header: host[:port] as given */
	const char *safe;      /* scheme://authority/path: loggable */
	uint16_t port;	       /* given, or the scheme's default */
	bool tls;	       /* wss or https */
	bool ipv6;
};

/*
 * engy_url_parse() - parse @url.  Returns 0, -EINVAL with *@why naming the
 * problem, or -ENOMEM.  Free with engy_url_free() after success.
 */
int engy_url_parse(struct engy_url *u, const char *url, const char **why);
void engy_url_free(struct engy_url *u);

#endif /* ENGY_URL_H */
