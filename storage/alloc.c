/*
 * alloc.c: the in-memory extent allocator (deferred reclaim is pin.c's).
 *
 * Startup: storage_mark_used sets bits in a per-volume bitmap (one bit per
 * 4 KiB, so overlaps are caught at once) and storage_ready turns the clear
 * bits into the free map. At run time each volume's free map is a sorted
 * array of free ranges, always coalesced (no two ranges touch); a writer
 * reserves in steps, each best fit over all volumes (preferring a range it
 * can grow in place into), then a fresh volume, then the largest fragment.
 * free_bytes always equals the sum of all free ranges (before ready: total
 * minus marked). Extents released while readers may use them
 * come back through storage__free once pin.c lets them go.
 *
 * Each volume also lists its free space that was never written (prezero.c):
 * range_take cuts what it hands out from that list, and the prezeroer
 * claims ranges of it (storage__alloc_claim), which leave the free map
 * while it writes zeros into them and come back written, as ranges of
 * their own that best fit hands out before the large unwritten rest.
 *
 * A claim must not sit where a writer grows next: a large object would then
 * continue in a new extent elsewhere, and its GET would be streamed instead
 * of sent by sendfile. So writers that may still grow in place are listed
 * (struct storage__grower, moved in the same critical section as each
 * reservation) and claims keep clear of the span each may still take; a
 * writer that meets a claim anyway (one taken before it was listed, a
 * part's slot) waits for that claim rather than split.
 */
#include "storage/storage_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS(len) ((len) / STORAGE_ALIGN)

/* ---- free map primitives (alloc_lock held) ------------------------------ */

/* Returns the index of the last range starting at or before 'off', or -1. */
static long
range_find(const struct storage__volume *v, uint64_t off)
{
    long lo = 0, hi = (long)v->n_free - 1, found = -1;
    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        if (v->free[mid].off <= off) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

static void
range_insert_at(struct storage__volume *v, size_t i, uint64_t off, uint64_t len)
{
    if (v->n_free == v->cap_free) {
        v->cap_free = v->cap_free ? v->cap_free * 2 : 16;
        v->free = xrealloc(v->free, v->cap_free * sizeof(*v->free));
    }
    memmove(&v->free[i + 1], &v->free[i], (v->n_free - i) * sizeof(*v->free));
    v->free[i] = (struct storage__range){off, len};
    v->n_free++;
}

static void
range_remove_at(struct storage__volume *v, size_t i)
{
    memmove(&v->free[i], &v->free[i + 1], (v->n_free - i - 1) * sizeof(*v->free));
    v->n_free--;
}

/* Removes [off, off+len) from free range 'i', which must contain it. */
static void
range_take(struct storage *st, struct storage__volume *v, size_t i, uint64_t off, uint64_t len)
{
    struct storage__range *r = &v->free[i];
    uint64_t end = off + len, r_end = r->off + r->len;
    if (r->off == off && r_end == end) {
        range_remove_at(v, i);
    } else if (r->off == off) {
        r->off = end;
        r->len -= len;
    } else if (r_end == end) {
        r->len -= len;
    } else {
        r->len = off - r->off;
        range_insert_at(v, i + 1, end, r_end - end);
    }
    st->free_bytes -= len;
    if (v->n_unwritten > 0)
        storage__unwritten_cut(st, v, off, len);
}

/* Adds [off, off+len) to the free map, coalescing. Returns 0, or -EINVAL
 * when it overlaps free space (a double free: nothing changes). */
static int
range_put(struct storage *st, struct storage__volume *v, uint64_t off, uint64_t len)
{
    long p = range_find(v, off);
    size_t next = (size_t)(p + 1);
    if (p >= 0 && v->free[p].off + v->free[p].len > off)
        return -EINVAL;
    if (next < v->n_free && off + len > v->free[next].off)
        return -EINVAL;
    bool is_prev_adjacent = p >= 0 && v->free[p].off + v->free[p].len == off;
    bool is_next_adjacent = next < v->n_free && off + len == v->free[next].off;
    if (is_prev_adjacent && is_next_adjacent) {
        v->free[p].len += len + v->free[next].len;
        range_remove_at(v, next);
    } else if (is_prev_adjacent) {
        v->free[p].len += len;
    } else if (is_next_adjacent) {
        v->free[next].off = off;
        v->free[next].len += len;
    } else {
        range_insert_at(v, next, off, len);
    }
    st->free_bytes += len;
    return 0;
}

void
storage__alloc_volume_init(struct storage *st, struct storage__volume *v)
{
    if (st->is_ready) {
        range_insert_at(v, 0, 0, v->len);
    } else {
        v->used_bits = xcalloc(BLOCKS(v->len) / 64 + 1, sizeof(uint64_t));
    }
    st->free_bytes += v->len;
}

void
storage__alloc_volume_cleanup(struct storage__volume *v)
{
    free(v->free);
    free(v->used_bits);
    v->free = NULL;
    v->used_bits = NULL;
}

/* ---- startup ------------------------------------------------------------ */

static bool
bits_any(const uint64_t *bits, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to;) {
        if (i % 64 == 0 && to - i >= 64) {
            if (bits[i / 64])
                return true;
            i += 64;
        } else {
            if (bits[i / 64] & (1ull << (i % 64)))
                return true;
            i++;
        }
    }
    return false;
}

