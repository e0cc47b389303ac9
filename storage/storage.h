/*
 * storage.h: the extent store. The whole interface of storage/.
 *
 * Object bytes live in extents of preallocated volume files in the data
 * directory. Writes go through io_uring with O_DIRECT from aligned staging
 * buffers; every STORAGE_BLOCK_LEN block of an extent carries an xxHash64
 * checksum kept by the caller (in the index record). Reads are either
 * zero-copy (a storage_send_span for sendfile) or buffered reads.
 *
 * Space: the allocator is in memory. At startup the caller marks every
 * extent the index references (storage_mark_used) and then calls
 * storage_ready(); everything else is free. So a crash can never leak
 * space: reserved-but-uncommitted extents are simply free after restart.
 * Freed extents are reused only when no reader pin holds them back
 * (deferred reclaim, below).
 *
 * No io_uring type appears here. Functions return 0 / a byte count, or a
 * negative errno. Thread-safety: a storage is shared by all threads; a
 * writer is used by one thread at a time.
 */
#ifndef SHARD_STORAGE_H
#define SHARD_STORAGE_H

#include "common/common.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define STORAGE_ALIGN 4096u          /* extent offsets and allocations */
#define STORAGE_BLOCK_LEN (1u << 20) /* checksum block */
#define STORAGE_SUM_LEN 8            /* xxh64 per block, little-endian */

struct storage;
struct storage_writer;

struct storage_extent {
    uint32_t volume;
    uint32_t flags; /* reserved, 0 */
    uint64_t offset;
    uint64_t len; /* logical bytes (the allocation is len rounded up to STORAGE_ALIGN) */
};

struct storage_config {
    const char *dir;             /* data directory; volumes are dir/vol-NNNN.dat */
    uint64_t volume_size;        /* bytes per volume file (multiple of 1 MiB) */
    uint32_t max_volumes;        /* new volumes are created on demand up to this */
    uint64_t write_buffer_total; /* bound on all staging buffers together (bytes) */
    bool is_direct;              /* O_DIRECT writes (false only where the fs refuses it) */
    bool is_sparse;              /* volumes take disk as written (no fallocate up front) */
    uint32_t max_pins;           /* reader pins held at once; 0: STORAGE_PINS_DEFAULT */
    uint32_t pin_timeout_ms;     /* a revocable pin idle this long is revoked; 0: never */
    uint64_t prezero_window;     /* free space kept written ahead of the allocator; 0: off */
};

#define STORAGE_PINS_DEFAULT 16384u

/* Opens the volumes in cfg->dir (creating vol-0000 if none exists).
 * Returns 0 and sets '*out', or -errno. */
int storage_open(struct storage **out, const struct storage_config *cfg);
/* Waits for in-flight I/O and closes; NULL is a no-op. */
void storage_close(struct storage *st);

/* Startup: marks 'e' as in use. Returns 0, or -EINVAL if the extent is out
 * of range or overlaps one already marked (corruption). */
int storage_mark_used(struct storage *st, const struct storage_extent *e);
/* Startup: builds the free map from what was not marked, then starts the
 * prezeroer (below). */
int storage_ready(struct storage *st);

/*
 * Prezeroing. Volumes are preallocated (posix_fallocate): their space is
 * unwritten extents until first written, and the fdatasync after a write
 * into them also commits the filesystem's journal for the conversion. With
 * cfg->prezero_window > 0 (and volumes not sparse) a background thread of
 * the lowest CPU and I/O priority writes zeros, with large O_DIRECT writes
 * followed by fdatasync, into free space the allocator hands out next,
 * until that much free space is written (or none is left unwritten). It
 * learns what is unwritten with FIEMAP when a volume is opened and again
 * before each write, so no written byte is ever rewritten (a restart
 * rezeroes nothing), and it claims each range from the free map under the
 * allocator's lock while it writes, so no writer ever waits for it or
 * shares its space. An I/O error stops the prezeroer (logged), nothing else.
 * storage_stats reports unwritten_bytes and prezeroed_bytes.
 */

/* ---- writing ------------------------------------------------------------ */

/*
 * Creates a writer for an object of 'size_hint' bytes (UINT64_MAX when
 * unknown). It takes neither space nor staging buffers yet: see
 * storage_writer_write. Returns 0, or -ENOSPC (a known size larger than all
 * free space plus the volumes not yet created), -EAGAIN (the staging buffer
 * pool is exhausted right now: 503 SlowDown).
 */
