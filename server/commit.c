/*
 * commit.c: group commit. Every index_op (objects, parts, uploads) goes
 * through here; bucket, user, key and grant changes call index/ directly.
 *
 * With grouping on, handler threads queue their ops and sleep
 * (committer_run), or queue them with a callback and go on
 * (committer_submit: PutObject and UploadPart); one committer thread takes
 * everything queued, makes the written extents durable with one
 * storage_sync, applies all ops in ONE index transaction (one durable
 * commit), then wakes the waiters and runs the callbacks. Under load, N
 * concurrent PUTs cost one fdatasync and one LMDB commit instead of N of
 * each. With grouping off, the caller does the same for its own ops under a
 * mutex.
 *
 * Invariant: storage_sync happens before the index commit, so a record
 * that is visible always points at durable data. Extents freed by the
 * commit go back to storage only after it (deferred for readers).
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/commit.h"
#include "server/extents.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/tier.h"
#include "server/util.h"
#include "storage/storage.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* A committer_run waiter's item lives on its stack; a committer_submit's
 * is allocated and freed by the committer once 'done' ran. */
struct commit_item {
    struct commit_item *next;
    struct index_op *ops;
    size_t n_ops;
    int result;
    bool is_done;
    committer_done_fn done; /* NULL: a committer_run waiter */
    void *done_arg;
};

