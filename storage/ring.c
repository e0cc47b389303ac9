/*
 * ring.c: one io_uring per thread, created lazily, shared by every writer
 * running on that thread (a connection's body arrives on one event-loop
 * thread; the request's final step may run on a worker thread).
 *
 * Each SQE carries a 'struct storage__io *' as user_data, so reaping for one
 * writer also completes the buffers of the other writers on the ring. The
 * ring has a mutex (uncontended in the normal case) so that a writer moved to
 * another thread (the worker that finishes a PUT) can still wait for I/O it
 * submitted here. Invariants: an
 * io's is_inflight and the ring's n_inflight change only under the lock; a
 * ring is closed (thread exit) only after n_inflight dropped to 0.
 */
#include "storage/storage_int.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>

struct storage__ring {
    struct io_uring uring;
    pthread_mutex_t lock;
    unsigned n_inflight;
};

static __thread struct storage__ring *ring_self;
static pthread_key_t ring_key;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;

/* ---- reaping --------------------------------------------------------- */

/*
 * Processes the CQEs ready on 'r'; when none is ready and 'is_wait', submits
 * anything pending and blocks for one. Completion functions run here, with
 * the lock held, and may prepare new SQEs (short-write retries). Returns the
 * number of completions or -errno.
 */
static int
ring_reap(struct storage__ring *r, bool is_wait)
{
    for (;;) {
        struct io_uring_cqe *cqe;
        int n = 0;
        while (io_uring_peek_cqe(&r->uring, &cqe) == 0) {
            struct storage__io *io = io_uring_cqe_get_data(cqe);
            int res = cqe->res;
            io_uring_cqe_seen(&r->uring, cqe);
            r->n_inflight--;
            io->is_inflight = false;
            io->complete_fn(io, res);
            if (!io->is_inflight)
                io->ring = NULL;
            n++;
        }
        if (n > 0 || !is_wait)
            return n;
        int ret = io_uring_submit_and_wait(&r->uring, 1);
        if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY && ret != -ETIME)
            return ret;
    }
}

static void
ring_destroy(struct storage__ring *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    while (r->n_inflight > 0) {
        if (ring_reap(r, true) < 0)
            break;
    }
    pthread_mutex_unlock(&r->lock);
    io_uring_queue_exit(&r->uring);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static void
ring_key_destroy(void *arg)
{
    ring_destroy(arg);
}

static void
ring_key_create(void)
{
    pthread_key_create(&ring_key, ring_key_destroy);
}

/* ---- interface -------------------------------------------------------- */

struct storage__ring *
storage__ring_get(int *err)
{
    if (ring_self)
        return ring_self;
    pthread_once(&ring_once, ring_key_create);
    struct storage__ring *r = xcalloc(1, sizeof(*r));
    int ret = io_uring_queue_init(STORAGE_RING_DEPTH, &r->uring, 0);
    if (ret < 0) {
        free(r);
        *err = ret;
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_setspecific(ring_key, r);
    ring_self = r;
    return r;
}

void
storage__ring_lock(struct storage__ring *r)
{
    pthread_mutex_lock(&r->lock);
}

void
storage__ring_unlock(struct storage__ring *r)
{
    pthread_mutex_unlock(&r->lock);
}

struct io_uring_sqe *
storage__ring_prep(struct storage__ring *r, struct storage__io *io)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->uring);
    while (!sqe) {
        /* The kernel consumes SQEs at submit, which frees the slots; when
         * the CQ is backed up, reaping makes room. */
        if (io_uring_submit(&r->uring) < 0)
            ring_reap(r, false);
        sqe = io_uring_get_sqe(&r->uring);
    }
    io_uring_sqe_set_data(sqe, io);
    io->ring = r;
    io->is_inflight = true;
    r->n_inflight++;
    return sqe;
}

int
storage__ring_submit(struct storage__ring *r)
{
    for (;;) {
        int ret = io_uring_submit(&r->uring);
        if (ret >= 0)
            return 0;
        if (ret == -EINTR)
            continue;
        if (ret == -EAGAIN || ret == -EBUSY) {
            /* Completions are backed up: reap some (the SQEs stay queued). */
            if (ring_reap(r, true) < 0)
                return ret;
            continue;
        }
        /* Fatal: the SQEs stay queued and go with the next successful
         * submit (ring_reap submits before waiting), so nothing is lost. */
        return ret;
    }
}

void
storage__io_wait(struct storage__io *io)
{
    struct storage__ring *r = io->ring;
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    while (io->is_inflight) {
        if (ring_reap(r, true) < 0)
            break;
    }
    pthread_mutex_unlock(&r->lock);
}

void
storage__io_poll(struct storage__io *io)
{
    struct storage__ring *r = io->ring;
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    if (io->is_inflight)
        ring_reap(r, false);
    pthread_mutex_unlock(&r->lock);
}

void
storage__ring_thread_release(void)
{
    struct storage__ring *r = ring_self;
    if (!r)
        return;
    ring_self = NULL;
    pthread_setspecific(ring_key, NULL);
    ring_destroy(r);
}
