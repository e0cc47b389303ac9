/*
 * offload.h: the worker pool that runs blocking request steps off the
 * event loop (offload.c).
 */
#ifndef SHARD_SERVER_OFFLOAD_H
#define SHARD_SERVER_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

/* A unit of work for the pool; embedded in its owner, which keeps it alive
 * until 'fn' runs. 'fn' may free the owner. */
struct offload_job {
    struct offload_job *next;
    void (*fn)(void *arg);
    void *arg;
};

struct offload;
/* Creates a pool that starts up to 'max_workers' threads on demand, each
 * with a stack of 'stack_len' bytes (0: the default). Caller frees with
 * offload_destroy. */
struct offload *offload_create(uint32_t max_workers, size_t stack_len);
/* Queues 'job' (borrowed until its fn runs) and starts a worker when none
 * is idle and the limit allows. After offload_stop, or when no worker can
 * be started at all, runs the job at once on the calling thread. Thread-safe. */
void offload_submit(struct offload *o, struct offload_job *job);
/* Workers started so far. */
uint32_t offload_workers(struct offload *o);
/* Runs every queued job, joins the workers; later submits run inline. */
void offload_stop(struct offload *o);
/* offload_stop, then frees the pool. Accepts NULL. */
void offload_destroy(struct offload *o);

#endif