int storage_writer_create(struct storage *st, uint64_t size_hint, struct storage_writer **out);
/*
 * Layout hint, before the first write: reserve the writer's first bytes at
 * 'offset' (a multiple of STORAGE_ALIGN) of volume 'volume', so objects
 * written piecewise (the parts of a multipart upload, each at its slot)
 * end up adjacent on disk and are read as one span. Only a preference:
 * when that byte is not free the writer places itself as usual. Space is
 * still reserved and charged as the bytes arrive. Ignored after the first
 * write or for an unaligned offset.
 */
void storage_writer_place(struct storage_writer *w, uint32_t volume, uint64_t offset);
/* Appends 'len' bytes. Copies into staging buffers and submits full ones;
 * blocks only when all of the writer's buffers are in flight. Buffers are
 * taken from the pool and space reserved as the bytes arrive, in steps
 * (extents grow in place when they can, so an object may span several).
 * Returns 0 or -errno (-ENOSPC, -EAGAIN: no staging buffer, -EIO, -EFBIG
 * when exceeding a known size_hint). */
int storage_writer_write(struct storage_writer *w, const void *buf, size_t len);
/* Flushes the tail and waits for every write to complete (no fsync) and,
 * with a tap, for the tap to give every buffer back. Returns 0 or -errno. */
int storage_writer_finish(struct storage_writer *w);

/*
 * A reader of the bytes a writer stages (storage_writer_tap), so a caller
 * that needs every byte (hashing) reads them where they already are instead
 * of copying them once more.
 * 'stage_fn': a staging buffer's 'len' bytes, the next in order, once the
 * buffer is full and its write submitted (on the writing thread), or its
 * tail at storage_writer_finish with 'is_last' set ('len' may then be 0 and
 * 'stage' NULL). Every buffer but the last holds a multiple of
 * STORAGE_ALIGN bytes. The bytes are borrowed until
 * storage_writer_stage_release('stage') (any thread): the writer reuses or
 * frees no buffer before. 'hurry_fn': the writer is about to block until a
 * buffer comes back (its owner may have set it aside for later); it must
 * not block. Both get 'arg'.
 */
struct storage_stage;
struct storage_tap {
    void (*stage_fn)(void *arg, const uint8_t *data, size_t len, bool is_last,
                     struct storage_stage *stage);
    void (*hurry_fn)(void *arg);
    void *arg;
};
/* Sets the tap of 'w' (copied), before its first write; a tapped writer may
 * use up to 8 staging buffers instead of 4, as they are also held while
 * read. Returns how many it may use, so how many the tap may hold at once
 * (0: it stages nothing, a writer of an empty object). */
size_t storage_writer_tap(struct storage_writer *w, const struct storage_tap *tap);
/* Gives a buffer handed to a tap back to its writer (any thread). */
void storage_writer_stage_release(struct storage_stage *stage);
/* After finish: the extents written, in order (owned by the writer). */
size_t storage_writer_extents(const struct storage_writer *w, const struct storage_extent **out);
/* After finish: the block checksums of those extents (owned by the writer). */
const uint8_t *storage_writer_sums(const struct storage_writer *w, size_t *len);
/* Total bytes written. */
uint64_t storage_writer_size(const struct storage_writer *w);
/*
 * Destroys the writer. 'is_committed' true: its extents now belong to the
 * index and stay allocated. false: they return to the free map at once
 * (nothing was published). NULL is a no-op.
 */
void storage_writer_destroy(struct storage_writer *w, bool is_committed);

/* ---- what a writer holds (for per-client caps) --------------------------- */

/* Space reserved so far (bytes). It changes only when a new step is
 * reserved (or at finish), so a caller can re-check its caps only then. */
uint64_t storage_writer_reserved_len(const struct storage_writer *w);
/* What the writer holds beyond the bytes it was given: reserved space not
 * yet written plus its staging buffers (bytes); 0 once finished. At most
 * one reservation step (16 MiB) plus 4 buffers of 512 KiB (8 with a tap). */
uint64_t storage_writer_held_len(const struct storage_writer *w);

/* Makes all completed writes durable: one fdatasync per volume written
 * since the last sync (group commit calls it once per batch). */
int storage_sync(struct storage *st);

/* ---- freeing and reader pins ------------------------------------------- */

