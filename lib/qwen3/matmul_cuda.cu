/* SPDX-License-Identifier: MIT */
/*
 * The CUDA matmul path of the reference engine (device = "cuda"): weights
 * are copied to the device on first use and kept there, each matmul moves
 * its input rows over, runs one cuBLAS SGEMM in full float32 (no TF32),
 * and brings the output rows back.  Everything else stays on the CPU: this
 * is for checking numbers on a GPU, not for speed.
 *
 * In bf16 mode (kernel profile bf16act on the GPU) a bf16 weight stays
 * bf16 on the device and its matmul is a bf16 GEMM as a bf16 GPU model
 * runs it: cublasGemmEx with bf16 inputs and float32 accumulation (the
 * tensor cores, cuBLAS's own split and order), float32 out; the engine
 * rounds inputs and outputs to bf16 around it as the profile says.  Float32
 * weights (dequantized INT4/FP8) stay an SGEMM.
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

#include "bf16.h"

struct ent {
	const void *host;
	void *dev; /* float32, or bf16 (raw) in bf16 mode */
};

struct q3_cuda {
	cublasHandle_t h;
	struct ent *tab;	/* open addressing on the host pointer */
	size_t cap, n;
	float *dx, *dy;
	size_t dx_cap, dy_cap;
	bool bf16;
	uint16_t *hxb, *dxb; /* bf16 mode: the input rows, host and device */
	size_t hxb_cap, dxb_cap;
};

extern "C" {
int engy_q3_cuda_open(struct q3_cuda **out, bool bf16, char *name,
		      size_t namelen, char *err, size_t errlen);
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

/* The device copy of weight @w [out, in], uploaded on first use: as
 * float32, or in bf16 mode a bf16 weight as it is. */
static void *weight(struct q3_cuda *c, const void *w, int wt, size_t in,
		    size_t out)
{
	size_t s, i, n = in * out;
	void *d = NULL;
	float *tmp = NULL;
	const void *src = w;
	size_t es = sizeof(float);
	cudaError_t e;

	if (c->cap) {
		for (s = slot_of(c, w); c->tab[s].host; s = (s + 1) & (c->cap - 1))
			if (c->tab[s].host == w)
				return c->tab[s].dev;
	}
	if ((c->n + 1) * 2 > c->cap && grow(c))
		return NULL;
	if (wt == 1 && c->bf16) {
		es = sizeof(uint16_t);
	} else if (wt == 1) { /* MM_BF16: widen on the host, exactly */
		const uint16_t *b = (const uint16_t *)w;

		tmp = (float *)malloc(n * sizeof(float));
		if (!tmp)
			return NULL;
		for (i = 0; i < n; i++)
			tmp[i] = engy_bf16_to_f32(b[i]);
		src = tmp;
	}
	if (cudaMalloc(&d, n * es) != cudaSuccess) {
		free(tmp);
		return NULL;
	}
	e = cudaMemcpy(d, src, n * es, cudaMemcpyHostToDevice);
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

static int reserve(void **p, size_t *cap, size_t n, size_t es)
{
	if (n <= *cap)
		return 0;
	cudaFree(*p);
	*p = NULL;
	*cap = 0;
	if (cudaMalloc(p, n * es) != cudaSuccess)
		return -ENOMEM;
	*cap = n;
	return 0;
}

int engy_q3_cuda_open(struct q3_cuda **out, bool bf16, char *name,
		      size_t namelen, char *err, size_t errlen)
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
	c->bf16 = bf16;
	snprintf(name, namelen, "cuda %s%s", prop.name,
		 bf16 ? " bf16 gemm" : "");
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
	cudaFree(c->dxb);
	free(c->hxb);
	cublasDestroy(c->h);
	free(c);
}

int engy_q3_cuda_matmul(struct q3_cuda *c, const float *x, size_t n,
		   const void *w, int wt, size_t in, size_t out, float *y)
{
	const float one = 1.0f, zero = 0.0f;
	void *dw = weight(c, w, wt, in, out);
	bool gemm16 = c->bf16 && wt == 1;
	size_t i;

	if (!dw || reserve((void **)&c->dy, &c->dy_cap, n * out, sizeof(float)))
		return -ENOMEM;
	if (gemm16) {
		/* The inputs as bf16, nearest even (the profile has already
		 * rounded them: exact then). */
		if (n * in > c->hxb_cap) {
			uint16_t *t = (uint16_t *)realloc(c->hxb, n * in * 2);

			if (!t)
				return -ENOMEM;
			c->hxb = t;
			c->hxb_cap = n * in;
		}
		for (i = 0; i < n * in; i++)
			c->hxb[i] = engy_bf16_from_f32(x[i]);
		if (reserve((void **)&c->dxb, &c->dxb_cap, n * in, 2) ||
		    cudaMemcpy(c->dxb, c->hxb, n * in * 2,
			       cudaMemcpyHostToDevice) != cudaSuccess)
			return -EIO;
	} else {
		if (reserve((void **)&c->dx, &c->dx_cap, n * in, sizeof(float)))
			return -ENOMEM;
		if (cudaMemcpy(c->dx, x, n * in * sizeof(float),
			       cudaMemcpyHostToDevice) != cudaSuccess)
			return -EIO;
	}
	/*
	 * Row-major Y [n, out] is column-major Y^T [out, n] = W X^T, where
	 * row-major W [out, in] is column-major W^T (so op T) and row-major
	 * X [n, in] is column-major X^T (op N).
	 */
	if (gemm16) {
		if (cublasGemmEx(c->h, CUBLAS_OP_T, CUBLAS_OP_N, (int)out,
				 (int)n, (int)in, &one, dw, CUDA_R_16BF,
				 (int)in, c->dxb, CUDA_R_16BF, (int)in, &zero,
				 c->dy, CUDA_R_32F, (int)out,
				 CUBLAS_COMPUTE_32F,
				 CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
			return -EIO;
	} else if (cublasSgemm(c->h, CUBLAS_OP_T, CUBLAS_OP_N, (int)out,
			       (int)n, (int)in, &one, (const float *)dw,
			       (int)in, c->dx, (int)in, &zero, c->dy,
			       (int)out) != CUBLAS_STATUS_SUCCESS) {
		return -EIO;
	}
	if (cudaMemcpy(y, c->dy, n * out * sizeof(float),
		       cudaMemcpyDeviceToHost) != cudaSuccess)
		return -EIO;
	return 0;
}
