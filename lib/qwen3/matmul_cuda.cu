/* SPDX-License-Identifier: MIT */
/*
 * The CUDA matmul path of the reference engine (device = "cuda"): weights
 * are copied to the device on first use and kept there, each matmul moves
 * its input rows over, runs one cuBLAS SGEMM in full float32 (no TF32),
 * and brings the output rows back.  Everything else stays on the CPU: this
 * is for checking numbers on a GPU, not for speed.
 *
 * Written in C-style C++ (no exceptions, no STL) so the plugin needs no
 * C++ runtime.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

struct ent {
	const void *host;
	float *dev;
};

struct q3_cuda {
	cublasHandle_t h;
	struct ent *tab;	/* open addressing on the host pointer */
	size_t cap, n;
	float *dx, *dy;
	size_t dx_cap, dy_cap;
};

extern "C" {
int engy_q3_cuda_open(struct q3_cuda **out, char *name, size_t namelen,
		 char *err, size_t errlen);
void engy_q3_cuda_close(struct q3_cuda *c);
int engy_q3_cuda_matmul(struct q3_cuda *c, const float *x, size_t n,
		   const void *w, int wt, size_t in, size_t out, float *y);
}

static size_t slot_of(const struct q3_cuda *c, const void *p)
{
	uint64_t k = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;

	return (size_t)(k >> 20) & (c->cap - 1);
}

static int grow(struct q3_cuda *c)
{
	size_t cap = c->cap ? 2 * c->cap : 1024, i, j;
	struct ent *old = c->tab, *t;

	t = (struct ent *)calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	c->tab = t;
	j = c->cap;
	c->cap = cap;
	for (i = 0; i < j; i++) {
		size_t s;

		if (!old[i].host)
			continue;
		for (s = slot_of(c, old[i].host); t[s].host; s = (s + 1) & (cap - 1))
			;
		t[s] = old[i];
	}
	free(old);
	return 0;
}

/* The device copy of weight @w [out, in], uploaded (as float32) on first use. */
static float *weight(struct q3_cuda *c, const void *w, int wt, size_t in,
		     size_t out)
{
	size_t s, i, n = in * out;
	float *d = NULL, *tmp = NULL;
	const float *src = (const float *)w;
	cudaError_t e;

	if (c->cap) {
		for (s = slot_of(c, w); c->tab[s].host; s = (s + 1) & (c->cap - 1))
			if (c->tab[s].host == w)
				return c->tab[s].dev;
	}
	if ((c->n + 1) * 2 > c->cap && grow(c))
		return NULL;
	if (wt == 1) {	/* MM_BF16: widen on the host, exactly */
		const uint16_t *b = (const uint16_t *)w;

		tmp = (float *)malloc(n * sizeof(float));
		if (!tmp)
			return NULL;
		for (i = 0; i < n; i++) {
			uint32_t u = (uint32_t)b[i] << 16;

			memcpy(&tmp[i], &u, sizeof(u));
		}
		src = tmp;
	}
	if (cudaMalloc((void **)&d, n * sizeof(float)) != cudaSuccess) {
		free(tmp);
		return NULL;
	}
	e = cudaMemcpy(d, src, n * sizeof(float), cudaMemcpyHostToDevice);
	free(tmp);
	if (e != cudaSuccess) {
		cudaFree(d);
		return NULL;
	}
	for (s = slot_of(c, w); c->tab[s].host; s = (s + 1) & (c->cap - 1))
		;
	c->tab[s].host = w;
	c->tab[s].dev = d;
	c->n++;
	return d;
}

static int reserve(float **p, size_t *cap, size_t n)
{
	if (n <= *cap)
		return 0;
	cudaFree(*p);
	*p = NULL;
	*cap = 0;
	if (cudaMalloc((void **)p, n * sizeof(float)) != cudaSuccess)
		return -ENOMEM;
	*cap = n;
	return 0;
}

int engy_q3_cuda_open(struct q3_cuda **out, char *name, size_t namelen,
		 char *err, size_t errlen)
{
	struct cudaDeviceProp prop;
	struct q3_cuda *c;
	cudaError_t e;
	int n = 0;

	*out = NULL;
	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		snprintf(err, errlen, "device cuda: no CUDA device (%s)",
			 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		return -ENODEV;
	}
	if (cudaSetDevice(0) != cudaSuccess ||
	    cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
		snprintf(err, errlen, "device cuda: cannot use device 0");
		return -ENODEV;
	}
	c = (struct q3_cuda *)calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (cublasCreate(&c->h) != CUBLAS_STATUS_SUCCESS) {
		free(c);
		snprintf(err, errlen, "device cuda: cublasCreate failed");
		return -ENODEV;
	}
	/* Full float32 products: the reference must not drop to TF32. */
	cublasSetMathMode(c->h, CUBLAS_DEFAULT_MATH);
	snprintf(name, namelen, "cuda %s", prop.name);
	*out = c;
	return 0;
}

void engy_q3_cuda_close(struct q3_cuda *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->cap; i++)
		if (c->tab[i].host)
			cudaFree(c->tab[i].dev);
	free(c->tab);
	cudaFree(c->dx);
	cudaFree(c->dy);
	cublasDestroy(c->h);
	free(c);
}

int engy_q3_cuda_matmul(struct q3_cuda *c, const float *x, size_t n,
		   const void *w, int wt, size_t in, size_t out, float *y)
{
	const float one = 1.0f, zero = 0.0f;
	float *dw = weight(c, w, wt, in, out);

	if (!dw || reserve(&c->dx, &c->dx_cap, n * in) ||
	    reserve(&c->dy, &c->dy_cap, n * out))
		return -ENOMEM;
	if (cudaMemcpy(c->dx, x, n * in * sizeof(float),
		       cudaMemcpyHostToDevice) != cudaSuccess)
		return -EIO;
	/*
	 * Row-major Y [n, out] is column-major Y^T [out, n] = W X^T, where
	 * row-major W [out, in] is column-major W^T (so op T) and row-major
	 * X [n, in] is column-major X^T (op N).
	 */
	if (cublasSgemm(c->h, CUBLAS_OP_T, CUBLAS_OP_N, (int)out, (int)n,
			(int)in, &one, dw, (int)in, c->dx, (int)in, &zero,
			c->dy, (int)out) != CUBLAS_STATUS_SUCCESS)
		return -EIO;
	if (cudaMemcpy(y, c->dy, n * out * sizeof(float),
		       cudaMemcpyDeviceToHost) != cudaSuccess)
		return -EIO;
	return 0;
}