/*
 * Deferred reclaim. A reader takes a pin before it looks up extents (in the
 * index), so that an extent released after the pin (an overwrite or delete
 * committed meanwhile) is not reused while the reader may still read it.
 * A new pin is wide: it holds back every extent released after it was
 * taken. Once the reader knows the bytes it will read it narrows the pin
 * (storage_reader_narrow, storage_reader_create): from then on the pin
 * holds back only the extents holding bytes still to be read, so a slow
 * reader delays the reuse of its own object's space and of nothing else.
 *
 * The pin table is bounded (storage_config.max_pins). A pin narrowed by
 * storage_reader_create is revocable until a zero-copy span is taken from
 * it: when it makes no progress (no storage_reader_read) for
 * storage_config.pin_timeout_ms it is revoked, holds nothing back any more,
 * and reads through it fail with -ESTALE.
 */

/* Returns extents to the allocator once no pin holds them back (see above). */
void storage_release(struct storage *st, const struct storage_extent *e, size_t n);
/* Takes a wide pin; sets '*pin' (a handle for the calls below). Returns 0,
 * or -EAGAIN when the pin table is full (503 SlowDown). Thread-safe. */
int storage_reader_pin(struct storage *st, uint64_t *pin);
/*
 * Narrows 'pin' to bytes [first, first+len) of the object whose extents are
 * e[0..n) (in object order; bytes past the extents are ignored). 'e' is not
 * kept. The pin stays unrevocable. Returns 0, or -ESTALE when 'pin' is not
 * held (unpinned or revoked). Narrowing twice keeps the second range.
 */
int storage_reader_narrow(struct storage *st, uint64_t pin, const struct storage_extent *e,
                          size_t n, uint64_t first, uint64_t len);
/* Drops 'pin' (a revoked pin is dropped silently). Thread-safe. */
void storage_reader_unpin(struct storage *st, uint64_t pin);

/* ---- reading ------------------------------------------------------------ */

struct storage_reader;

/*
 * What a zero-copy send of part of an object needs: 'len' bytes at
 * 'offset' of file 'fd'. The fd is borrowed from storage (valid until
 * storage_close); dup it to hand it to something that closes it.
 */
struct storage_send_span {
    int fd;
    uint64_t offset;
    uint64_t len;
};

/*
 * Creates a reader of bytes [first, first+len) of the object whose extents
 * are e[0..n) (copied), under 'pin' (borrowed: the caller unpins only after
 * the last read), which it narrows to those bytes and makes revocable.
 * Checks every extent against its volume. Returns 0 and sets '*out' (free
 * it with storage_reader_destroy), -ERANGE (the range exceeds the
 * extents), -EIO (an extent lies outside its volume: corruption), -ESTALE
 * ('pin' is not held).
 */
int storage_reader_create(struct storage *st, uint64_t pin, const struct storage_extent *e,
                          size_t n, uint64_t first, uint64_t len, struct storage_reader **out);
/* Frees the reader (not its pin); NULL is a no-op. */
void storage_reader_destroy(struct storage_reader *rd);
/* True when the reader's bytes lie in one span (storage_reader_span at 0
 * returns them all). */
bool storage_reader_is_one_span(const struct storage_reader *rd);
/*
 * The zero-copy span holding byte 'pos' (counted from the reader's first
 * byte) and the bytes after it up to the end of its extent or of the
 * reader. The pin becomes unrevocable, since the caller now reads outside
 * storage. Iterate by adding out->len to 'pos'. Returns 0,
 * -ERANGE when 'pos' is at or past the end, -ENOTSUP when this storage has
 * no file to send from (use storage_reader_read), -ESTALE (pin revoked).
 */
int storage_reader_span(struct storage_reader *rd, uint64_t pos, struct storage_send_span *out);
/*
 * Reads up to 'len' bytes at 'pos' (counted from the reader's first byte)
 * into 'buf', stopping at an extent end, and hints read-ahead. Counts as
 * progress of the pin and advances it: extents wholly before 'pos' are no
 * longer held back. Returns the bytes read (0 at the end), -ESTALE when
 * the pin was revoked, or -errno.
 */
ssize_t storage_reader_read(struct storage_reader *rd, uint64_t pos, void *buf, size_t len);

/* Reads 'len' bytes at 'off' within extent 'e' into 'buf'. Returns the
 * bytes read (len unless past the extent end) or -errno. */
ssize_t storage_read(struct storage *st, const struct storage_extent *e, uint64_t off, void *buf,
                     size_t len);

