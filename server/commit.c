/*
 * commit.c: group commit. Every index_op (objects, parts, uploads) goes
 * through here; bucket, user, key and grant changes call index/ directly.
 *
 * With grouping on, handler threads queue their ops and sleep. Two
 * committer threads form a pipeline: the syncer takes everything queued
 * and makes the written extents durable with one storage_sync; the
 * applier takes every synced run, applies all their ops in ONE index
 * transaction (one durable commit), then wakes each waiter. While the
 * applier commits one batch the syncer already syncs the next, so a
 * commit costs the longer of the two steps, not their sum. Under load, N
 * concurrent PUTs cost one fdatasync and one LMDB commit instead of N of
 * each. With grouping off, the caller does the same for its own ops under
 * a mutex.
 *
 * Invariants: an op reaches index_commit only after a storage_sync that
 * started after its writes completed, so a record that is visible always
 * points at durable data; runs are committed in the order they were
 * queued. Extents freed by a commit go back to storage only after it
 * (deferred for readers).
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/commit.h"
#include "server/extents.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/tier.h"
#include "storage/storage.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct commit_item {
    struct commit_item *next;
    struct index_op *ops;
    size_t n_ops;
    int result;
    bool is_done;
    pthread_cond_t done; /* its waiter waits for is_done */
};

/* A FIFO of items. */
struct commit_queue {
    struct commit_item *head;
    struct commit_item *tail;
    size_t n_ops;
};

struct committer {
    struct server *srv;
    bool is_group;
    uint32_t max_batch;
    pthread_mutex_t lock;
    pthread_cond_t work;        /* the syncer waits for queued items */
    pthread_cond_t synced_cond; /* the applier waits for synced items */
    pthread_cond_t taken;       /* the syncer waits for the applier to take its run */
    struct commit_queue queued; /* not yet synced */
    struct commit_queue synced; /* synced, waiting for the index transaction */
    bool is_stopping;
    bool is_syncer_done;
    pthread_t syncer;
    pthread_t applier;
    bool has_applier;
    pthread_mutex_t solo_lock; /* grouping off: serializes commits */
};

/* Batch sizes (ops per index transaction): powers of two up to the
 * largest group_commit_max that makes sense. */
static const uint64_t batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};

/* Registered by committer_create (the same series every time). */
static struct metric *m_sync;   /* storage_sync: the fdatasyncs of a commit */
static struct metric *m_commit; /* index_commit: the LMDB transaction */
static struct metric *m_batch;  /* ops per commit */

static void
release_freed(struct server *srv, struct index_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ops[i].result != 0 || ops[i].n_freed == 0)
            continue;
        /* Hot extents first in the list; an object's bytes are in one tier. */
        uint32_t n_hot = 0;
        while (n_hot < ops[i].n_freed && TIER_OF(ops[i].freed[n_hot].flags) == TIER_HOT)
            n_hot++;
        if (n_hot) {
            struct storage_extent *se = xmalloc(sizeof(*se) * n_hot);
            extents_from_index(ops[i].freed, n_hot, se);
            storage_release(srv->storage, se, n_hot);
            free(se);
        }
        if (n_hot < ops[i].n_freed)
            tier_release(srv->tiers, ops[i].freed + n_hot, ops[i].n_freed - n_hot);
    }
}

