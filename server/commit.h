/*
 * commit.h: group commit (commit.c). Every change of objects, parts and
 * uploads (an index_op) goes through committer_run, which makes the data
 * durable in storage before the index transaction that publishes it.
 * Bucket, user, key and grant changes are index transactions of their own.
 */
#ifndef SHARD_SERVER_COMMIT_H
#define SHARD_SERVER_COMMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct committer;
struct index_op;
struct server;

/* Starts the committer ('group' true: batches from a thread). */
struct committer *committer_create(struct server *srv, bool group, uint32_t max_batch);
void committer_destroy(struct committer *c);
/*
 * Makes 'ops' durable: syncs storage, then one index transaction. Blocks
 * until done. Returns 0 when the transaction committed (each op's result
 * says whether that op applied), or -errno when nothing was applied.
 * Releases the extents each op freed to storage (deferred for readers).
 */
int committer_run(struct committer *c, struct index_op *ops, size_t n_ops);

#endif
