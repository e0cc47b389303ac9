/*
 * storage_int.h: private structures shared by the files of storage/.
 *
 * volume.c owns struct storage and the volume files, alloc.c the free map,
 * pin.c reader pins and deferred reclaim, ring.c the thread-local io_uring rings, writer.c the
 * staging buffer pool and writers, reader.c reads and scrubbing, readq.c many
 * reads in flight. Nothing here leaves storage/; <liburing.h> is included by
 * ring.c, writer.c and readq.c only.
 */
#ifndef SHARD_STORAGE_INT_H
#define SHARD_STORAGE_INT_H

#include "storage/storage.h"
#include "storage/extent_format.h"

#include <pthread.h>
#include <stdatomic.h>

#define STORAGE_STAGE_LEN (512u << 10) /* one staging buffer */
#define STORAGE_STAGES_MAX 4           /* staging buffers per writer */
/* ... and per writer with a tap, whose buffers are also held while they
 * are read: as many bytes in flight as a writer beside a hashing queue of
 * its own copies had (2 MiB each). */
#define STORAGE_STAGES_TAPPED 8
#define STORAGE_RING_DEPTH 64
#define STORAGE_READAHEAD_LEN (8u << 20) /* storage_reader_read hints this far ahead */
/* The largest reservation step of a writer (a quarter volume at most): large
 * enough that a big object takes the allocator lock once per step, small
 * enough to bound what a stalled upload holds. */
#define STORAGE_STEP_MAX (16ull << 20)
/* How far past the end of its reservation a writer of unknown size is kept
 * clear of the prezeroer's claims: two steps, so the claim made just before
 * its next step is not where the step after it goes. */
#define STORAGE_GROW_GUARD_LEN (2 * STORAGE_STEP_MAX)

enum storage__fault {
    STORAGE_FAULT_SUBMIT,
    STORAGE_FAULT_READ,
    STORAGE_FAULT_FSYNC,
    STORAGE_FAULT_PREZERO,
    STORAGE_FAULT_N
};

/* A free range [off, off+len) of one volume. */
struct storage__range {
    uint64_t off;
    uint64_t len;
};

struct storage__volume {
    uint32_t id;
    int wfd; /* O_DIRECT|O_RDWR (or buffered when the fs refuses O_DIRECT) */
    int rfd; /* O_RDONLY buffered: reads, sendfile */
    uint64_t len;

    /* Free map, sorted by offset, never two adjacent ranges (coalesced).
     * Guarded by storage.alloc_lock. */
    struct storage__range *free;
    size_t n_free;
    size_t cap_free;
    /* Free space never written (FIEMAP's unwritten extents), sorted and
     * coalesced; always inside the free map (range_take cuts it). Guarded
     * by storage.alloc_lock; empty when prezeroing is off. */
    struct storage__range *unwritten;
    size_t n_unwritten;
    size_t cap_unwritten;
    /* Before storage_ready: one bit per 4 KiB block marked used. */
    uint64_t *used_bits;

    /* Group commit: completed writes bump write_seq; storage_sync brings
     * synced_seq up to it with one fdatasync under sync_lock. */
    atomic_uint_fast64_t write_seq;
    uint64_t synced_seq;
    pthread_mutex_t sync_lock;
};

/* A writer that may still grow in place (writer.c embeds one), listed in
 * storage.growers while it is: its next step goes at 'frontier' of volume
 * 'vol' when that space is free, so the prezeroer keeps its claims out of
 * [frontier, frontier + want_len) (STORAGE_GROW_GUARD_LEN when the size is
 * unknown). All fields are guarded by storage.alloc_lock. */
struct storage__grower {
    struct storage__grower *prev;
    struct storage__grower *next;
    bool is_listed;
    uint32_t vol;
    uint64_t frontier; /* just past its reservation */
    uint64_t want_len; /* what it may still reserve; UINT64_MAX: unknown */
};

/* A byte range of a volume that a narrowed pin still holds back; 'obj_end'
 * is the object offset just past it (holds are in object order). */
struct storage__hold {
    uint32_t volume;
    uint64_t off;
    uint64_t len;
    uint64_t obj_end;
};