static void
bits_set(uint64_t *bits, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to;) {
        if (i % 64 == 0 && to - i >= 64) {
            bits[i / 64] = ~0ull;
            i += 64;
        } else {
            bits[i / 64] |= 1ull << (i % 64);
            i++;
        }
    }
}

int
storage_mark_used(struct storage *st, const struct storage_extent *e)
{
    int err = 0;
    struct storage__volume *v = storage__volume_get(st, e->volume);
    if (!v || e->offset % STORAGE_ALIGN != 0 || e->offset > v->len || e->len > v->len - e->offset)
        return -EINVAL;
    uint64_t alloc_len = ALIGN_UP(e->len, STORAGE_ALIGN);
    if (alloc_len == 0)
        return 0;

    pthread_mutex_lock(&st->alloc_lock);
    if (!st->is_ready) {
        uint64_t from = BLOCKS(e->offset), to = BLOCKS(e->offset + alloc_len);
        if (bits_any(v->used_bits, from, to)) {
            err = -EINVAL;
            goto done;
        }
        bits_set(v->used_bits, from, to);
        st->free_bytes -= alloc_len;
    } else {
        long i = range_find(v, e->offset);
        if (i < 0 || v->free[i].off + v->free[i].len < e->offset + alloc_len) {
            err = -EINVAL;
            goto done;
        }
        range_take(st, v, (size_t)i, e->offset, alloc_len);
    }
done:
    pthread_mutex_unlock(&st->alloc_lock);
    return err;
}

int
storage_ready(struct storage *st)
{
    pthread_mutex_lock(&st->alloc_lock);
    if (st->is_ready)
        goto done;
    uint32_t n = atomic_load(&st->n_volumes);
    for (uint32_t id = 0; id < n; id++) {
        struct storage__volume *v = st->vols[id];
        uint64_t n_blocks = BLOCKS(v->len);
        uint64_t run_start = 0;
        bool is_in_run = false;
        for (uint64_t b = 0; b < n_blocks;) {
            uint64_t word = v->used_bits[b / 64];
            if (b % 64 == 0 && n_blocks - b >= 64 && (word == 0 || word == ~0ull)) {
                bool is_free = word == 0;
                if (is_free && !is_in_run) {
                    run_start = b;
                    is_in_run = true;
                } else if (!is_free && is_in_run) {
                    range_insert_at(v, v->n_free, run_start * STORAGE_ALIGN,
                                    (b - run_start) * STORAGE_ALIGN);
                    is_in_run = false;
                }
                b += 64;
                continue;
            }
            bool is_free = !(word & (1ull << (b % 64)));
            if (is_free && !is_in_run) {
                run_start = b;
                is_in_run = true;
            } else if (!is_free && is_in_run) {
                range_insert_at(v, v->n_free, run_start * STORAGE_ALIGN,
                                (b - run_start) * STORAGE_ALIGN);
                is_in_run = false;
            }
            b++;
        }
        if (is_in_run)
            range_insert_at(v, v->n_free, run_start * STORAGE_ALIGN,
                            (n_blocks - run_start) * STORAGE_ALIGN);
        free(v->used_bits);
        v->used_bits = NULL;
        storage__unwritten_keep_free(st, v);
    }
    st->is_ready = true;
    pthread_mutex_unlock(&st->alloc_lock);
    storage__prezero_start(st);
    return 0;
done:
    pthread_mutex_unlock(&st->alloc_lock);
    return 0;
}

/* ---- writers that may grow in place -------------------------------------- */

void
storage__grower_init(struct storage__grower *g, uint64_t size_hint)
{
    memset(g, 0, sizeof(*g));
    g->want_len = size_hint == UINT64_MAX ? UINT64_MAX : ALIGN_UP(size_hint, STORAGE_ALIGN);
}

