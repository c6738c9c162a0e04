/* SPDX-License-Identifier: MIT */
/* Everything a plugin needs: the descriptor, host services and all kinds. */
#ifndef ENGY_ENGY_H
#define ENGY_ENGY_H

#include <engy/types.h>
#include <engy/host.h>
#include <engy/plugin.h>
#include <engy/check.h>
#include <engy/transport.h>
#include <engy/backend.h>
#include <engy/proof.h>
#include <engy/scorer.h>
#include <engy/chain.h>
#include <engy/store.h>
#include <engy/role.h>

#endif /* ENGY_ENGY_H */
