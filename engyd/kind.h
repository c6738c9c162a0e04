/* SPDX-License-Identifier: MIT */
/* What the host knows of each plugin kind: name, ops size, required ops. */
#ifndef ENGY_CORE_KIND_H
#define ENGY_CORE_KIND_H

#include <stddef.h>
#include <stdint.h>

struct engy_kind_info {
	uint32_t kind;
	const char *name;
	size_t ops_size; /* the host's sizeof(struct engy_<kind>_ops) */
	size_t ops_min;	 /* the least a 1.0 plugin's ops->size may be */
	struct {
		const char *name;
		size_t offset;
	} required[32]; /* ends with a NULL name */
	/* The oldest ABI minor a plugin of this kind may be built for (a
	 * struct it exchanges by value or in arrays grew), and why. */
	uint16_t min_minor;
	const char *min_why;
};

const struct engy_kind_info *engy_kind_info(uint32_t kind);
/* By name ("proof"), or NULL. */
const struct engy_kind_info *engy_kind_by_name(const char *name);
const char *engy_kind_name(uint32_t kind);

#endif /* ENGY_CORE_KIND_H */