enum storage__pin_state {
    STORAGE_PIN_FREE,
    STORAGE_PIN_WIDE,  /* holds back everything released since 'gen' */
    STORAGE_PIN_NARROW /* holds back only what overlaps holds[hold_head..n_holds) */
};

/* A slot of the pin table. A handle is (serial << 32 | slot index); the
 * serial changes whenever the slot is freed, so a stale handle is refused. */
struct storage__pin {
    uint32_t serial;
    enum storage__pin_state state;
    bool is_revocable;
    uint64_t gen;       /* st->gen when taken */
    int64_t touched_ns; /* last progress (monotonic) */
    struct storage__hold *holds;
    size_t hold_head;
    size_t n_holds;
    size_t cap_holds;
    uint32_t active_pos; /* index in st->active while taken */
};

/* An extent freed while readers may still use it. */
struct storage__pending {
    uint32_t volume;
    uint64_t off;
    uint64_t len; /* allocation length */
    uint64_t gen; /* st->gen when released */
};

/* The bounded pool of aligned staging buffers (writer.c). */
struct storage__pool {
    pthread_mutex_t lock;
    uint64_t total_len;
    uint64_t used_len;
    void **cached; /* idle STORAGE_STAGE_LEN buffers */
    size_t n_cached;
    size_t cap_cached;
};

struct storage {
    char *dir;
    uint64_t volume_size;
    uint32_t max_volumes;
    bool is_direct;
    bool is_sparse; /* volumes sized by ftruncate, blocks allocated as written */

    /* vols[0..n_volumes) are immutable once published (release store of
     * n_volumes), so readers index them without a lock. */
    struct storage__volume **vols;
    _Atomic uint32_t n_volumes;

    pthread_mutex_t alloc_lock; /* free maps, free_bytes, volume creation */
    uint64_t free_bytes;
    bool is_ready;
    struct storage__grower *growers; /* writers that may grow in place (alloc_lock) */

    /* Deferred reclaim (pin.c), guarded by reclaim_lock (taken before
     * alloc_lock). pins[max_pins] is the bounded pin table; free_slots is a
     * stack of the free slots, active[0..n_active) lists the taken ones.
     * pending[0..n_pending) is unordered. */
    pthread_mutex_t reclaim_lock;
    uint64_t gen; /* bumped by every storage_release */
    struct storage__pin *pins;
    uint32_t max_pins;
    uint32_t *free_slots;
    uint32_t n_free_slots;
    uint32_t *active;
    uint32_t n_active;
    int64_t pin_timeout_ns; /* 0: pins are never revoked */
    struct storage__pending *pending;
    size_t n_pending;
    size_t cap_pending;
    uint64_t pending_bytes;

    struct storage__pool pool;

    /* Prezeroing (prezero.c). unwritten_bytes sums the volumes' unwritten
     * lists and claimed_len is the range the prezeroer has taken out of the
     * free map (still counted in free_bytes), both under alloc_lock. */
    uint64_t prezero_window; /* 0: off */
    uint64_t unwritten_bytes;
    uint64_t claimed_len; /* 0: nothing claimed */
    uint32_t claimed_vol;
    uint64_t claimed_off;
    atomic_uint_fast64_t prezeroed_bytes;
    pthread_t prezero_thread;
    bool is_prezero_running;
    bool is_prezero_stopping;    /* under alloc_lock; prezero_cond wakes it */
    pthread_cond_t prezero_cond; /* wakes the prezeroer (stop) */
    pthread_cond_t claim_cond;   /* a claim was given back */

    atomic_uint_fast64_t fault_left[STORAGE_FAULT_N];
};

/* ---- volume.c ---- */
/* Creates volume number n_volumes (caller holds alloc_lock). Returns 0 or -errno. */
int storage__volume_add(struct storage *st);
/* Returns the volume 'id' or NULL when out of range. */
struct storage__volume *storage__volume_get(struct storage *st, uint32_t id);
/* True when this operation of 'kind' is the one armed to fail. */
bool storage__fault_hit(struct storage *st, enum storage__fault kind);
/* Checks that 'e' lies within its volume; logs corruption otherwise. */
int storage__extent_check(struct storage *st, const struct storage_extent *e);
/* fsyncs directory 'dir' (a new entry in it survives a power loss). Counts
 * as an "fsync" for the fault hook. Returns 0 or -errno. */
