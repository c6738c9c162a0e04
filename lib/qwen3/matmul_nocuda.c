/* SPDX-License-Identifier: MIT */
/* The CUDA entry points of a build without CUDA: device "cuda" is refused. */
#include <errno.h>
#include <stdio.h>

#include "qwen3_int.h"

int engy_q3_cuda_open(struct q3_cuda **out, bool bf16, char *name,
		      size_t namelen, char *err, size_t errlen)
{
	(void)bf16;
	*out = NULL;
	snprintf(
		err, errlen,
		"device cuda: this build has no CUDA path (configure --with-cuda)");
	return -ENOTSUP;
}

void engy_q3_cuda_close(struct q3_cuda *c)
{
}

int engy_q3_cuda_matmul(struct q3_cuda *c, const float *x, size_t n,
			const void *w, int wt, size_t in, size_t out, float *y)
{
	return -ENOTSUP;
}
