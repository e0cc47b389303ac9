/*
 * prezero.c: writing zeros into free volume space ahead of the allocator.
 *
 * A volume is posix_fallocated, so until a byte is first written its block
 * belongs to an unwritten extent, and the fdatasync that makes a write into
 * one durable also commits the filesystem's journal for the conversion to
 * written: a store that grows (a versioned bucket keeps every version) pays
 * that on every PUT, one that overwrites reuses written blocks and does not.
 * Writing the whole volume at creation would stall the PUT that creates it,
 * and FALLOC_FL_WRITE_ZEROES is not offered by every disk, so a thread
 * does it in the background, a window ahead of the allocator.
 *
 * What is unwritten comes from FIEMAP (FIEMAP_EXTENT_UNWRITTEN), read when a
 * volume is opened and kept in a list per volume (storage_int.h), which
 * range_take cuts as space is handed out. The thread runs while less than
 * 'prezero_window' bytes of free space are written: it claims the start of
 * the unwritten range the allocator would reach first (storage__alloc_claim:
 * the range leaves the free map, so no writer can get it; it keeps clear of
 * where a growing writer goes next, and a writer that meets it anyway waits
 * for it rather than split its object), asks FIEMAP again which of it is
 * still unwritten, writes zeros there with O_DIRECT writes of
 * PREZERO_WRITE_LEN, fdatasyncs, and gives the range back, now written; at
 * most PREZERO_RATE bytes a second, so that a window filled at once (a start,
 * a new volume) does not take the disk from PUTs. A crash meanwhile leaves
 * free space partly zeroed: nothing references it, and the next open reads
 * FIEMAP again. An I/O error (ENOSPC, EIO) stops the thread, logged; the
 * store goes on as without it.
 */
#define _GNU_SOURCE
#include "storage/storage_int.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PREZERO_CLAIM_LEN (8ull << 20) /* claimed, written and synced at once */
#define PREZERO_WRITE_LEN (2u << 20)   /* one O_DIRECT write */
#define PREZERO_POLL_MS 50             /* how often it looks when idle */
#define PREZERO_RATE (64ull << 20)     /* bytes/s at most, so PUTs keep the disk */
#define PREZERO_CLAIM_MIN_NS 10000000  /* and 100 claims/s (fdatasyncs) at most */
#define FIEMAP_BATCH 128

/* ---- the unwritten lists (alloc_lock held) ------------------------------- */

static void
unwritten_append(struct storage *st, struct storage__volume *v, uint64_t off, uint64_t len)
{
    if (v->n_unwritten > 0) {
        struct storage__range *last = &v->unwritten[v->n_unwritten - 1];
        if (last->off + last->len == off) {
            last->len += len;
            st->unwritten_bytes += len;
            return;
        }
    }
    if (v->n_unwritten == v->cap_unwritten) {
        v->cap_unwritten = v->cap_unwritten ? v->cap_unwritten * 2 : 16;
        v->unwritten = xrealloc(v->unwritten, v->cap_unwritten * sizeof(*v->unwritten));
    }
    v->unwritten[v->n_unwritten++] = (struct storage__range){off, len};
    st->unwritten_bytes += len;
}