int storage__dir_sync(struct storage *st, const char *dir);

/* ---- alloc.c ---- */
/* Sets up an empty free map for a new volume (caller holds alloc_lock). */
void storage__alloc_volume_init(struct storage *st, struct storage__volume *v);
void storage__alloc_volume_cleanup(struct storage__volume *v);
/* Reserves one extent of up to 'len' (a multiple of 4096) bytes and appends
 * it (len 0, allocation in '*alloc_lens') to the arrays: at the start of the
 * smallest free range of at least 'fit_len' bytes (room to grow in place),
 * else of 'len', else in a new volume, else the largest free range. 'g' (or
 * NULL) is the writer's grower, moved to the new extent's end in the same
 * critical section (storage__grower_init). Returns 0, -EINVAL or -ENOSPC
 * (nothing reserved). */
int storage__alloc(struct storage *st, uint64_t len, uint64_t fit_len, struct storage__grower *g,
                   struct storage_extent **ext, uint64_t **alloc_lens, size_t *n, size_t *cap);
/* The bytes that could still be reserved: free space plus the volumes not
 * yet created (a bound; nothing is reserved). */
uint64_t storage__alloc_room(struct storage *st);
/* Reserves up to 'max_len' bytes starting exactly at 'vol'/'off' when that is
 * the start of a free range, and moves 'g' (or NULL) past them. When 'off'
 * is where the prezeroer's current claim starts, it waits for the claim to
 * be given back (one write and fdatasync at most) rather than fail: the
 * writer growing there would otherwise have to continue elsewhere. Returns
 * the bytes reserved (0: none). */
uint64_t storage__alloc_at(struct storage *st, uint32_t vol, uint64_t off, uint64_t max_len,
                           struct storage__grower *g);
/* Reserves up to 'len' (a multiple of 4096) bytes starting exactly at
 * 'vol'/'off' (aligned) when that byte is free, anywhere in a free range,
 * and appends the extent as storage__alloc does (waiting, as
 * storage__alloc_at does, when the byte is inside the prezeroer's claim).
 * Returns 0, or -ENOSPC when 'off' is not free (nothing reserved). */
int storage__alloc_fixed(struct storage *st, uint32_t vol, uint64_t off, uint64_t len,
                         struct storage__grower *g, struct storage_extent **ext,
                         uint64_t **alloc_lens, size_t *n, size_t *cap);
/* Sets up 'g' for a writer of 'size_hint' bytes (UINT64_MAX: unknown); it is
 * listed once space is reserved for it and unlisted when it has all it may
 * want. Nothing is locked: 'g' is not listed yet. */
void storage__grower_init(struct storage__grower *g, uint64_t size_hint);
/* Unlists 'g' (the writer is done growing); a no-op when it is not listed. */
void storage__grower_drop(struct storage *st, struct storage__grower *g);
/* Returns [off, off+len) of 'vol' to the free map at once. */
void storage__free(struct storage *st, uint32_t vol, uint64_t off, uint64_t len);
/* The same for space reserved and never written (a writer's unused tail):
 * it also goes back on the unwritten list, for the prezeroer, which asks
 * FIEMAP before it writes (the space may have been written before). */
void storage__free_unwritten(struct storage *st, uint32_t vol, uint64_t off, uint64_t len);

/* The prezeroer's claim: takes up to 'max_len' bytes of unwritten free space
 * out of the free map (the start of the lowest unwritten range in the
 * smallest free range holding one: where best fit allocates next), still
 * counted free, never where a listed grower would grow next. Caller holds
 * alloc_lock. Returns false when none is left. */
bool storage__alloc_claim(struct storage *st, uint64_t max_len, uint32_t *vol, uint64_t *off,
                          uint64_t *len);