static void
grower_unlink(struct storage *st, struct storage__grower *g)
{
    if (!g->is_listed)
        return;
    if (g->prev)
        g->prev->next = g->next;
    else
        st->growers = g->next;
    if (g->next)
        g->next->prev = g->prev;
    g->prev = g->next = NULL;
    g->is_listed = false;
}

/* Records that 'g' (or NULL) just reserved 'got' bytes ending at 'end' of
 * 'vol': its next step would go at 'end'. Lists it while it may want more. */
static void
grower_advance(struct storage *st, struct storage__grower *g, uint32_t vol, uint64_t end,
               uint64_t got)
{
    if (!g)
        return;
    if (g->want_len != UINT64_MAX)
        g->want_len -= MIN(got, g->want_len);
    g->vol = vol;
    g->frontier = end;
    if (g->want_len == 0) {
        grower_unlink(st, g);
    } else if (!g->is_listed) {
        g->prev = NULL;
        g->next = st->growers;
        if (st->growers)
            st->growers->prev = g;
        st->growers = g;
        g->is_listed = true;
    }
}

void
storage__grower_drop(struct storage *st, struct storage__grower *g)
{
    /* Only the writer's own thread changes 'is_listed' (in its reservations
     * and here), so it may read it unlocked: a small PUT, never listed,
     * takes no lock for this. */
    if (!g->is_listed)
        return;
    pthread_mutex_lock(&st->alloc_lock);
    grower_unlink(st, g);
    pthread_mutex_unlock(&st->alloc_lock);
}

/* The end of the span 'g' may still grow into. */
static uint64_t
grower_guard_end(const struct storage__grower *g)
{
    uint64_t want = g->want_len == UINT64_MAX ? STORAGE_GROW_GUARD_LEN : g->want_len;
    return want > UINT64_MAX - g->frontier ? UINT64_MAX : g->frontier + want;
}

/* The first byte of [off, end) of volume 'vol' that no listed grower may
 * grow into, and in '*lim' where the next such span starts (at most 'end').
 * Returns 'end' when there is none. */
static uint64_t
grower_clear(const struct storage *st, uint32_t vol, uint64_t off, uint64_t end, uint64_t *lim)
{
    /* Spans may overlap or follow each other: skip until none holds 'off'. */
    bool is_moved = true;
    while (is_moved && off < end) {
        is_moved = false;
        for (const struct storage__grower *g = st->growers; g; g = g->next) {
            uint64_t g_end = grower_guard_end(g);
            if (g->vol == vol && off >= g->frontier && off < g_end) {
                off = g_end;
                is_moved = true;
            }
        }
    }
    off = MIN(off, end);
    *lim = end;
    for (const struct storage__grower *g = st->growers; g; g = g->next) {
        if (g->vol == vol && g->frontier > off && g->frontier < *lim)
            *lim = g->frontier;
    }
    return off;
}

/* True when the prezeroer's current claim holds byte 'off' of 'vol'. */
static bool
claim_holds(const struct storage *st, uint32_t vol, uint64_t off)
{
    return st->claimed_len > 0 && st->claimed_vol == vol && off >= st->claimed_off &&
           off - st->claimed_off < st->claimed_len;
}

/* ---- allocation ------------------------------------------------------------ */

static void
ext_push(struct storage_extent **ext, uint64_t **alloc_lens, size_t *n, size_t *cap, uint32_t vol,
         uint64_t off, uint64_t len)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        *ext = xrealloc(*ext, *cap * sizeof(**ext));
        *alloc_lens = xrealloc(*alloc_lens, *cap * sizeof(**alloc_lens));
    }
    (*ext)[*n] = (struct storage_extent){.volume = vol, .offset = off, .len = 0};
    (*alloc_lens)[*n] = len;
    (*n)++;
}

/* Finds the smallest free range of at least 'len' bytes ('is_best' true) or
 * the largest range (false). Returns false when there is none. */
static bool
range_pick(struct storage *st, uint64_t len, bool is_best, uint32_t *vol, size_t *idx)
{
    bool is_found = false;
    uint64_t pick_len = 0;
    uint32_t n = atomic_load_explicit(&st->n_volumes, memory_order_relaxed);
    for (uint32_t id = 0; id < n; id++) {
        struct storage__volume *v = st->vols[id];
        for (size_t i = 0; i < v->n_free; i++) {
            uint64_t l = v->free[i].len;
            bool is_better =
                is_best ? (l >= len && (!is_found || l < pick_len)) : (!is_found || l > pick_len);
            if (is_better) {
                is_found = true;
                pick_len = l;
                *vol = id;
                *idx = i;
                if (is_best && l == len)
                    return true;
            }
        }
    }
    return is_found;
}

