/*
 * commit.h: group commit (commit.c). Every change of objects, parts and
 * uploads (an index_op) goes through committer_run or committer_submit,
 * which make the data durable in storage before the index transaction that
 * publishes it. Bucket, user, key and grant changes are index transactions
 * of their own.
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

/* The end of a committer_submit: 'rc' as committer_run would return it. */
typedef void (*committer_done_fn)(void *arg, int rc);
/*
 * The asynchronous committer_run: queues 'ops' (borrowed until 'done' runs)
 * for the next group commit and returns at once. 'done(arg, rc)' runs
 * exactly once, on the committer thread, after the batch's storage sync, its
 * index commit and the release of the extents it freed: the same order and
 * per-op results as committer_run. With grouping off, or once
 * committer_drain was called, the commit runs on the calling thread and
 * 'done' before committer_submit returns. 'done' must not block: every
 * later batch waits for it (no disk, no lock held long).
 */
void committer_submit(struct committer *c, struct index_op *ops, size_t n_ops,
                      committer_done_fn done, void *arg);
/* Waits until the 'done' of every committer_submit so far has run; from the
 * call on, committer_submit commits on its caller's thread. For shutdown,
 * before the connections those callbacks resume go away. Accepts NULL. */
void committer_drain(struct committer *c);

#endif
