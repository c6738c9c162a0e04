/* SPDX-License-Identifier: MIT */
/* A caller's error buffer: one formatted message, or nothing. */
#ifndef ENGY_ERRBUF_H
#define ENGY_ERRBUF_H

#include <stddef.h>

/* Format into @err (@errlen bytes, truncated, NUL-terminated); a NULL
 * @err or a zero @errlen is fine: the message is dropped. */
void engy_seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* ENGY_ERRBUF_H */
