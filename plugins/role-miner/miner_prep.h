/* SPDX-License-Identifier: MIT */
/*
 * The miner's preparation, once the backend knows its model: on the
 * worker pool, load the tokenizer, compute model_root, pick the chat
 * template, look at the hardware and ask the gateway how many workers it
 * runs; then, on the loop, dial the legs.
 */
#ifndef ENGY_ROLE_MINER_PREP_H
#define ENGY_ROLE_MINER_PREP_H

struct miner;

/* 0, or a negative errno (logged) that ends the daemon. */
int miner_prep_start(struct miner *m);
void miner_prep_free(struct miner *m);

#endif /* ENGY_ROLE_MINER_PREP_H */
