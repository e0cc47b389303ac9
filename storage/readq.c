/*
 * readq.c: many reads of extents in flight at once (storage_readq_*).
 *
 * A queue has 'depth' slots; each read takes one from storage_readq_prep
 * until storage_readq_reap. Reads are IORING_OP_READ on the volume's
 * buffered fd, on the ring of the thread that prepares them (ring.c); the
 * queue's thread may change between calls, and a read is reaped from
 * whichever ring it went to. Short reads are resubmitted for the rest by
 * the completion; end of file inside an extent is corruption.
 * Invariants: a slot's buffer is never touched by us while the slot is
 * taken and not done; 'is_done' is set (release) only after 'res' and
 * 'done', so a reaper that sees it (acquire) sees the outcome; the queue is
 * freed only when every taken slot is done.
 */
#include "storage/storage_int.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <unistd.h>

struct readq_slot {
    struct storage__io io; /* first: the completion casts back */
    int fd;
    uint8_t *buf;
    uint64_t disk_off;
    size_t len;  /* bytes to read (bounded by the extent) */
    size_t done; /* bytes read so far */
    int res;     /* 0, or -errno once failed */
    atomic_bool is_done;
};

struct storage_readq {
    struct storage *st;
    uint32_t depth;
    uint32_t n_free;
    uint32_t *free;                 /* stack of free slot numbers */
    struct storage__ring *prepared; /* ring holding SQEs not yet submitted */
    struct readq_slot *slots;
};

/* With the ring lock held: an SQE reading the rest of 's'. */
static void
slot_prep_read(struct storage__ring *r, struct readq_slot *s)
{
    struct io_uring_sqe *sqe = storage__ring_prep(r, &s->io);
    io_uring_prep_read(sqe, s->fd, s->buf + s->done, (unsigned)(s->len - s->done),
                       s->disk_off + s->done);
}

static void
slot_finish(struct readq_slot *s, int res)
{
    s->res = res;
    atomic_store_explicit(&s->is_done, true, memory_order_release);
}

/* Completion of a slot's read (any thread, ring lock held): resubmits the
 * rest of a short or interrupted read, records the outcome otherwise. */
static void
slot_complete(struct storage__io *io, int res)
{
    struct readq_slot *s = (struct readq_slot *)io;
    if (res > 0)
        s->done += (size_t)res;
    if (res == 0) {
        slot_finish(s, CORRUPT_BKPT("volume shorter than an extent"));
        return;
    }
    if (res < 0 && res != -EAGAIN && res != -EINTR) {
        slot_finish(s, res);
        return;
    }
    if (s->done == s->len) {
        slot_finish(s, 0);
        return;
    }
    slot_prep_read(io->ring, s);
    if (storage__ring_submit(io->ring) < 0)
        log_warn("storage: resubmit after a short read failed; retrying at next reap");
}

/* Reads 's' with pread(2) at once (no io_uring on this thread). */
static void
slot_pread(struct readq_slot *s)
{
    while (s->done < s->len) {
        ssize_t n =
            pread(s->fd, s->buf + s->done, s->len - s->done, (off_t)(s->disk_off + s->done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            slot_finish(s, -errno);
            return;
        }
        if (n == 0) {
            slot_finish(s, CORRUPT_BKPT("volume shorter than an extent"));
            return;
        }
        s->done += (size_t)n;
    }
    slot_finish(s, 0);
}

/* Waits until slot 's' is done. */
static void
slot_wait(struct readq_slot *s)
{
    while (!atomic_load_explicit(&s->is_done, memory_order_acquire))
        storage__io_wait(&s->io);
}

int
storage_readq_create(struct storage *st, uint32_t depth, struct storage_readq **out)
{
    if (depth == 0 || depth > STORAGE_READQ_MAX)
        return -EINVAL;
    struct storage_readq *q = xcalloc(1, sizeof(*q));
    q->st = st;
    q->depth = depth;
    q->slots = xcalloc(depth, sizeof(*q->slots));
    q->free = xcalloc(depth, sizeof(*q->free));
    for (uint32_t i = 0; i < depth; i++) {
        q->slots[i].io.complete_fn = slot_complete;
        q->free[i] = depth - 1 - i;
    }
    q->n_free = depth;
    *out = q;
    return 0;
}

int
storage_readq_prep(struct storage_readq *q, const struct storage_extent *e, uint64_t off, void *buf,
                   size_t len)
{
    if (q->n_free == 0)
        return -EAGAIN;
    int err = storage__extent_check(q->st, e);
    if (err < 0)
        return err;
    uint32_t slot = q->free[--q->n_free];
    struct readq_slot *s = &q->slots[slot];
    s->fd = storage__volume_get(q->st, e->volume)->rfd;
    s->buf = buf;
    s->disk_off = e->offset + off;
    s->len = off >= e->len ? 0 : (size_t)MIN((uint64_t)len, e->len - off);
    s->done = 0;
    s->res = 0;
    atomic_store_explicit(&s->is_done, false, memory_order_relaxed);
    if (storage__fault_hit(q->st, STORAGE_FAULT_READ)) {
        slot_finish(s, -EIO);
        return (int)slot;
    }
    if (s->len == 0) {
        slot_finish(s, 0);
        return (int)slot;
    }
    struct storage__ring *r = storage__ring_get(&err);
    if (!r) {
        slot_pread(s);
        return (int)slot;
    }
    /* Reads prepared on another thread's ring go out before this one's. */
    if (q->prepared && q->prepared != r)
        storage_readq_submit(q);
    storage__ring_lock(r);
    slot_prep_read(r, s);
    storage__ring_unlock(r);
    q->prepared = r;
    return (int)slot;
}

int
storage_readq_submit(struct storage_readq *q)
{
    struct storage__ring *r = q->prepared;
    if (!r)
        return 0;
    q->prepared = NULL;
    storage__ring_lock(r);
    int err = storage__ring_submit(r);
    storage__ring_unlock(r);
    if (err < 0)
        log_warn("storage: io_uring_submit: %s; retrying at next reap", strerror(-err));
    return err;
}

ssize_t
storage_readq_reap(struct storage_readq *q, int slot)
{
    if (slot < 0 || (uint32_t)slot >= q->depth)
        return -EINVAL;
    struct readq_slot *s = &q->slots[slot];
    slot_wait(s);
    q->free[q->n_free++] = (uint32_t)slot;
    return s->res < 0 ? s->res : (ssize_t)s->done;
}

bool
storage_readq_is_done(struct storage_readq *q, int slot)
{
    struct readq_slot *s = &q->slots[slot];
    if (atomic_load_explicit(&s->is_done, memory_order_acquire))
        return true;
    /* A read of cached bytes completes at submit; its completion waits to
     * be reaped. */
    storage_readq_submit(q);
    storage__io_poll(&s->io);
    return atomic_load_explicit(&s->is_done, memory_order_acquire);
}

uint32_t
storage_readq_room(const struct storage_readq *q)
{
    return q->n_free;
}

void
storage_readq_destroy(struct storage_readq *q)
{
    if (!q)
        return;
    storage_readq_submit(q);
    /* Every slot not on the free stack is taken: its buffer belongs to the
     * kernel until done. */
    bool *is_free = xcalloc(q->depth, sizeof(*is_free));
    for (uint32_t i = 0; i < q->n_free; i++)
        is_free[q->free[i]] = true;
    for (uint32_t i = 0; i < q->depth; i++)
        if (!is_free[i])
            slot_wait(&q->slots[i]);
    free(is_free);
    free(q->free);
    free(q->slots);
    free(q);
}
