/*
 * pin.c: reader pins and deferred reclaim.
 *
 * storage_release puts extents on the pending list, tagged with the
 * generation it then bumps. A pending extent returns to the free map once no
 * taken pin holds it back: a wide pin holds back everything released at or
 * after its own generation; a narrowed pin only those extents that overlap
 * its holds (the bytes its reader still has to read). The table has
 * max_pins slots and never grows: a full table refuses new pins (-EAGAIN).
 * A revocable pin idle past pin_timeout_ns is revoked (its slot freed, so
 * its handle goes stale) when reclaim next looks: on a release, when the
 * table is full, or when an allocation finds no room.
 */
#include "storage/storage_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PIN_SLOT(h) ((uint32_t)((h)&0xffffffffu))
#define PIN_SERIAL(h) ((uint32_t)((h) >> 32))
/* Freed slots keep a hold array up to this size for the next reader. */
#define PIN_HOLDS_KEEP 64

void
storage__reclaim_init(struct storage *st, uint32_t max_pins, uint32_t pin_timeout_ms)
{
    st->gen = 1;
    st->max_pins = max_pins ? max_pins : STORAGE_PINS_DEFAULT;
    st->pins = xcalloc(st->max_pins, sizeof(*st->pins));
    st->free_slots = xcalloc(st->max_pins, sizeof(*st->free_slots));
    st->active = xcalloc(st->max_pins, sizeof(*st->active));
    for (uint32_t i = 0; i < st->max_pins; i++) {
        st->pins[i].serial = 1;
        st->free_slots[i] = st->max_pins - 1 - i; /* slot 0 is popped first */
    }
    st->n_free_slots = st->max_pins;
    st->n_active = 0;
    st->pin_timeout_ns = (int64_t)pin_timeout_ms * 1000000;
}

void
storage__reclaim_cleanup(struct storage *st)
{
    for (uint32_t i = 0; st->pins && i < st->max_pins; i++)
        free(st->pins[i].holds);
    free(st->pins);
    free(st->free_slots);
    free(st->active);
    free(st->pending);
    st->pins = NULL;
    st->free_slots = NULL;
    st->active = NULL;
    st->pending = NULL;
}

/* ---- the pin table (reclaim_lock held) ----------------------------------- */

/* Returns the taken pin of handle 'h', or NULL when it is stale or invalid. */
static struct storage__pin *
pin_lookup(struct storage *st, uint64_t h)
{
    uint32_t slot = PIN_SLOT(h);
    if (slot >= st->max_pins)
        return NULL;
    struct storage__pin *p = &st->pins[slot];
    if (p->state == STORAGE_PIN_FREE || p->serial != PIN_SERIAL(h))
        return NULL;
    return p;
}

/* Frees the slot of taken pin 'p'; its handle goes stale. */
static void
pin_free(struct storage *st, struct storage__pin *p)
{
    uint32_t slot = (uint32_t)(p - st->pins);
    uint32_t last = st->active[--st->n_active];
    st->active[p->active_pos] = last;
    st->pins[last].active_pos = p->active_pos;
    p->state = STORAGE_PIN_FREE;
    p->serial++;
    p->hold_head = p->n_holds = 0;
    if (p->cap_holds > PIN_HOLDS_KEEP) {
        free(p->holds);
        p->holds = NULL;
        p->cap_holds = 0;
    }
    st->free_slots[st->n_free_slots++] = slot;
}

/* True when pin 'p' holds back pending extent 'x'. An extent released
 * before the pin was taken cannot be one its reader found. */
static bool
pin_holds(const struct storage__pin *p, const struct storage__pending *x)
{
    if (p->gen > x->gen)
        return false;
    if (p->state == STORAGE_PIN_WIDE)
        return true;
    for (size_t i = p->hold_head; i < p->n_holds; i++) {
        const struct storage__hold *h = &p->holds[i];
        if (h->volume == x->volume && h->off < x->off + x->len && x->off < h->off + h->len)
            return true;
    }
    return false;
}

/* True when 'p' holds back any pending extent: only then can dropping or
 * narrowing it let something go (so the common case skips reclaim_run). */
static bool
pin_holds_any(const struct storage *st, const struct storage__pin *p)
{
    for (size_t i = 0; i < st->n_pending; i++) {
        if (pin_holds(p, &st->pending[i]))
            return true;
    }
    return false;
}

/* Revokes the revocable pins idle past the timeout. */
static void
pins_expire(struct storage *st)
{
    if (st->pin_timeout_ns <= 0)
        return;
    int64_t now = clock_mono_ns();
    for (uint32_t i = 0; i < st->n_active;) {
        struct storage__pin *p = &st->pins[st->active[i]];
        if (p->state == STORAGE_PIN_NARROW && p->is_revocable &&
            now - p->touched_ns > st->pin_timeout_ns) {
            log_warn("storage: revoked a reader pin idle for over %" PRId64 " ms",
                     st->pin_timeout_ns / 1000000);
            pin_free(st, p); /* moves the last active slot to i */
            continue;
        }
        i++;
    }
}

/* Returns to the free map every pending extent no pin holds back. Returns
 * the bytes freed. */
static uint64_t
reclaim_run(struct storage *st)
{
    uint64_t freed = 0;
    for (size_t i = 0; i < st->n_pending;) {
        const struct storage__pending *x = &st->pending[i];
        bool is_held = false;
        for (uint32_t k = 0; k < st->n_active && !is_held; k++)
            is_held = pin_holds(&st->pins[st->active[k]], x);
        if (is_held) {
            i++;
            continue;
        }
        storage__free(st, x->volume, x->off, x->len);
        st->pending_bytes -= x->len;
        freed += x->len;
        st->pending[i] = st->pending[--st->n_pending];
    }
    return freed;
}

