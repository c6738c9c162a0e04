/* SPDX-License-Identifier: MIT */
/*
 * Blocking JSON-RPC 2.0 over HTTP POST (lib/http/httpc), for worker threads.
 * Substrate nodes (and chopsticks) answer HTTP and WebSocket on one port;
 * a ws:// or wss:// endpoint is dialled as http:// or https://.
 */
#ifndef CHAIN_SUBTENSOR_RPC_H
#define CHAIN_SUBTENSOR_RPC_H

#include <stdatomic.h>
#include <stddef.h>

#include <cjson/cJSON.h>

struct engy_httpc;

struct rpc {
	struct engy_httpc *http; /* kept for keep-alive */
	char *url;
	long timeout_ms;
	size_t max_body;
	const atomic_int *cancel; /* non-zero: abort transfers */
	unsigned id;
	/* the last failure */
	long code; /* JSON-RPC error code, 0 if none */
	char err[384];
};

int rpc_init(struct rpc *r, const char *endpoint, long timeout_ms,
	     size_t max_body, const atomic_int *cancel);
void rpc_free(struct rpc *r);

/*
 * rpc_call() - call @method with @params (a JSON array text).  On 0,
 * *@root owns the response (cJSON_Delete it) and *@result points into it
 * (possibly a JSON null).  Errors: -EREMOTEIO for a JSON-RPC error (@code
 * and @err hold its code, message and data), -ECANCELED, -ETIMEDOUT,
 * -ECONNREFUSED / -EHOSTUNREACH / -EIO for transport failures, -EPROTO
 * for a response that is not JSON-RPC, -EFBIG over max_body; @err says
 * which.
 */
int rpc_call(struct rpc *r, const char *method, const char *params,
	     cJSON **root, const cJSON **result);

/* A string result ("0x..."), copied into @out (@cap bytes). */
int rpc_call_str(struct rpc *r, const char *method, const char *params,
		 char *out, size_t cap);

#endif /* CHAIN_SUBTENSOR_RPC_H */