/* Makes every write completed so far durable (the test delay first). */
static int
sync_step(struct server *srv)
{
    if (srv->cfg.test_commit_delay_ms) {
        /* Tests only: holds the commit open, as a slow disk would. */
        struct timespec ts = {srv->cfg.test_commit_delay_ms / 1000,
                              (long)(srv->cfg.test_commit_delay_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    int64_t t0 = clock_mono_ns();
    int rc = storage_sync(srv->storage);
    metrics_observe(m_sync, (uint64_t)(clock_mono_ns() - t0));
    if (rc < 0)
        log_error("commit: storage sync failed: %d", rc);
    return rc;
}

/* Commits 'ops' (already synced) in one transaction. */
static int
apply_step(struct server *srv, struct index_op *ops, size_t n)
{
    int64_t t0 = clock_mono_ns();
    int rc = index_commit(srv->index, ops, n);
    metrics_observe(m_commit, (uint64_t)(clock_mono_ns() - t0));
    metrics_observe(m_batch, n);
    atomic_fetch_add(&srv->metrics.commits, 1);
    atomic_fetch_add(&srv->metrics.committed_ops, n);
    return rc;
}

/* Takes from 'q' a run of items of at most 'max' ops (at least one item);
 * called with the lock held on a non-empty queue. */
static struct commit_item *
queue_take(struct commit_queue *q, uint32_t max, size_t *n_ops)
{
    struct commit_item *first = q->head;
    struct commit_item *last = first;
    size_t n = first->n_ops;
    while (last->next && n + last->next->n_ops <= max) {
        last = last->next;
        n += last->n_ops;
    }
    q->head = last->next;
    if (!q->head)
        q->tail = NULL;
    q->n_ops -= n;
    last->next = NULL;
    *n_ops = n;
    return first;
}

/* Appends the run starting at 'first' to 'q'; called with the lock held. */
static void
queue_append(struct commit_queue *q, struct commit_item *first, size_t n_ops)
{
    struct commit_item *last = first;
    while (last->next)
        last = last->next;
    if (q->tail)
        q->tail->next = first;
    else
        q->head = first;
    q->tail = last;
    q->n_ops += n_ops;
}

/* Gives every item of the run its result and wakes its waiter; called
 * with the lock held. An item may be gone once its waiter runs, so the
 * next pointer is read first. */
static void
run_finish(struct commit_item *first, int rc)
{
    for (struct commit_item *it = first; it;) {
        struct commit_item *next = it->next;
        it->result = rc;
        it->is_done = true;
        pthread_cond_signal(&it->done);
        it = next;
    }
}

/* The first stage: syncs each queued run, then hands it to the applier.
 * It starts a new sync only once the applier took the previous run, so
 * items queued meanwhile join one larger run instead of costing a sync
 * each. */
static void *
syncer_main(void *arg)
{
    struct committer *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while ((!c->queued.head || c->synced.head) && !c->is_stopping)
            pthread_cond_wait(c->queued.head ? &c->taken : &c->work, &c->lock);
        if (!c->queued.head && c->is_stopping)
            break;
        size_t n;
        struct commit_item *first = queue_take(&c->queued, c->max_batch, &n);
        pthread_mutex_unlock(&c->lock);
        int rc = sync_step(c->srv);
        pthread_mutex_lock(&c->lock);
        if (rc < 0) {
            run_finish(first, rc);
            continue;
        }
        queue_append(&c->synced, first, n);
        pthread_cond_signal(&c->synced_cond);
    }
    c->is_syncer_done = true;
    pthread_cond_signal(&c->synced_cond);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* The second stage: one index transaction for every synced run it finds
 * (up to max_batch ops), then the freed extents and the waiters. */
static void *
applier_main(void *arg)
{
    struct committer *c = arg;
    struct index_op *batch = NULL;
    size_t batch_cap = 0;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->synced.head && !c->is_syncer_done)
            pthread_cond_wait(&c->synced_cond, &c->lock);
        if (!c->synced.head)
            break; /* the syncer stopped and nothing is left */
        size_t n;
        struct commit_item *first = queue_take(&c->synced, c->max_batch, &n);
        pthread_cond_signal(&c->taken);
        pthread_mutex_unlock(&c->lock);

        /* Ops are copied into one array so index_commit sees one batch,
         * then results are copied back. */
        if (n > batch_cap) {
            batch_cap = n * 2;
            batch = xrealloc(batch, batch_cap * sizeof(*batch));
        }
        size_t k = 0;
        for (struct commit_item *it = first; it; it = it->next) {
            memcpy(batch + k, it->ops, it->n_ops * sizeof(*batch));
            k += it->n_ops;
        }
        int rc = apply_step(c->srv, batch, n);
        k = 0;
        for (struct commit_item *it = first; it; it = it->next) {
            memcpy(it->ops, batch + k, it->n_ops * sizeof(*batch));
            k += it->n_ops;
        }
        if (rc == 0)
            release_freed(c->srv, batch, n);

        pthread_mutex_lock(&c->lock);
        run_finish(first, rc);
    }
    pthread_mutex_unlock(&c->lock);
    free(batch);
    return NULL;
}

struct committer *
committer_create(struct server *srv, bool group, uint32_t max_batch)
{
    m_sync = metrics_latency("shardstore_storage_sync_seconds", "",
                             "Time to make a commit's written extents durable (fdatasync)");
    m_commit = metrics_latency("shardstore_index_commit_seconds", "",
                               "Time of one index write transaction (LMDB commit)");
    m_batch = metrics_histogram("shardstore_commit_batch_ops", "",
                                "Mutations per group commit (one fdatasync and one transaction)",
                                batch_bounds, ARRAY_LEN(batch_bounds), 1);
    struct committer *c = xcalloc(1, sizeof(*c));
    c->srv = srv;
    c->is_group = group;
    c->max_batch = max_batch ? max_batch : 1024;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->solo_lock, NULL);
    pthread_cond_init(&c->work, NULL);
    pthread_cond_init(&c->synced_cond, NULL);
    pthread_cond_init(&c->taken, NULL);
    if (!group)
        return c;
    if (pthread_create(&c->applier, NULL, applier_main, c) != 0)
        goto fail;
    c->has_applier = true;
    if (pthread_create(&c->syncer, NULL, syncer_main, c) != 0)
        goto fail;
    return c;

fail:
    log_error("commit: cannot start the committer threads");
    if (c->has_applier) {
        pthread_mutex_lock(&c->lock);
        c->is_syncer_done = true;
        pthread_cond_signal(&c->synced_cond);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->applier, NULL);
    }
    free(c);
    return NULL;
}

