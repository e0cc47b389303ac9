/*
 * writer.c: the aligned writer and the staging buffer pool.
 *
 * A writer takes staging buffers (up to STORAGE_STAGES_MAX from the bounded
 * pool) and space (in steps doubling up to STORAGE_STEP_MAX, grown in place
 * when it can) only as bytes arrive: it holds at most one step and its
 * buffers ahead of its bytes, and nothing (no volume either) before the
 * first. A caller may name where the first byte goes (storage_writer_place);
 * that is only a preference. Bytes are hashed per STORAGE_BLOCK_LEN block of the extent; a full
 * buffer becomes one O_DIRECT IORING_OP_WRITE while the next one fills.
 * A tap (storage_writer_tap) may borrow each full buffer to read its bytes
 * in place, as its write goes on.
 * Invariant: a buffer is never touched while its io.is_inflight is set, and
 * never reused or freed while its is_tapped is set.
 */
#define _GNU_SOURCE
#include "storage/storage_int.h"

#include <assert.h>
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

struct storage_stage {
    struct storage__io io; /* first: the completion callback casts back */
    struct storage_writer *w;
    struct storage__volume *vol;
    uint8_t *buf;
    size_t cap;
    size_t fill;  /* logical bytes staged */
    size_t limit; /* room left in the extent from disk_off (<= cap) */
    uint64_t disk_off;
    size_t io_len; /* fill padded to STORAGE_ALIGN */
    size_t io_done;
    int res;        /* outcome of the last write, 0 or -errno */
    bool is_tapped; /* lent to the tap (w->tap_lock) */
};

struct storage_writer {
    struct storage *st;
    uint64_t size_hint; /* UINT64_MAX: unknown */
    uint64_t size;

    struct storage_extent *ext; /* .len: logical bytes written so far */
    uint64_t *alloc_lens;       /* reserved bytes of each extent */
    size_t n_ext;
    size_t cap_ext;
    size_t cur;            /* extent being written */
    uint64_t reserved_len; /* sum of alloc_lens */
    uint64_t step;         /* the next reservation's length */
    bool has_place;        /* storage_writer_place: try place_vol/place_off first */
    uint32_t place_vol;
    uint64_t place_off;
    /* Listed while it may grow in place, so the prezeroer claims elsewhere. */
    struct storage__grower grow;

    struct storage_stage stages[STORAGE_STAGES_TAPPED];
    size_t n_stages;   /* buffers taken so far */
    size_t max_stages; /* buffers this writer may take */
    size_t stage_cap;  /* bytes of each */
    size_t next_stage;
    struct storage_stage *filling;

    XXH64_state_t *hash;
    uint64_t block_fill;
    struct buf sums;

    int err;
    bool is_finished;

    bool has_tap;
    struct storage_tap tap;
    pthread_mutex_t tap_lock;
    pthread_cond_t tap_back; /* a buffer came back from the tap */
};

/* ---- staging buffer pool ---------------------------------------------- */

void
storage__pool_init(struct storage__pool *p, uint64_t total_len)
{
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
    p->total_len = total_len;
}

void
storage__pool_cleanup(struct storage__pool *p)
{
    for (size_t i = 0; i < p->n_cached; i++)
        free(p->cached[i]);
    free(p->cached);
    pthread_mutex_destroy(&p->lock);
}

/* Takes a 'len'-byte aligned buffer from the pool. Returns NULL when the
 * pool's bound would be exceeded (or memory is short). */
static void *
pool_get(struct storage__pool *p, size_t len)
{
    void *buf = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->used_len + len > p->total_len) {
        pthread_mutex_unlock(&p->lock);
        return NULL;
    }
    p->used_len += len;
    if (len == STORAGE_STAGE_LEN && p->n_cached > 0)
        buf = p->cached[--p->n_cached];
    pthread_mutex_unlock(&p->lock);
    if (!buf && posix_memalign(&buf, STORAGE_ALIGN, len) != 0) {
        pthread_mutex_lock(&p->lock);
        p->used_len -= len;
        pthread_mutex_unlock(&p->lock);
        return NULL;
    }
    return buf;
}

/* True when the pool could give a 'len'-byte buffer now (nothing is taken). */
static bool
pool_has_room(struct storage__pool *p, size_t len)
{
    pthread_mutex_lock(&p->lock);
    bool has_room = p->used_len + len <= p->total_len;
    pthread_mutex_unlock(&p->lock);
    return has_room;
}

/* Returns 'buf' to the pool; full-size buffers are kept for reuse, which
 * avoids an mmap and 128 page faults per buffer. */