/* ---- many reads in flight ------------------------------------------------- */

/*
 * A read queue keeps up to 'depth' reads of extents in flight at once (on
 * io_uring), so that a caller who knows its next reads, such as a batch GET
 * of many small samples, waits for the disk once for many of them rather
 * than once for each. Each read goes into the caller's buffer, which
 * belongs to storage from storage_readq_prep until storage_readq_reap of
 * that read returns (or storage_readq_destroy). Reads are not checked
 * against pins: the caller holds a pin on the bytes until it reaps them.
 * One thread at a time uses a queue, but that thread may change between
 * calls: a read prepared on one thread is reaped on another. Without
 * io_uring, storage_readq_prep reads at once with pread(2).
 */
struct storage_readq;
#define STORAGE_READQ_MAX 1024u

/* Creates a queue of 'depth' (1..STORAGE_READQ_MAX) reads. Returns 0 and
 * sets '*out' (free it with storage_readq_destroy), or -EINVAL. */
int storage_readq_create(struct storage *st, uint32_t depth, struct storage_readq **out);
/* Prepares a read of up to 'len' bytes at 'off' within extent 'e' (fewer
 * past the extent's end, none at or past it) into 'buf'; it goes to the
 * kernel at the next storage_readq_submit (or reap). Returns the read's
 * slot (>= 0, for storage_readq_reap), -EAGAIN when 'depth' reads are
 * taken, or -EIO (the extent lies outside its volume: nothing is taken). */
int storage_readq_prep(struct storage_readq *q, const struct storage_extent *e, uint64_t off,
                       void *buf, size_t len);
/* Submits the prepared reads. Returns 0 or -errno (the reads stay queued
 * and go with the next reap: nothing is lost). */
int storage_readq_submit(struct storage_readq *q);
/* Waits for the read in 'slot' and frees the slot (its buffer is the
 * caller's again). Returns the bytes read or -errno. */
ssize_t storage_readq_reap(struct storage_readq *q, int slot);
/* True when the read in 'slot' (taken) is complete: reaping it will not
 * wait. Submits what is prepared and reaps what completed, never waits. */
bool storage_readq_is_done(struct storage_readq *q, int slot);
/* Slots free now (reads that storage_readq_prep would take). */
uint32_t storage_readq_room(const struct storage_readq *q);
/* Waits for every read still taken, then frees the queue; NULL is a no-op. */
void storage_readq_destroy(struct storage_readq *q);

/*
 * Scrub: re-reads 'n' extents and compares each block against 'sums'
 * (STORAGE_SUM_LEN per block, blocks counted from each extent's start, in
 * extent order). Returns the number of mismatching blocks (0 = clean) or -errno.
 */
long storage_verify(struct storage *st, const struct storage_extent *e, size_t n,
                    const uint8_t *sums, size_t sums_len);
/* Number of checksum bytes for an object with these extents. */
size_t storage_sums_len(const struct storage_extent *e, size_t n);

/* ---- accounting and test hooks ------------------------------------------ */

struct storage_stats {
    uint64_t total_bytes;   /* all volumes */
    uint64_t free_bytes;    /* free in the allocator (excludes pending reclaim) */
    uint64_t pending_bytes; /* freed, waiting for readers */
    uint32_t n_pins;        /* reader pins held */
    uint32_t n_volumes;
    uint64_t unwritten_bytes; /* free space not known written (unwritten extents, prezero) */
    uint64_t prezeroed_bytes; /* zeros written into free space since open */
};
void storage_stats_get(struct storage *st, struct storage_stats *out);

/* The largest free range of the volumes created so far: sets '*volume',
 * '*offset' and '*len' (a layout hint; nothing is reserved). Returns 0, or
 * -ENOSPC when nothing is free. Thread-safe. */
int storage_free_largest(struct storage *st, uint32_t *volume, uint64_t *offset, uint64_t *len);

/* True when writes really use O_DIRECT (false when configured off or when
 * the filesystem refused it at open). */
bool storage_is_direct(const struct storage *st);

/* Test hook: make the Nth (1-based, counted from now) operation of 'kind'
 * fail with -EIO. n = 0 disarms. Kinds: "submit", "read", "fsync" (every
 * fsync or fdatasync, of volumes and of the data directory), "prezero" (a
 * write of zeros by the prezeroer). */
void storage_fault_inject(struct storage *st, const char *kind, uint64_t n);

#endif
