/* SPDX-License-Identifier: MIT */
#include <stdio.h>

int main(void)
{
	printf("bench_backend_ref: placeholder\n");
	return 0;
}
