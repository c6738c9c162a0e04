/* SPDX-License-Identifier: MIT */
/*
 * TLS for wss://: a client context that verifies the server's chain (the
 * system store, or ca_file) and its name or IP address, and, when
 * tls_cert/tls_key are set, a server context for the listener.
 */
#include <arpa/inet.h>
#include <errno.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "ws_int.h"

static const char *ssl_why(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;

	return r ? r : "unknown TLS error";
}

static int config_error(struct ws_inst *in, const char *opt, const char *path)
{
	engy_err(in->host, "event=ws_config_error option=%s file=%s why=\"%s\"",
		 opt, path, ssl_why());
	ERR_clear_error();
	return -EINVAL;
}

int ws_tls_init(struct ws_inst *in)
{
	const struct ws_conf *cf = &in->conf;

	in->cli_tls = SSL_CTX_new(TLS_client_method());
	if (!in->cli_tls)
		return -ENOMEM;
	SSL_CTX_set_min_proto_version(in->cli_tls, TLS1_2_VERSION);
	if (cf->insecure) {
		SSL_CTX_set_verify(in->cli_tls, SSL_VERIFY_NONE, NULL);
		engy_warn(
			in->host,
			"event=ws_tls_insecure why=\"insecure = true: wss:// certificates are NOT verified\"");
	} else {
		SSL_CTX_set_verify(in->cli_tls, SSL_VERIFY_PEER, NULL);
		if (cf->ca_file) {
			if (SSL_CTX_load_verify_locations(
				    in->cli_tls, cf->ca_file, NULL) != 1)
				return config_error(in, "ca_file", cf->ca_file);
		} else if (SSL_CTX_set_default_verify_paths(in->cli_tls) != 1) {
			engy_warn(in->host,
				  "event=ws_tls_no_system_store why=\"%s\"",
				  ssl_why());
			ERR_clear_error();
		}
	}
	if (!cf->tls_cert)
		return 0;
	in->srv_tls = SSL_CTX_new(TLS_server_method());
	if (!in->srv_tls)
		return -ENOMEM;
	SSL_CTX_set_min_proto_version(in->srv_tls, TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(in->srv_tls, cf->tls_cert) != 1)
		return config_error(in, "tls_cert", cf->tls_cert);
	if (SSL_CTX_use_PrivateKey_file(in->srv_tls, cf->tls_key,
					SSL_FILETYPE_PEM) != 1)
		return config_error(in, "tls_key", cf->tls_key);
	if (SSL_CTX_check_private_key(in->srv_tls) != 1)
		return config_error(in, "tls_key", cf->tls_key);
	return 0;
}

void ws_tls_free(struct ws_inst *in)
{
	SSL_CTX_free(in->cli_tls);
	SSL_CTX_free(in->srv_tls);
	in->cli_tls = NULL;
	in->srv_tls = NULL;
}

static bool ip_literal(const char *host)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, host, buf) == 1 ||
	       inet_pton(AF_INET6, host, buf) == 1;
}

SSL *ws_tls_client(struct ws_inst *in, const struct engy_url *u)
{
	SSL *ssl = SSL_new(in->cli_tls);
	bool ip = ip_literal(u->host);
	int ok = 1;

	if (!ssl)
		return NULL;
	if (!ip)
		ok = SSL_set_tlsext_host_name(ssl, u->host);
	if (ok && !in->conf.insecure)
		ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
							u->host)
			: SSL_set1_host(ssl, u->host);
	if (!ok) {
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

int ws_tls_verify_error(struct bufferevent *bev, const char **why)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	unsigned long e, first = 0;
	long v;

	if (!ssl)
		return 0;
	while ((e = bufferevent_get_openssl_error(bev)))
		if (!first)
			first = e;
	v = SSL_get_verify_result(ssl);
	if (v != X509_V_OK) {
		*why = X509_verify_cert_error_string(v);
		return -EKEYREJECTED;
	}
	if (first) {
		*why = ERR_reason_error_string(first);
		if (!*why)
			*why = "TLS handshake failed";
		return -EPROTO;
	}
	return 0;
}
