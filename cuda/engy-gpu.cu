// SPDX-License-Identifier: MIT
// engy-gpu: list CUDA devices and check that cuBLAS and a kernel of ours
// compute what the CPU computes (SGEMM, and fp32 -> bf16 round-to-nearest-
// even as torch casts hidden states).  Exit 0 when every device passes,
// 1 on a wrong result or a CUDA error, 3 when there is no device
// (cudaErrorNoDevice, none counted, or no CUDA driver installed at all)
// and only then, the reason on the "no GPU (...)" line: a driver that is
// there but too old, or any other error of the runtime, is 1, with the
// error's name and text.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static int cuda_fail(const char *what, cudaError_t e)
{
	std::fprintf(stderr, "engy-gpu: %s: %s\n", what, cudaGetErrorString(e));
	return 1;
}

static uint16_t bf16_rne_host(float f)
{
	uint32_t u;

	std::memcpy(&u, &f, sizeof(u));
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);	// quiet NaN
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

__global__ void bf16_rne_kernel(const float *in, uint16_t *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		uint32_t u = __float_as_uint(in[i]);

		if ((u & 0x7fffffffu) > 0x7f800000u)
			out[i] = (uint16_t)((u >> 16) | 0x40);
		else
			out[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
	}
}

static uint32_t rng_state = 12345;

static float frand(void)
{
	rng_state = rng_state * 1664525u + 1013904223u;
	return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static int check_device(int dev)
{
	const int m = 192, n = 160, k = 256, nb = 1 << 16;
	std::vector<float> a(m * k), b(k * n), c(m * n), ref(m * n), x(nb);
	std::vector<uint16_t> y(nb);
	float *da = nullptr, *db = nullptr, *dc = nullptr, *dx = nullptr;
	uint16_t *dy = nullptr;
	const float one = 1.0f, zero = 0.0f;
	cublasHandle_t h = nullptr;
	cudaError_t e;
	double maxerr = 0;
	int bad_bf16 = 0, rc = 1;

	for (auto &v : a) v = frand();
	for (auto &v : b) v = frand();
	for (int i = 0; i < nb; i++)
		x[i] = frand() * std::ldexp(1.0f, (i % 40) - 20);
	// column-major C = A * B, as cuBLAS counts
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double s = 0;
			for (int l = 0; l < k; l++)
				s += (double)a[l * m + i] * b[j * k + l];
			ref[j * m + i] = (float)s;
		}
	if ((e = cudaSetDevice(dev)) != cudaSuccess)
		return cuda_fail("cudaSetDevice", e);
	if ((e = cudaMalloc(&da, a.size() * 4)) || (e = cudaMalloc(&db, b.size() * 4)) ||
	    (e = cudaMalloc(&dc, c.size() * 4)) || (e = cudaMalloc(&dx, x.size() * 4)) ||
	    (e = cudaMalloc(&dy, y.size() * 2))) {
		rc = cuda_fail("cudaMalloc", e);
		goto out;
	}
	cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
	cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
	cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
	if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS ||
	    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, m, db, k,
			&zero, dc, m) != CUBLAS_STATUS_SUCCESS) {
		std::fprintf(stderr, "engy-gpu: device %d: cuBLAS SGEMM failed\n", dev);
		goto out;
	}
	bf16_rne_kernel<<<(nb + 255) / 256, 256>>>(dx, dy, nb);
	// A launch that never ran (no machine code for this GPU, and PTX the
	// driver cannot compile) is reported here, not by the synchronize.
	if ((e = cudaGetLastError()) != cudaSuccess ||
	    (e = cudaDeviceSynchronize()) != cudaSuccess) {
		rc = cuda_fail("kernel", e);
		goto out;
	}
	cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
	cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost);
	for (int i = 0; i < m * n; i++)
		maxerr = std::fmax(maxerr, std::fabs((double)c[i] - ref[i]));
	for (int i = 0; i < nb; i++)
		bad_bf16 += y[i] != bf16_rne_host(x[i]);
	std::printf("device=%d sgemm=%dx%dx%d max_abs_err=%.3g bf16_cast_mismatches=%d/%d\n",
		    dev, m, n, k, maxerr, bad_bf16, nb);
	rc = maxerr < 1e-3 && bad_bf16 == 0 ? 0 : 1;
out:
	if (h)
		cublasDestroy(h);
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	cudaFree(dx);
	cudaFree(dy);
	return rc;
}

int main(void)
{
	int n = 0, rc = 0, drv = 0, rt = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	cudaDriverGetVersion(&drv);	// 0: no driver library (libcuda) at all
	cudaRuntimeGetVersion(&rt);
	if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
		std::printf("engy-gpu: no GPU (%s: %s)\n",
			    e != cudaSuccess ? cudaGetErrorName(e)
					     : "cudaGetDeviceCount",
			    e != cudaSuccess ? cudaGetErrorString(e)
					     : "0 devices");
		return 3;
	}
	// No driver installed: a machine without a GPU, said as such.  A
	// driver that is there but older than the runtime, or any other
	// error, is a failure with its own name and text.
	if (e != cudaSuccess && drv == 0) {
		std::printf("engy-gpu: no GPU (no CUDA driver installed: %s: "
			    "%s; runtime %d)\n",
			    cudaGetErrorName(e), cudaGetErrorString(e), rt);
		return 3;
	}
	if (e == cudaErrorInsufficientDriver) {
		std::fprintf(stderr, "engy-gpu: the CUDA driver is too old: "
			     "driver API version %d, runtime %d (%s: %s)\n",
			     drv, rt, cudaGetErrorName(e), cudaGetErrorString(e));
		return 1;
	}
	if (e != cudaSuccess) {
		std::fprintf(stderr, "engy-gpu: cudaGetDeviceCount: %s: %s "
			     "(driver API version %d, runtime %d)\n",
			     cudaGetErrorName(e), cudaGetErrorString(e), drv, rt);
		return 1;
	}
	for (int d = 0; d < n; d++) {
		cudaDeviceProp p;

		if (cudaGetDeviceProperties(&p, d) != cudaSuccess)
			return 1;
		std::printf("device=%d name=\"%s\" cc=%d.%d memory_mib=%zu\n", d, p.name,
			    p.major, p.minor, (size_t)(p.totalGlobalMem >> 20));
		rc |= check_device(d);
	}
	std::printf("engy-gpu: %s\n", rc ? "FAILED" : "ok");
	return rc;
}