static int
alloc_once(struct storage *st, uint64_t len, uint64_t fit_len, struct storage__grower *g,
           struct storage_extent **ext, uint64_t **alloc_lens, size_t *n, size_t *cap)
{
    int err = 0;
    uint32_t vol;
    size_t idx;

    pthread_mutex_lock(&st->alloc_lock);
    if (!st->is_ready || len == 0 || len % STORAGE_ALIGN != 0) {
        err = -EINVAL;
        goto done;
    }
    /* Where the writer can grow in place for the rest of its object, else
     * anywhere 'len' fits, else a new volume, else the largest fragment. */
    bool is_found = fit_len > len && range_pick(st, fit_len, true, &vol, &idx);
    if (!is_found)
        is_found = range_pick(st, len, true, &vol, &idx);
    if (!is_found && len <= st->volume_size && storage__volume_add(st) == 0) {
        vol = atomic_load_explicit(&st->n_volumes, memory_order_relaxed) - 1;
        idx = 0;
        is_found = true;
    }
    if (!is_found && !range_pick(st, len, false, &vol, &idx)) {
        err = storage__volume_add(st);
        if (err < 0)
            goto done;
        vol = atomic_load_explicit(&st->n_volumes, memory_order_relaxed) - 1;
        idx = 0;
    }
    struct storage__volume *v = st->vols[vol];
    uint64_t off = v->free[idx].off, take = MIN(len, v->free[idx].len);
    range_take(st, v, idx, off, take);
    ext_push(ext, alloc_lens, n, cap, vol, off, take);
    grower_advance(st, g, vol, off + take, take);
done:
    pthread_mutex_unlock(&st->alloc_lock);
    return err;
}

int
storage__alloc(struct storage *st, uint64_t len, uint64_t fit_len, struct storage__grower *g,
               struct storage_extent **ext, uint64_t **alloc_lens, size_t *n, size_t *cap)
{
    int err = alloc_once(st, len, fit_len, g, ext, alloc_lens, n, cap);
    /* Space held back by a reader that stalled past its deadline is only
     * reclaimed when someone looks: look now rather than fail. */
    if (err == -ENOSPC && storage__reclaim_poll(st) > 0)
        err = alloc_once(st, len, fit_len, g, ext, alloc_lens, n, cap);
    /* Nearly full: the prezeroer's claim (at most a quarter of the free
     * space, one write and fdatasync long) may hold what this needs. Only
     * here does a writer wait for it. */
    if (err == -ENOSPC && storage__alloc_claim_wait(st))
        err = alloc_once(st, len, fit_len, g, ext, alloc_lens, n, cap);
    return err;
}

int
storage__alloc_fixed(struct storage *st, uint32_t vol, uint64_t off, uint64_t len,
                     struct storage__grower *g, struct storage_extent **ext, uint64_t **alloc_lens,
                     size_t *n, size_t *cap)
{
    int err = -ENOSPC;
    pthread_mutex_lock(&st->alloc_lock);
    struct storage__volume *v = storage__volume_get(st, vol);
    if (!v || !st->is_ready || len == 0 || len % STORAGE_ALIGN != 0 || off % STORAGE_ALIGN != 0)
        goto done;
    long i;
    for (;;) {
        i = range_find(v, off);
        if (i >= 0 && v->free[i].off + v->free[i].len > off)
            break;
        /* A part's slot the prezeroer is zeroing comes back free (and
         * written) within one write and fdatasync. */
        if (!claim_holds(st, vol, off))
            goto done;
        pthread_cond_wait(&st->claim_cond, &st->alloc_lock);
    }
    uint64_t take = MIN(len, v->free[i].off + v->free[i].len - off);
    range_take(st, v, (size_t)i, off, take);
    ext_push(ext, alloc_lens, n, cap, vol, off, take);
    grower_advance(st, g, vol, off + take, take);
    err = 0;
done:
    pthread_mutex_unlock(&st->alloc_lock);
    return err;
}

int
storage_free_largest(struct storage *st, uint32_t *volume, uint64_t *offset, uint64_t *len)
{
    int err = -ENOSPC;
    uint32_t vol;
    size_t idx;
    pthread_mutex_lock(&st->alloc_lock);
    if (st->is_ready && range_pick(st, 0, false, &vol, &idx)) {
        *volume = vol;
        *offset = st->vols[vol]->free[idx].off;
        *len = st->vols[vol]->free[idx].len;
        err = 0;
    }
    pthread_mutex_unlock(&st->alloc_lock);
    return err;
}