void
committer_destroy(struct committer *c)
{
    if (!c)
        return;
    if (c->is_group) {
        /* The syncer drains the queue, then the applier what it synced. */
        pthread_mutex_lock(&c->lock);
        c->is_stopping = true;
        pthread_cond_signal(&c->work);
        pthread_cond_signal(&c->taken);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->syncer, NULL);
        pthread_join(c->applier, NULL);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->solo_lock);
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->synced_cond);
    pthread_cond_destroy(&c->taken);
    free(c);
}

int
committer_run(struct committer *c, struct index_op *ops, size_t n_ops)
{
    if (!c->is_group) {
        pthread_mutex_lock(&c->solo_lock);
        int rc = sync_step(c->srv);
        if (rc == 0)
            rc = apply_step(c->srv, ops, n_ops);
        pthread_mutex_unlock(&c->solo_lock);
        if (rc == 0)
            release_freed(c->srv, ops, n_ops);
        return rc;
    }
    struct commit_item item = {.ops = ops, .n_ops = n_ops};
    pthread_cond_init(&item.done, NULL);
    pthread_mutex_lock(&c->lock);
    if (c->is_stopping) {
        pthread_mutex_unlock(&c->lock);
        pthread_cond_destroy(&item.done);
        return -ESHUTDOWN;
    }
    /* The item lives on this stack frame: the committer threads unlink it
     * before setting is_done, and this function returns only after that. */
    queue_append(&c->queued, &item, n_ops); /* cppcheck-suppress autoVariables */
    pthread_cond_signal(&c->work);
    while (!item.is_done)
        pthread_cond_wait(&item.done, &c->lock);
    pthread_mutex_unlock(&c->lock);
    pthread_cond_destroy(&item.done);
    return item.result;
}
