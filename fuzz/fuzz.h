/* SPDX-License-Identifier: MIT */
/* The one entry point every fuzz target defines (libFuzzer's). */
#ifndef ENGY_FUZZ_H
#define ENGY_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* ENGY_FUZZ_H */