uint64_t
storage__alloc_room(struct storage *st)
{
    pthread_mutex_lock(&st->alloc_lock);
    uint32_t n_vol = atomic_load_explicit(&st->n_volumes, memory_order_relaxed);
    uint64_t room = st->free_bytes;
    if (n_vol < st->max_volumes)
        room += (uint64_t)(st->max_volumes - n_vol) * st->volume_size;
    pthread_mutex_unlock(&st->alloc_lock);
    return room;
}

uint64_t
storage__alloc_at(struct storage *st, uint32_t vol, uint64_t off, uint64_t max_len,
                  struct storage__grower *g)
{
    uint64_t got = 0;
    pthread_mutex_lock(&st->alloc_lock);
    struct storage__volume *v = storage__volume_get(st, vol);
    if (!v || !st->is_ready)
        goto done;
    long i;
    for (;;) {
        i = range_find(v, off);
        if (i >= 0 && v->free[i].off == off)
            break;
        /* The claim was taken before this writer was listed (or it grew
         * faster than its guard): it comes back free within one write and
         * fdatasync, where continuing elsewhere would split the object. */
        if (!(claim_holds(st, vol, off) && st->claimed_off == off))
            goto done;
        pthread_cond_wait(&st->claim_cond, &st->alloc_lock);
    }
    got = MIN(max_len, v->free[i].len);
    range_take(st, v, (size_t)i, off, got);
    grower_advance(st, g, vol, off + got, got);
done:
    pthread_mutex_unlock(&st->alloc_lock);
    return got;
}

void
storage__free_unwritten(struct storage *st, uint32_t vol, uint64_t off, uint64_t len)
{
    if (len == 0)
        return;
    pthread_mutex_lock(&st->alloc_lock);
    struct storage__volume *v = storage__volume_get(st, vol);
    if (!v || range_put(st, v, off, len) < 0)
        CORRUPT_BKPT("freeing space that is already free");
    else
        storage__unwritten_add(st, v, off, len);
    pthread_mutex_unlock(&st->alloc_lock);
}

void
storage__free(struct storage *st, uint32_t vol, uint64_t off, uint64_t len)
{
    if (len == 0)
        return;
    pthread_mutex_lock(&st->alloc_lock);
    struct storage__volume *v = storage__volume_get(st, vol);
    if (!v || range_put(st, v, off, len) < 0)
        CORRUPT_BKPT("freeing space that is already free");
    pthread_mutex_unlock(&st->alloc_lock);
}

/* ---- the prezeroer's claims ---------------------------------------------- */

bool
storage__alloc_claim(struct storage *st, uint64_t max_len, uint32_t *vol, uint64_t *off,
                     uint64_t *len)
{
    bool is_found = false;
    uint64_t pick_free_len = 0;
    size_t pick_free = 0;
    uint32_t n = atomic_load_explicit(&st->n_volumes, memory_order_relaxed);
    for (uint32_t id = 0; id < n; id++) {
        struct storage__volume *v = st->vols[id];
        for (size_t u = 0; u < v->n_unwritten; u++) {
            uint64_t u_end = v->unwritten[u].off + v->unwritten[u].len, lim;
            uint64_t from = grower_clear(st, id, v->unwritten[u].off, u_end, &lim);
            if (from >= u_end)
                continue; /* all of it is where writers grow next */
            long i = range_find(v, from);
            if (i < 0)
                continue; /* cannot happen: unwritten space is free */
            uint64_t free_len = v->free[i].len;
            if (!is_found || free_len < pick_free_len) {
                is_found = true;
                pick_free_len = free_len;
                pick_free = (size_t)i;
                *vol = id;
                *off = from;
                *len = MIN(max_len, lim - from);
            }
        }
    }
    if (!is_found)
        return false;
    struct storage__volume *v = st->vols[*vol];
    range_take(st, v, pick_free, *off, *len);
    st->free_bytes += *len; /* still free, only borrowed */
    st->claimed_len = *len;
    st->claimed_vol = *vol;
    st->claimed_off = *off;
    return true;
}

bool
storage__alloc_claim_wait(struct storage *st)
{
    pthread_mutex_lock(&st->alloc_lock);
    bool was_claimed = st->claimed_len > 0;
    while (st->claimed_len > 0)
        pthread_cond_wait(&st->claim_cond, &st->alloc_lock);
    pthread_mutex_unlock(&st->alloc_lock);
    return was_claimed;
}

void
storage__alloc_unclaim(struct storage *st, uint32_t vol, uint64_t off, uint64_t len)
{
    st->free_bytes -= len;
    st->claimed_len = 0;
    pthread_cond_broadcast(&st->claim_cond);
    if (range_put(st, st->vols[vol], off, len) < 0)
        CORRUPT_BKPT("the prezeroer's claim overlaps free space");
}