/* ---- public calls ---------------------------------------------------------- */

void
storage_release(struct storage *st, const struct storage_extent *e, size_t n)
{
    pthread_mutex_lock(&st->reclaim_lock);
    for (size_t i = 0; i < n; i++) {
        uint64_t alloc_len = ALIGN_UP(e[i].len, STORAGE_ALIGN);
        if (alloc_len == 0 || storage__extent_check(st, &e[i]) < 0)
            continue;
        if (st->n_pending == st->cap_pending) {
            st->cap_pending = st->cap_pending ? st->cap_pending * 2 : 64;
            st->pending = xrealloc(st->pending, st->cap_pending * sizeof(*st->pending));
        }
        st->pending[st->n_pending++] = (struct storage__pending){
            .volume = e[i].volume, .off = e[i].offset, .len = alloc_len, .gen = st->gen};
        st->pending_bytes += alloc_len;
    }
    st->gen++;
    pins_expire(st);
    reclaim_run(st);
    pthread_mutex_unlock(&st->reclaim_lock);
}

uint64_t
storage__reclaim_poll(struct storage *st)
{
    pthread_mutex_lock(&st->reclaim_lock);
    pins_expire(st);
    uint64_t freed = reclaim_run(st);
    pthread_mutex_unlock(&st->reclaim_lock);
    return freed;
}

int
storage_reader_pin(struct storage *st, uint64_t *pin)
{
    int err = 0;
    pthread_mutex_lock(&st->reclaim_lock);
    if (st->n_free_slots == 0) {
        pins_expire(st);
        reclaim_run(st);
    }
    if (st->n_free_slots == 0) {
        err = -EAGAIN;
        goto done;
    }
    uint32_t slot = st->free_slots[--st->n_free_slots];
    struct storage__pin *p = &st->pins[slot];
    p->state = STORAGE_PIN_WIDE;
    p->is_revocable = false;
    p->gen = st->gen;
    p->hold_head = p->n_holds = 0;
    p->active_pos = st->n_active;
    st->active[st->n_active++] = slot;
    *pin = (uint64_t)p->serial << 32 | slot;
done:
    pthread_mutex_unlock(&st->reclaim_lock);
    return err;
}

int
storage__pin_narrow(struct storage *st, uint64_t pin, const struct storage_extent *e, size_t n,
                    uint64_t first, uint64_t len, bool is_revocable)
{
    int err = 0;
    uint64_t end = len > UINT64_MAX - first ? UINT64_MAX : first + len;
    pthread_mutex_lock(&st->reclaim_lock);
    struct storage__pin *p = pin_lookup(st, pin);
    if (!p) {
        err = -ESTALE;
        goto done;
    }
    bool did_hold = pin_holds_any(st, p);
    p->hold_head = p->n_holds = 0;
    uint64_t start = 0;
    for (size_t i = 0; i < n && start < end; i++) {
        uint64_t stop = start + e[i].len;
        if (stop > first && e[i].len > 0) {
            uint64_t lo = MAX(first, start), hi = MIN(end, stop);
            if (p->n_holds == p->cap_holds) {
                p->cap_holds = p->cap_holds ? p->cap_holds * 2 : 4;
                p->holds = xrealloc(p->holds, p->cap_holds * sizeof(*p->holds));
            }
            p->holds[p->n_holds++] = (struct storage__hold){.volume = e[i].volume,
                                                            .off = e[i].offset + (lo - start),
                                                            .len = hi - lo,
                                                            .obj_end = hi};
        }
        start = stop;
    }
    p->state = STORAGE_PIN_NARROW;
    p->is_revocable = is_revocable;
    p->touched_ns = clock_mono_ns();
    if (did_hold)
        reclaim_run(st);
done:
    pthread_mutex_unlock(&st->reclaim_lock);
    return err;
}

int
storage_reader_narrow(struct storage *st, uint64_t pin, const struct storage_extent *e, size_t n,
                      uint64_t first, uint64_t len)
{
    return storage__pin_narrow(st, pin, e, n, first, len, false);
}

int
storage__pin_touch(struct storage *st, uint64_t pin, bool is_progress, uint64_t pos, bool is_sent)
{
    int err = 0;
    pthread_mutex_lock(&st->reclaim_lock);
    struct storage__pin *p = pin_lookup(st, pin);
    if (!p) {
        err = -ESTALE;
        goto done;
    }
    if (is_sent)
        p->is_revocable = false;
    if (is_progress) {
        p->touched_ns = clock_mono_ns();
        if (p->hold_head < p->n_holds && p->holds[p->hold_head].obj_end <= pos) {
            bool did_hold = pin_holds_any(st, p);
            while (p->hold_head < p->n_holds && p->holds[p->hold_head].obj_end <= pos)
                p->hold_head++;
            if (did_hold)
                reclaim_run(st);
        }
    }
done:
    pthread_mutex_unlock(&st->reclaim_lock);
    return err;
}

void
storage_reader_unpin(struct storage *st, uint64_t pin)
{
    pthread_mutex_lock(&st->reclaim_lock);
    struct storage__pin *p = pin_lookup(st, pin);
    if (p) {
        bool did_hold = pin_holds_any(st, p);
        pin_free(st, p);
        if (did_hold)
            reclaim_run(st);
    } else {
        /* Revoked meanwhile (or a bug: nothing to undo either way). */
        log_debug("storage: unpin of a pin no longer held");
    }
    pthread_mutex_unlock(&st->reclaim_lock);
}
