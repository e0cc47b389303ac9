/*
 * offload.c: the pool of worker threads that run the blocking steps of
 * requests, so that the event-loop threads of http.c never wait for a disk,
 * an fdatasync or a group commit.
 *
 * A job is embedded in its owner (no allocation); jobs run in FIFO order.
 * Workers start on demand, up to 'max_workers', whenever a job is queued
 * and no worker is idle: every request waiting for the same group commit
 * holds its own worker, which is what lets the committer batch them. Idle
 * workers stay for reuse until offload_stop, which runs every queued job to
 * completion and joins them all; a job submitted after that runs at once on
 * the caller's thread (shutdown only), so no request is left suspended.
 */
#include "config.h"

#include "common/common.h"
#include "server/offload.h"
#include "server/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct offload {
    pthread_mutex_t lock;
    pthread_cond_t work;
    struct offload_job *head; /* FIFO */
    struct offload_job *tail;
    pthread_t *threads;
    uint32_t n_workers;
    uint32_t n_idle;
    uint32_t max_workers;
    size_t stack_len;
    bool is_stopping;
};

static void *
worker_main(void *arg)
{
    struct offload *o = arg;
    pthread_mutex_lock(&o->lock);
    for (;;) {
        while (!o->head && !o->is_stopping) {
            o->n_idle++;
            pthread_cond_wait(&o->work, &o->lock);
            o->n_idle--;
        }
        if (!o->head)
            break; /* stopping and nothing left to run */
        struct offload_job *job = o->head;
        o->head = job->next;
        if (!o->head)
            o->tail = NULL;
        job->next = NULL;
        pthread_mutex_unlock(&o->lock);
        /* The job may be freed by its own function (it lives in the
         * request, which MHD may complete as soon as it is resumed), so
         * nothing touches it afterwards. */
        job->fn(job->arg);
        pthread_mutex_lock(&o->lock);
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

/* Starts one more worker; called with the lock held. Returns 0 or -errno
 * (the job then waits for a running worker). */
static int
worker_start(struct offload *o)
{
    o->threads = xrealloc(o->threads, (o->n_workers + 1) * sizeof(*o->threads));
    int err = server_thread_start(&o->threads[o->n_workers], "shard-offload", o->stack_len,
                                  worker_main, o);
    if (err < 0)
        return err;
    o->n_workers++;
    return 0;
}

struct offload *
offload_create(uint32_t max_workers, size_t stack_len)
{
    struct offload *o = xcalloc(1, sizeof(*o));
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->work, NULL);
    o->max_workers = max_workers ? max_workers : 1;
    o->stack_len = stack_len;
    return o;
}

void
offload_submit(struct offload *o, struct offload_job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&o->lock);
    if (o->is_stopping) {
        pthread_mutex_unlock(&o->lock);
        job->fn(job->arg);
        return;
    }
    if (o->tail)
        o->tail->next = job;
    else
        o->head = job;
    o->tail = job;
    if (o->n_idle == 0 && o->n_workers < o->max_workers) {
        int err = worker_start(o);
        if (err < 0 && o->n_workers == 0) {
            /* No worker at all would leave the request suspended forever:
             * run it here, as the thread-per-connection server did. */
            o->head = o->tail = NULL;
            pthread_mutex_unlock(&o->lock);
            log_error("offload: cannot start a worker thread: %s", strerror(-err));
            job->fn(job->arg);
            return;
        }
        if (err < 0)
            log_warn("offload: cannot start a worker thread (%s); %u running", strerror(-err),
                     o->n_workers);
    }
    pthread_cond_signal(&o->work);
    pthread_mutex_unlock(&o->lock);
}

uint32_t
offload_workers(struct offload *o)
{
    pthread_mutex_lock(&o->lock);
    uint32_t n = o->n_workers;
    pthread_mutex_unlock(&o->lock);
    return n;
}

void
offload_stop(struct offload *o)
{
    if (!o)
        return;
    pthread_mutex_lock(&o->lock);
    bool was_stopping = o->is_stopping;
    o->is_stopping = true;
    pthread_cond_broadcast(&o->work);
    pthread_mutex_unlock(&o->lock);
    if (was_stopping)
        return;
    /* Workers drain the queue before they see is_stopping; n_workers no
     * longer changes, since submit never starts one after is_stopping. */
    for (uint32_t i = 0; i < o->n_workers; i++)
        pthread_join(o->threads[i], NULL);
}

void
offload_destroy(struct offload *o)
{
    if (!o)
        return;
    offload_stop(o);
    free(o->threads);
    pthread_cond_destroy(&o->work);
    pthread_mutex_destroy(&o->lock);
    free(o);
}