struct committer {
    struct server *srv;
    bool is_group;
    uint32_t max_batch;
    pthread_mutex_t lock;
    pthread_cond_t work;      /* committer waits for items */
    pthread_cond_t done;      /* waiters wait for is_done */
    pthread_cond_t drained;   /* committer_drain waits for n_async == 0 */
    struct commit_item *head; /* FIFO */
    struct commit_item *tail;
    size_t n_async; /* submitted items whose 'done' has not run yet */
    bool is_stopping;
    bool is_draining; /* committer_submit commits on its caller's thread */
    pthread_t thread;
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

/* Syncs data, then commits 'ops' in one transaction. */
static int
commit_ops(struct server *srv, struct index_op *ops, size_t n)
{
    if (srv->cfg.test_commit_delay_ms) {
        /* Tests only: holds the commit open, as a slow disk would. */
        struct timespec ts = {srv->cfg.test_commit_delay_ms / 1000,
                              (long)(srv->cfg.test_commit_delay_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    int64_t t0 = clock_mono_ns();
    int rc = storage_sync(srv->storage);
    int64_t t1 = clock_mono_ns();
    metrics_observe(m_sync, (uint64_t)(t1 - t0));
    if (rc < 0) {
        log_error("commit: storage sync failed: %d", rc);
        return rc;
    }
    rc = index_commit(srv->index, ops, n);
    metrics_observe(m_commit, (uint64_t)(clock_mono_ns() - t1));
    metrics_observe(m_batch, n);
    atomic_fetch_add(&srv->metrics.commits, 1);
    atomic_fetch_add(&srv->metrics.committed_ops, n);
    return rc;
}

static void *
committer_main(void *arg)
{
    struct committer *c = arg;
    struct index_op *batch = NULL;
    size_t batch_cap = 0;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->head && !c->is_stopping)
            pthread_cond_wait(&c->work, &c->lock);
        if (!c->head && c->is_stopping)
            break;
        /* Take a run of items up to max_batch ops. */
        struct commit_item *first = c->head;
        struct commit_item *last = first;
        size_t n = first->n_ops;
        while (last->next && n + last->next->n_ops <= c->max_batch) {
            last = last->next;
            n += last->n_ops;
        }
        c->head = last->next;
        if (!c->head)
            c->tail = NULL;
        last->next = NULL;
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
        int rc = commit_ops(c->srv, batch, n);
        k = 0;
        for (struct commit_item *it = first; it; it = it->next) {
            memcpy(it->ops, batch + k, it->n_ops * sizeof(*batch));
            k += it->n_ops;
        }
        if (rc == 0)
            release_freed(c->srv, batch, n);

        /* Waiters wake; submitted items move to their own list, in
         * order, and their callbacks run outside the lock (they resume
         * connections, which takes MHD's locks). */
        struct commit_item *async_head = NULL;
        struct commit_item **async_tail = &async_head;
        size_t n_called = 0;
        pthread_mutex_lock(&c->lock);
        for (struct commit_item *it = first; it;) {
            struct commit_item *next = it->next;
            it->result = rc;
            if (it->done) {
                it->next = NULL;
                *async_tail = it;
                async_tail = &it->next;
            } else {
                it->is_done = true; /* the waiter may free it from here on */
            }
            it = next;
        }
        pthread_cond_broadcast(&c->done);
        if (async_head) {
            pthread_mutex_unlock(&c->lock);
            for (struct commit_item *it = async_head; it;) {
                struct commit_item *next = it->next;
                it->done(it->done_arg, it->result);
                free(it);
                n_called++;
                it = next;
            }
            pthread_mutex_lock(&c->lock);
            c->n_async -= n_called;
            if (c->n_async == 0)
                pthread_cond_broadcast(&c->drained);
        }
    }
    pthread_mutex_unlock(&c->lock);
    free(batch);
    return NULL;
}

/* Appends 'item' to the queue and wakes the committer; 'c->lock' held. */
static void
queue_item(struct committer *c, struct commit_item *item)
{
    if (c->tail)
        c->tail->next = item;
    else
        c->head = item;
    c->tail = item;
    pthread_cond_signal(&c->work);
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
    pthread_cond_init(&c->done, NULL);
    pthread_cond_init(&c->drained, NULL);
    if (group && server_thread_start(&c->thread, "shard-commit", 0, committer_main, c) != 0) {
        log_error("commit: cannot start committer thread");
        pthread_cond_destroy(&c->drained);
        pthread_cond_destroy(&c->done);
        pthread_cond_destroy(&c->work);
        pthread_mutex_destroy(&c->solo_lock);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    return c;
}

void
committer_destroy(struct committer *c)
{
    if (!c)
        return;
    if (c->is_group) {
        pthread_mutex_lock(&c->lock);
        c->is_stopping = true;
        pthread_cond_signal(&c->work);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->solo_lock);
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->done);
    pthread_cond_destroy(&c->drained);
    free(c);
}

int
committer_run(struct committer *c, struct index_op *ops, size_t n_ops)
{
    if (!c->is_group) {
        pthread_mutex_lock(&c->solo_lock);
        int rc = commit_ops(c->srv, ops, n_ops);
        pthread_mutex_unlock(&c->solo_lock);
        if (rc == 0)
            release_freed(c->srv, ops, n_ops);
        return rc;
    }
    struct commit_item item = {.ops = ops, .n_ops = n_ops};
    pthread_mutex_lock(&c->lock);
    if (c->is_stopping) {
        pthread_mutex_unlock(&c->lock);
        return -ESHUTDOWN;
    }
    /* The item lives on this stack frame: the committer unlinks it before
     * setting is_done, and this function returns only after that. */
    queue_item(c, &item);
    while (!item.is_done)
        pthread_cond_wait(&c->done, &c->lock);
    pthread_mutex_unlock(&c->lock);
    return item.result;
}

void
committer_submit(struct committer *c, struct index_op *ops, size_t n_ops, committer_done_fn done,
                 void *arg)
{
    if (c->is_group) {
        struct commit_item *item = xcalloc(1, sizeof(*item));
        item->ops = ops;
        item->n_ops = n_ops;
        item->done = done;
        item->done_arg = arg;
        pthread_mutex_lock(&c->lock);
        if (!c->is_stopping && !c->is_draining) {
            c->n_async++;
            queue_item(c, item);
            pthread_mutex_unlock(&c->lock);
            return;
        }
        pthread_mutex_unlock(&c->lock);
        free(item);
    }
    done(arg, committer_run(c, ops, n_ops));
}

void
committer_drain(struct committer *c)
{
    if (!c || !c->is_group)
        return;
    pthread_mutex_lock(&c->lock);
    c->is_draining = true;
    while (c->n_async > 0)
        pthread_cond_wait(&c->drained, &c->lock);
    pthread_mutex_unlock(&c->lock);
}