/* Waits until no range is claimed. Returns true when one was. */
bool storage__alloc_claim_wait(struct storage *st);
/* Gives the claim back to the free map and wakes storage__alloc_claim_wait
 * (caller holds alloc_lock). */
void storage__alloc_unclaim(struct storage *st, uint32_t vol, uint64_t off, uint64_t len);

/* ---- prezero.c ---- */
/* Fills v->unwritten from FIEMAP (storage_open, storage__volume_add). */
void storage__prezero_scan(struct storage *st, struct storage__volume *v);
/* Adds [off, off+len), free and not on the list, to v->unwritten when
 * prezeroing is on (caller holds alloc_lock). */
void storage__unwritten_add(struct storage *st, struct storage__volume *v, uint64_t off,
                            uint64_t len);
/* Removes [off, off+len) from v->unwritten (caller holds alloc_lock). */
void storage__unwritten_cut(struct storage *st, struct storage__volume *v, uint64_t off,
                            uint64_t len);
/* Keeps only the unwritten space that is free (storage_ready, alloc_lock held). */
void storage__unwritten_keep_free(struct storage *st, struct storage__volume *v);
/* Starts the prezeroer when configured (storage_ready). */
void storage__prezero_start(struct storage *st);
/* Stops it and waits for it (storage_close). */
void storage__prezero_stop(struct storage *st);

/* ---- pin.c ---- */
/* Sets up the pin table of 'max_pins' slots and the pending list. */
void storage__reclaim_init(struct storage *st, uint32_t max_pins, uint32_t pin_timeout_ms);
void storage__reclaim_cleanup(struct storage *st);
/* Revokes the pins idle past the timeout and reclaims what no pin holds
 * back any more. Returns the bytes it returned to the free map. */
uint64_t storage__reclaim_poll(struct storage *st);
/* Checks that 'pin' is held and, when 'is_progress', renews its deadline
 * and drops the holds wholly before object offset 'pos'; 'is_sent' makes
 * the pin unrevocable. Returns 0 or -ESTALE. */
int storage__pin_touch(struct storage *st, uint64_t pin, bool is_progress, uint64_t pos,
                       bool is_sent);
/* Narrows 'pin' (see storage_reader_narrow), making it revocable or not. */
int storage__pin_narrow(struct storage *st, uint64_t pin, const struct storage_extent *e, size_t n,
                        uint64_t first, uint64_t len, bool is_revocable);

/* ---- writer.c ---- */
void storage__pool_init(struct storage__pool *p, uint64_t total_len);
void storage__pool_cleanup(struct storage__pool *p);

/* ---- ring.c ---- */
struct storage__ring;
struct storage__io;
typedef void storage__io_fn(struct storage__io *io, int res);
/* One I/O in flight on a ring; embedded in its owner (a staging buffer, a
 * read queue slot). */
struct storage__io {
    /* Runs under the ring lock, on any thread; may resubmit on io->ring. */
    storage__io_fn *complete_fn;
    struct storage__ring *ring; /* where it was submitted */
    bool is_inflight;           /* guarded by ring's lock */
};
struct io_uring_sqe;
/* Returns the calling thread's ring, created on first use, or NULL with
 * '*err' set (-errno) when io_uring is unavailable. */
struct storage__ring *storage__ring_get(int *err);
void storage__ring_lock(struct storage__ring *r);
void storage__ring_unlock(struct storage__ring *r);
/* With the lock held: an SQE tagged with 'io', which is now in flight on 'r'.
 * Never NULL (a full SQ is submitted first). */
struct io_uring_sqe *storage__ring_prep(struct storage__ring *r, struct storage__io *io);
/* With the lock held: submits prepared SQEs. Returns 0 or -errno. */
int storage__ring_submit(struct storage__ring *r);
/* Reaps completions of io's ring (any owner's) until 'io' is done. */
void storage__io_wait(struct storage__io *io);
/* Reaps the completions ready on io's ring, without waiting. */
void storage__io_poll(struct storage__io *io);
/* Drains and closes the calling thread's ring (storage_close; thread exit
 * does the same through a key destructor). */
void storage__ring_thread_release(void);

#endif