void
storage__unwritten_add(struct storage *st, struct storage__volume *v, uint64_t off, uint64_t len)
{
    if (!st->is_prezero_running)
        return;
    /* The first range starting after 'off'. */
    size_t lo = 0, hi = v->n_unwritten;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->unwritten[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo;
    bool is_prev_adjacent = i > 0 && v->unwritten[i - 1].off + v->unwritten[i - 1].len == off;
    bool is_next_adjacent = i < v->n_unwritten && off + len == v->unwritten[i].off;
    st->unwritten_bytes += len;
    if (is_prev_adjacent && is_next_adjacent) {
        v->unwritten[i - 1].len += len + v->unwritten[i].len;
        memmove(&v->unwritten[i], &v->unwritten[i + 1],
                (v->n_unwritten - i - 1) * sizeof(*v->unwritten));
        v->n_unwritten--;
    } else if (is_prev_adjacent) {
        v->unwritten[i - 1].len += len;
    } else if (is_next_adjacent) {
        v->unwritten[i].off = off;
        v->unwritten[i].len += len;
    } else {
        if (v->n_unwritten == v->cap_unwritten) {
            v->cap_unwritten = v->cap_unwritten ? v->cap_unwritten * 2 : 16;
            v->unwritten = xrealloc(v->unwritten, v->cap_unwritten * sizeof(*v->unwritten));
        }
        memmove(&v->unwritten[i + 1], &v->unwritten[i],
                (v->n_unwritten - i) * sizeof(*v->unwritten));
        v->unwritten[i] = (struct storage__range){off, len};
        v->n_unwritten++;
    }
}

void
storage__unwritten_cut(struct storage *st, struct storage__volume *v, uint64_t off, uint64_t len)
{
    uint64_t end = off + len;
    /* The first range ending after 'off'. */
    size_t lo = 0, hi = v->n_unwritten;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->unwritten[mid].off + v->unwritten[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo;
    while (i < v->n_unwritten && v->unwritten[i].off < end) {
        struct storage__range *r = &v->unwritten[i];
        uint64_t r_end = r->off + r->len;
        uint64_t cut_from = MAX(off, r->off), cut_to = MIN(end, r_end);
        st->unwritten_bytes -= cut_to - cut_from;
        if (cut_from == r->off && cut_to == r_end) {
            memmove(r, r + 1, (v->n_unwritten - i - 1) * sizeof(*r));
            v->n_unwritten--;
            continue;
        }
        if (cut_from == r->off) {
            r->off = cut_to;
            r->len = r_end - cut_to;
        } else if (cut_to == r_end) {
            r->len = cut_from - r->off;
        } else {
            /* A hole in the middle: split in two. */
            r->len = cut_from - r->off;
            if (v->n_unwritten == v->cap_unwritten) {
                v->cap_unwritten *= 2;
                v->unwritten = xrealloc(v->unwritten, v->cap_unwritten * sizeof(*v->unwritten));
                r = &v->unwritten[i];
            }
            memmove(r + 2, r + 1, (v->n_unwritten - i - 1) * sizeof(*r));
            r[1] = (struct storage__range){cut_to, r_end - cut_to};
            v->n_unwritten++;
        }
        i++;
    }
}

void
storage__unwritten_keep_free(struct storage *st, struct storage__volume *v)
{
    struct storage__range *old = v->unwritten;
    size_t n_old = v->n_unwritten;
    v->unwritten = NULL;
    v->n_unwritten = v->cap_unwritten = 0;
    for (size_t u = 0; u < n_old; u++)
        st->unwritten_bytes -= old[u].len;
    /* Both lists are sorted: one merge pass keeps their intersection. */
    size_t f = 0;
    for (size_t u = 0; u < n_old; u++) {
        uint64_t u_end = old[u].off + old[u].len;
        while (f < v->n_free && v->free[f].off + v->free[f].len <= old[u].off)
            f++;
        for (size_t g = f; g < v->n_free && v->free[g].off < u_end; g++) {
            uint64_t from = MAX(old[u].off, v->free[g].off);
            uint64_t to = MIN(u_end, v->free[g].off + v->free[g].len);
            if (to > from)
                unwritten_append(st, v, from, to - from);
        }
    }
    free(old);
}

/* ---- FIEMAP -------------------------------------------------------------- */

typedef void unwritten_fn(void *ctx, uint64_t off, uint64_t len);

/* Calls 'fn' for each unwritten extent of [off, off+len) of 'fd' (clipped,
 * in order, 4 KiB aligned). Returns 0 or -errno (-EOPNOTSUPP: no FIEMAP). */
static int
fiemap_unwritten(int fd, uint64_t off, uint64_t len, unwritten_fn *fn, void *ctx)
{
    int err = 0;
    size_t size = sizeof(struct fiemap) + FIEMAP_BATCH * sizeof(struct fiemap_extent);
    struct fiemap *fm = xmalloc(size);
    uint64_t pos = off, end = off + len;
    while (pos < end) {
        memset(fm, 0, size);
        fm->fm_start = pos;
        fm->fm_length = end - pos;
        fm->fm_extent_count = FIEMAP_BATCH;
        if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0) {
            err = -errno;
            break;
        }
        if (fm->fm_mapped_extents == 0)
            break;
        bool is_last = false;
        for (uint32_t i = 0; i < fm->fm_mapped_extents; i++) {
            const struct fiemap_extent *x = &fm->fm_extents[i];
            uint64_t from = MAX(x->fe_logical, pos);
            uint64_t to = MIN(x->fe_logical + x->fe_length, end);
            /* Whole blocks only: a partly written block is written. */
            from = ALIGN_UP(from, STORAGE_ALIGN);
            to &= ~(uint64_t)(STORAGE_ALIGN - 1);
            if ((x->fe_flags & FIEMAP_EXTENT_UNWRITTEN) && to > from)
                fn(ctx, from, to - from);
            pos = MAX(pos, x->fe_logical + x->fe_length);
            if (x->fe_flags & FIEMAP_EXTENT_LAST)
                is_last = true;
        }
        if (is_last)
            break;
    }
    free(fm);
    return err;
}

struct scan_ctx {
    struct storage *st;
    struct storage__volume *v;
};

static void
scan_add(void *ctx, uint64_t off, uint64_t len)
{
    struct scan_ctx *c = ctx;
    unwritten_append(c->st, c->v, off, len);
}

void
storage__prezero_scan(struct storage *st, struct storage__volume *v)
{
    if (st->prezero_window == 0 || st->is_sparse)
        return;
    struct scan_ctx c = {st, v};
    int err = fiemap_unwritten(v->wfd, 0, v->len, scan_add, &c);
    if (err < 0)
        log_warn("storage: volume %u: FIEMAP: %s; not prezeroed", v->id, strerror(-err));
}

/* ---- the thread ---------------------------------------------------------- */

struct zero_ctx {
    struct storage *st;
    struct storage__volume *v;
    const void *zeros;
    uint64_t written;
    int err;
};

static void
zero_range(void *ctx, uint64_t off, uint64_t len)
{
    struct zero_ctx *c = ctx;
    for (uint64_t pos = off; pos < off + len && c->err == 0;) {
        size_t n = (size_t)MIN((uint64_t)PREZERO_WRITE_LEN, off + len - pos);
        ssize_t got;
        if (storage__fault_hit(c->st, STORAGE_FAULT_PREZERO)) {
            got = -1;
            errno = EIO;
        } else {
            got = pwrite(c->v->wfd, c->zeros, n, (off_t)pos);
        }
        if (got < 0) {
            c->err = -errno;
        } else if (got == 0) {
            c->err = -EIO;
        } else {
            pos += (uint64_t)got;
            c->written += (uint64_t)got;
        }
    }
}

/* Writes zeros into the unwritten blocks of the claimed range and makes them
 * durable; adds the bytes written to '*written'. Returns 0 or -errno. */
static int
prezero_claimed(struct storage *st, struct storage__volume *v, uint64_t off, uint64_t len,
                const void *zeros, uint64_t *written)
{
    struct zero_ctx c = {.st = st, .v = v, .zeros = zeros};
    int err = fiemap_unwritten(v->wfd, off, len, zero_range, &c);
    if (err == 0)
        err = c.err;
    if (err == 0 && c.written > 0 && fdatasync(v->wfd) < 0)
        err = -errno;
    *written += c.written;
    return err;
}

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
deadline_after_ms(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_nsec += ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

static void *
prezero_main(void *arg)
{
    struct storage *st = arg;
    /* Last in line for the CPU and (where the I/O scheduler honours it) the disk. */
    pid_t tid = (pid_t)syscall(SYS_gettid);
    (void)setpriority(PRIO_PROCESS, (id_t)tid, 19);
    (void)syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, tid, 3 << 13 /* CLASS_IDLE */);

    void *zeros = NULL;
    if (posix_memalign(&zeros, STORAGE_ALIGN, PREZERO_WRITE_LEN) != 0)
        return NULL;
    memset(zeros, 0, PREZERO_WRITE_LEN);

    pthread_mutex_lock(&st->alloc_lock);
    while (!st->is_prezero_stopping) {
        uint64_t written_free = st->free_bytes - MIN(st->free_bytes, st->unwritten_bytes);
        /* Never claim more than a quarter of what is free: a writer must
         * always find room elsewhere. */
        uint64_t max_len =
            MIN(PREZERO_CLAIM_LEN, (st->free_bytes / 4) & ~(uint64_t)(STORAGE_ALIGN - 1));
        uint32_t vol;
        uint64_t off, len;
        if (written_free >= st->prezero_window || max_len == 0 ||
            !storage__alloc_claim(st, max_len, &vol, &off, &len)) {
            struct timespec ts;
            deadline_after_ms(&ts, PREZERO_POLL_MS);
            pthread_cond_timedwait(&st->prezero_cond, &st->alloc_lock, &ts);
            continue;
        }
        pthread_mutex_unlock(&st->alloc_lock);
        int64_t start_ns = now_ns();
        uint64_t written = 0;
        int err = prezero_claimed(st, st->vols[vol], off, len, zeros, &written);
        atomic_fetch_add(&st->prezeroed_bytes, written);
        pthread_mutex_lock(&st->alloc_lock);
        storage__alloc_unclaim(st, vol, off, len);
        if (err < 0) {
            log_error("storage: prezeroing volume %u at %" PRIu64 ": %s; prezeroing stops", vol,
                      off, strerror(-err));
            break;
        }
        /* Pace: the time PREZERO_RATE gives these bytes (at least
         * PREZERO_CLAIM_MIN_NS: small claims, such as writers' unused tails,
         * would cost an fdatasync each), less what they took. */
        int64_t due_ns = (int64_t)MAX(written * 1000000000ull / PREZERO_RATE, PREZERO_CLAIM_MIN_NS);
        int64_t left_ns = due_ns - (now_ns() - start_ns);
        if (left_ns > 0 && !st->is_prezero_stopping) {
            struct timespec ts;
            deadline_after_ms(&ts, (long)(left_ns / 1000000));
            pthread_cond_timedwait(&st->prezero_cond, &st->alloc_lock, &ts);
        }
    }
    pthread_mutex_unlock(&st->alloc_lock);
    free(zeros);
    return NULL;
}

void
storage__prezero_start(struct storage *st)
{
    if (st->prezero_window == 0 || st->is_sparse || st->is_prezero_running)
        return;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&st->prezero_cond, &attr);
    pthread_condattr_destroy(&attr);
    st->is_prezero_running = true; /* before any writer: storage_ready */
    int err = pthread_create(&st->prezero_thread, NULL, prezero_main, st);
    if (err != 0) {
        log_warn("storage: cannot start the prezeroer: %s", strerror(err));
        pthread_cond_destroy(&st->prezero_cond);
        st->is_prezero_running = false;
        return;
    }
    pthread_setname_np(st->prezero_thread, "shard-prezero");
}

void
storage__prezero_stop(struct storage *st)
{
    if (!st->is_prezero_running)
        return;
    pthread_mutex_lock(&st->alloc_lock);
    st->is_prezero_stopping = true;
    pthread_cond_signal(&st->prezero_cond);
    pthread_mutex_unlock(&st->alloc_lock);
    pthread_join(st->prezero_thread, NULL);
    pthread_cond_destroy(&st->prezero_cond);
    st->is_prezero_running = false;
}