static void
pool_put(struct storage__pool *p, void *buf, size_t len)
{
    if (!buf)
        return;
    pthread_mutex_lock(&p->lock);
    p->used_len -= len;
    if (len == STORAGE_STAGE_LEN) {
        if (p->n_cached == p->cap_cached) {
            p->cap_cached = p->cap_cached ? p->cap_cached * 2 : 16;
            p->cached = xrealloc(p->cached, p->cap_cached * sizeof(*p->cached));
        }
        p->cached[p->n_cached++] = buf;
        buf = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    free(buf);
}

/* ---- I/O ---------------------------------------------------------------- */

static void
stage_prep_write(struct storage__ring *r, struct storage_stage *s)
{
    struct io_uring_sqe *sqe = storage__ring_prep(r, &s->io);
    io_uring_prep_write(sqe, s->vol->wfd, s->buf + s->io_done, (unsigned)(s->io_len - s->io_done),
                        s->disk_off + s->io_done);
}

/* Completion of a staging buffer's write (any thread, ring lock held):
 * retries short writes, records the outcome, and counts the write for
 * storage_sync. */
static void
stage_complete(struct storage__io *io, int res)
{
    struct storage_stage *s = (struct storage_stage *)io;
    if (res <= 0) {
        s->res = res < 0 ? res : -EIO;
        return;
    }
    s->io_done += (size_t)res;
    if (s->io_done < s->io_len) {
        stage_prep_write(io->ring, s);
        if (storage__ring_submit(io->ring) < 0)
            log_warn("storage: resubmit after a short write failed; retrying at next reap");
        return;
    }
    s->res = 0;
    atomic_fetch_add(&s->vol->write_seq, 1);
}

/* Writes without io_uring (rings unavailable): the same outcome, synchronously. */
static int
stage_pwrite(struct storage_stage *s)
{
    while (s->io_done < s->io_len) {
        ssize_t n = pwrite(s->vol->wfd, s->buf + s->io_done, s->io_len - s->io_done,
                           (off_t)(s->disk_off + s->io_done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        s->io_done += (size_t)n;
    }
    atomic_fetch_add(&s->vol->write_seq, 1);
    return 0;
}

/* Pads 's' to STORAGE_ALIGN and submits it. Returns 0 or -errno. */
static int
stage_submit(struct storage_writer *w, struct storage_stage *s)
{
    int err = 0;
    s->io_len = ALIGN_UP(s->fill, STORAGE_ALIGN);
    memset(s->buf + s->fill, 0, s->io_len - s->fill);
    s->io_done = 0;
    s->res = 0;
    if (storage__fault_hit(w->st, STORAGE_FAULT_SUBMIT))
        return -EIO;
    struct storage__ring *r = storage__ring_get(&err);
    if (!r)
        return stage_pwrite(s);
    storage__ring_lock(r);
    stage_prep_write(r, s);
    err = storage__ring_submit(r);
    storage__ring_unlock(r);
    if (err < 0)
        log_warn("storage: io_uring_submit: %s; retrying at next reap", strerror(-err));
    return 0;
}

/* Waits until the tap gave 's' back, asking it to hurry first. */
static void
stage_wait_tap(struct storage_stage *s)
{
    struct storage_writer *w = s->w;
    if (!w || !w->has_tap)
        return;
    pthread_mutex_lock(&w->tap_lock);
    bool is_tapped = s->is_tapped;
    pthread_mutex_unlock(&w->tap_lock);
    if (!is_tapped)
        return;
    w->tap.hurry_fn(w->tap.arg);
    pthread_mutex_lock(&w->tap_lock);
    while (s->is_tapped)
        pthread_cond_wait(&w->tap_back, &w->tap_lock);
    pthread_mutex_unlock(&w->tap_lock);
}

/* Lends the bytes of 's' ('is_last': the writer's tail) to the tap. */
static void
stage_tap(struct storage_writer *w, struct storage_stage *s, bool is_last)
{
    if (!w->has_tap)
        return;
    if (s) {
        pthread_mutex_lock(&w->tap_lock);
        s->is_tapped = true;
        pthread_mutex_unlock(&w->tap_lock);
    }
    w->tap.stage_fn(w->tap.arg, s ? s->buf : NULL, s ? s->fill : 0, is_last, s);
}

/* Waits for 's' to be idle (written, and back from the tap). Returns its
 * last write's outcome. */
static int
stage_wait(struct storage_stage *s)
{
    storage__io_wait(&s->io);
    stage_wait_tap(s);
    int res = s->res;
    s->res = 0;
    return res;
}

static int
writer_wait_all(struct storage_writer *w)
{
    int err = 0;
    for (size_t i = 0; i < w->n_stages; i++) {
        int res = stage_wait(&w->stages[i]);
        if (res < 0 && err == 0)
            err = res;
    }
    return err;
}

/* ---- checksums and extents ------------------------------------------- */

static void
writer_sum_emit(struct storage_writer *w)
{
    uint64_t h = XXH64_digest(w->hash);
    uint8_t le[STORAGE_SUM_LEN];
    for (int i = 0; i < STORAGE_SUM_LEN; i++)
        le[i] = (uint8_t)(h >> (8 * i));
    buf_append(&w->sums, le, sizeof(le));
    XXH64_reset(w->hash, STORAGE_SUM_SEED);
    w->block_fill = 0;
}

static void
writer_hash(struct storage_writer *w, const uint8_t *p, size_t len)
{
    while (len > 0) {
        size_t n = (size_t)MIN((uint64_t)len, STORAGE_BLOCK_LEN - w->block_fill);
        XXH64_update(w->hash, p, n);
        w->block_fill += n;
        p += n;
        len -= n;
        if (w->block_fill == STORAGE_BLOCK_LEN)
            writer_sum_emit(w);
    }
}

/* The next reservation's length: w->step, at most a quarter volume (small
 * volumes would be hogged by a few writers) and never beyond the known size.
 * Returns 0 when the known size is reserved in full. */
static uint64_t
writer_step_len(const struct storage_writer *w)
{
    uint64_t len = MIN(w->step, ALIGN_UP(w->st->volume_size / 4, STORAGE_ALIGN));
    if (w->size_hint != UINT64_MAX) {
        uint64_t need = ALIGN_UP(w->size_hint, STORAGE_ALIGN);
        len = need > w->reserved_len ? MIN(len, need - w->reserved_len) : 0;
    }
    return len;
}

/* Counts a reservation of 'got' bytes and doubles the next step. */
static void
writer_reserved(struct storage_writer *w, uint64_t got)
{
    w->reserved_len += got;
    w->step = MIN(w->step * 2, STORAGE_STEP_MAX);
}

/*
 * Makes sure the current extent has room for at least one byte: grows it in
 * place when the space after it is free, or reserves a new step. Called only
 * with bytes to store, so nothing is reserved (and no volume created) for a
 * writer that is given none. Returns 0, -ENOSPC or -EFBIG.
 */
static int
writer_room(struct storage_writer *w)
{
    uint64_t step = writer_step_len(w);
    if (w->cur < w->n_ext) {
        struct storage_extent *e = &w->ext[w->cur];
        if (e->len < w->alloc_lens[w->cur])
            return 0;
        if (step > 0) {
            uint64_t got = storage__alloc_at(w->st, e->volume, e->offset + w->alloc_lens[w->cur],
                                             step, &w->grow);
            if (got > 0) {
                w->alloc_lens[w->cur] += got;
                writer_reserved(w, got);
                return 0;
            }
        }
        /* The extent is done: its last (partial) block gets its sum. */
        if (w->block_fill > 0)
            writer_sum_emit(w);
        w->cur++;
    }
    if (step == 0)
        return -EFBIG;
    /* The caller's place for the first byte (a part's slot in its
     * upload's run), when that space is free. */
    if (w->has_place && w->n_ext == 0 &&
        storage__alloc_fixed(w->st, w->place_vol, w->place_off, step, &w->grow, &w->ext,
                             &w->alloc_lens, &w->n_ext, &w->cap_ext) == 0) {
        writer_reserved(w, w->alloc_lens[0]);
        return 0;
    }
    /* Place the extent where the rest of a known size (or another step of
     * an unknown one) could follow it, so objects stay contiguous. */
    uint64_t fit_len = w->size_hint == UINT64_MAX
                           ? STORAGE_STEP_MAX
                           : ALIGN_UP(w->size_hint, STORAGE_ALIGN) - w->reserved_len;
    size_t n_before = w->n_ext;
    int err = storage__alloc(w->st, step, fit_len, &w->grow, &w->ext, &w->alloc_lens, &w->n_ext,
                             &w->cap_ext);
    if (err < 0)
        return err;
    writer_reserved(w, w->alloc_lens[n_before]);
    return 0;
}

/* Picks the next staging buffer round robin, taking one more from the pool
 * while the writer has fewer than it may use (under pressure it runs with
 * what it has). Returns NULL when it has none and the pool has none. */
static struct storage_stage *
writer_stage_pick(struct storage_writer *w)
{
    if (w->next_stage == w->n_stages && w->n_stages < w->max_stages) {
        struct storage_stage *s = &w->stages[w->n_stages];
        s->buf = pool_get(&w->st->pool, w->stage_cap);
        if (s->buf) {
            s->cap = w->stage_cap;
            s->w = w;
            s->io.complete_fn = stage_complete;
            w->n_stages++;
        }
    }
    if (w->n_stages == 0)
        return NULL;
    if (w->next_stage >= w->n_stages)
        w->next_stage = 0;
    return &w->stages[w->next_stage++];
}

/* Returns the next staging buffer, aimed at the current extent's next
 * bytes, waiting while it is in flight. Returns NULL and sets w->err
 * (-EAGAIN: no staging buffer; -ENOSPC, -EFBIG, -EIO). */
static struct storage_stage *
writer_stage_next(struct storage_writer *w)
{
    int err = -EAGAIN;
    struct storage_stage *s = writer_stage_pick(w);
    if (!s)
        goto fail;
    err = stage_wait(s);
    if (err < 0)
        goto fail;
    err = writer_room(w);
    if (err < 0)
        goto fail;
    struct storage_extent *e = &w->ext[w->cur];
    s->vol = storage__volume_get(w->st, e->volume);
    s->disk_off = e->offset + e->len;
    s->limit = (size_t)MIN((uint64_t)s->cap, w->alloc_lens[w->cur] - e->len);
    s->fill = 0;
    return s;

fail:
    w->err = err;
    return NULL;
}

/* How many staging buffers a writer of 'size_hint' bytes may use, at most
 * 'max': none for an empty object, one (of its size) for one that fits. */
static size_t
writer_max_stages(uint64_t size_hint, size_t max)
{
    if (size_hint == UINT64_MAX)
        return max;
    if (size_hint == 0)
        return 0;
    return (size_t)MIN((uint64_t)max, (size_hint + STORAGE_STAGE_LEN - 1) / STORAGE_STAGE_LEN);
}

/* ---- interface ------------------------------------------------------------ */

int
storage_writer_create(struct storage *st, uint64_t size_hint, struct storage_writer **out)
{
    int err = 0;
    struct storage_writer *w = xcalloc(1, sizeof(*w));
    w->st = st;
    w->size_hint = size_hint;
    w->step = STORAGE_STAGE_LEN;
    storage__grower_init(&w->grow, size_hint);
    buf_init(&w->sums);
    w->hash = XXH64_createState();
    if (!w->hash)
        abort();
    XXH64_reset(w->hash, STORAGE_SUM_SEED);
    pthread_mutex_init(&w->tap_lock, NULL);
    pthread_cond_init(&w->tap_back, NULL);

    bool is_known = size_hint != UINT64_MAX;
    if (is_known && size_hint > UINT64_MAX - STORAGE_ALIGN) {
        err = -EFBIG;
        goto fail;
    }
    w->stage_cap = STORAGE_STAGE_LEN;
    w->max_stages = writer_max_stages(size_hint, STORAGE_STAGES_MAX);
    if (is_known && size_hint > 0 && size_hint <= STORAGE_STAGE_LEN)
        w->stage_cap = (size_t)ALIGN_UP(size_hint, STORAGE_ALIGN);
    /* Nothing is taken yet, but what cannot work now is refused before
     * the caller accepts a body: no buffer left in the pool, or a known
     * size larger than all the space there is and could be. */
    if (w->max_stages > 0 && !pool_has_room(&st->pool, w->stage_cap)) {
        err = -EAGAIN;
        goto fail;
    }
    /* Space held back by a stalled reader past its deadline comes back
     * only when someone looks (pin.c): look before refusing. */
    uint64_t need = ALIGN_UP(size_hint, STORAGE_ALIGN);
    if (is_known && need > storage__alloc_room(st) &&
        (storage__reclaim_poll(st) == 0 || need > storage__alloc_room(st))) {
        err = -ENOSPC;
        goto fail;
    }
    *out = w;
    return 0;

fail:
    storage_writer_destroy(w, false);
    return err;
}

size_t
storage_writer_tap(struct storage_writer *w, const struct storage_tap *tap)
{
    assert(w->size == 0 && !w->has_tap);
    w->tap = *tap;
    w->has_tap = true;
    /* Its buffers are held while they are read too: it may use more. */
    w->max_stages = writer_max_stages(w->size_hint, STORAGE_STAGES_TAPPED);
    return w->max_stages;
}

void
storage_writer_stage_release(struct storage_stage *s)
{
    struct storage_writer *w = s->w;
    pthread_mutex_lock(&w->tap_lock);
    s->is_tapped = false;
    pthread_cond_broadcast(&w->tap_back);
    pthread_mutex_unlock(&w->tap_lock);
}

void
storage_writer_place(struct storage_writer *w, uint32_t volume, uint64_t offset)
{
    if (w->n_ext > 0 || offset % STORAGE_ALIGN != 0)
        return;
    w->has_place = true;
    w->place_vol = volume;
    w->place_off = offset;
}

int
storage_writer_write(struct storage_writer *w, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    if (w->err < 0)
        return w->err;
    if (w->is_finished)
        return -EINVAL;
    if (w->size_hint != UINT64_MAX && len > w->size_hint - w->size)
        return -EFBIG;
    while (len > 0) {
        struct storage_stage *s = w->filling;
        if (!s) {
            s = writer_stage_next(w);
            if (!s)
                return w->err;
            w->filling = s;
        }
        size_t n = MIN(len, s->limit - s->fill);
        memcpy(s->buf + s->fill, p, n);
        writer_hash(w, p, n);
        s->fill += n;
        w->ext[w->cur].len += n;
        w->size += n;
        p += n;
        len -= n;
        if (s->fill == s->limit) {
            w->filling = NULL;
            int err = stage_submit(w, s);
            if (err < 0) {
                w->err = err;
                return err;
            }
            stage_tap(w, s, false);
        }
    }
    return 0;
}

int
storage_writer_finish(struct storage_writer *w)
{
    int err = w->err;
    if (w->is_finished)
        return err;
    /* Nothing more will be reserved: the space after it may be claimed. */
    storage__grower_drop(w->st, &w->grow);
    struct storage_stage *tail = w->filling && w->filling->fill > 0 ? w->filling : NULL;
    if (err == 0 && tail)
        err = stage_submit(w, tail);
    if (err == 0)
        stage_tap(w, tail, true);
    w->filling = NULL;
    int wait_err = writer_wait_all(w);
    if (err == 0)
        err = wait_err;
    if (err < 0)
        goto fail;
    if (w->block_fill > 0)
        writer_sum_emit(w);

    /* Give back what was reserved but not written, drop empty extents. */
    size_t n = 0;
    for (size_t i = 0; i < w->n_ext; i++) {
        struct storage_extent *e = &w->ext[i];
        uint64_t need = ALIGN_UP(e->len, STORAGE_ALIGN);
        storage__free_unwritten(w->st, e->volume, e->offset + need, w->alloc_lens[i] - need);
        if (need == 0)
            continue;
        w->ext[n] = *e;
        w->alloc_lens[n] = need;
        n++;
    }
    w->n_ext = n;
    w->reserved_len = ALIGN_UP(w->size, STORAGE_ALIGN);
    w->is_finished = true;
    for (size_t i = 0; i < w->n_stages; i++) {
        pool_put(&w->st->pool, w->stages[i].buf, w->stages[i].cap);
        w->stages[i].buf = NULL;
    }
    w->n_stages = 0;
    return 0;

fail:
    w->err = err;
    return err;
}

size_t
storage_writer_extents(const struct storage_writer *w, const struct storage_extent **out)
{
    *out = w->ext;
    return w->n_ext;
}

const uint8_t *
storage_writer_sums(const struct storage_writer *w, size_t *len)
{
    *len = w->sums.len;
    return (const uint8_t *)w->sums.ptr;
}

uint64_t
storage_writer_size(const struct storage_writer *w)
{
    return w->size;
}

uint64_t
storage_writer_reserved_len(const struct storage_writer *w)
{
    return w->reserved_len;
}

uint64_t
storage_writer_held_len(const struct storage_writer *w)
{
    if (w->is_finished)
        return 0;
    uint64_t held = w->reserved_len - w->size;
    for (size_t i = 0; i < w->n_stages; i++)
        held += w->stages[i].cap;
    return held;
}

void
storage_writer_destroy(struct storage_writer *w, bool is_committed)
{
    if (!w)
        return;
    storage__grower_drop(w->st, &w->grow);
    writer_wait_all(w);
    if (!is_committed) {
        for (size_t i = 0; i < w->n_ext; i++)
            storage__free(w->st, w->ext[i].volume, w->ext[i].offset, w->alloc_lens[i]);
    }
    for (size_t i = 0; i < w->n_stages; i++)
        pool_put(&w->st->pool, w->stages[i].buf, w->stages[i].cap);
    free(w->ext);
    free(w->alloc_lens);
    buf_cleanup(&w->sums);
    XXH64_freeState(w->hash);
    pthread_cond_destroy(&w->tap_back);
    pthread_mutex_destroy(&w->tap_lock);
    free(w);
}
