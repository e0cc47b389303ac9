/*
 * tier.h: storage tiers and storage classes (tier.c, tier_cold.c,
 * tier_remote.c).
 *
 * An object's bytes live in one tier: the hot volumes (storage/, class
 * STANDARD), the local cold tier (tier_cold.c: a second volume set,
 * zstd-compressed blocks) or a remote S3 tier (tier_remote.c). The tier
 * is written in every extent's flags (index_extent.flags, below), so
 * index/ needs no other field and a listing names the class without
 * reading metadata. A tier is an implementation of struct tier_ops; the
 * rest of server/ goes through the tier set (struct tier_set) and never
 * branches on a tier's kind, so a RADOS tier is one more implementation.
 *
 * Moves (tier_move): the tier copy is written and made durable, then ONE
 * index transaction (INDEX_OP_SET_EXTENTS) swaps the record's extents if
 * the record still has the ETag, mtime and extents that were read, then
 * the old extents are freed through the commit's freed list. A crash
 * before the swap leaves the object where it was; the tier copy is free
 * space after restart (local tiers rebuild free space from the index) or
 * an orphan the next remote sweep deletes (tier_sweep).
 */
#ifndef SHARD_SERVER_TIER_H
#define SHARD_SERVER_TIER_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct index_extent;
struct index_object;
struct server;

/* index_extent.flags: bits 0-7 the tier holding the extent, bits 8-15
 * the storage class the object was stored under within that tier. 0 is
 * the hot volumes, STANDARD (every extent written before tiers existed). */
#define TIER_HOT 0u
#define TIER_COLD 1u
#define TIER_REMOTE 2u
#define TIER_MAX 3u
#define TIER_FLAGS(tier, cls) ((uint32_t)(tier) | (uint32_t)(cls) << 8)
#define TIER_OF(flags) ((flags)&0xffu)
#define TIER_CLASS_OF(flags) (((flags) >> 8) & 0xffu)

/* Class codes (bits 8-15): the tier's own name, or the AWS name the
 * object was stored under when the configuration maps it to that tier. */
#define TIER_CLASS_OWN 0u
#define TIER_CLASS_STANDARD_IA 1u
#define TIER_CLASS_GLACIER_IR 2u

#define TIER_CLASS_NAME_MAX 31

struct tier;
struct tier_reader;

/* Where a move reads the plain bytes it stores: up to 'len' bytes at
 * 'pos' into 'buf'. Returns the bytes read (> 0 until the end) or -errno. */
typedef ssize_t (*tier_source_fn)(void *ctx, uint64_t pos, void *buf, size_t len);

/* Space a tier holds, for metrics and admin status. */
struct tier_space {
    uint64_t used_bytes;  /* stored bytes (compressed for the cold tier) */
    uint64_t total_bytes; /* 0 when unknown (remote) */
};

/*
 * One tier implementation. Every function is thread-safe. Errors are
 * 0 or -errno: -ENOSPC (tier full), -EAGAIN (tier unreachable, retry
 * later), -EILSEQ (stored data fails its checksum), -EIO.
 */
struct tier_ops {
    /* Stores 'size' bytes read from 'src', durable once it returns (or,
     * for a tier with 'sync', once sync returns 0). Fills
     * out->extents (flags carry the tier id; in 'a'), out->n_extents,
     * out->sums and out->sums_len. Nothing else of 'out' is touched. On
     * failure nothing stays allocated. */
    int (*put)(struct tier *t, uint64_t size, tier_source_fn src, void *src_ctx, struct arena *a,
               struct index_object *out);
    /* Makes every put so far durable (one fdatasync per volume written).
     * NULL when put is durable by itself (remote). */
    int (*sync)(struct tier *t);
    /* A reader of bytes [first, first+len) of 'obj' (its extents are in
     * this tier) under 'pin' (from pin, borrowed until reader_destroy). */
    int (*reader_create)(struct tier *t, uint64_t pin, const struct index_object *obj,
                         uint64_t first, uint64_t len, struct tier_reader **out);
    /* Up to 'len' bytes at 'pos' (from the reader's first byte); 0 at the end. */
    ssize_t (*read)(struct tier_reader *rd, uint64_t pos, void *buf, size_t len);
    void (*reader_destroy)(struct tier_reader *rd);
    /* Frees extents no record holds any more (after readers are done). */
    void (*release)(struct tier *t, const struct index_extent *e, size_t n);
    /* Startup, local tiers: extent 'e' is referenced (-EINVAL: corrupt),
     * then ready() builds the free space. NULL when not needed. */
    int (*mark_used)(struct tier *t, const struct index_extent *e);
    int (*ready)(struct tier *t);
    /* Reader pins (deferred reclaim). NULL when the tier needs none. */
    int (*pin)(struct tier *t, uint64_t *pin);
    void (*unpin)(struct tier *t, uint64_t pin);
    void (*space)(struct tier *t, struct tier_space *out);
    /* Deletes stored objects that no record references: 'is_referenced'
     * says whether an extent offset is. NULL for local tiers (their free
     * space is derived from the index). Returns the number deleted or
     * -errno. */
    long (*sweep)(struct tier *t, bool (*is_referenced)(void *ctx, uint64_t offset), void *ctx);
    /* Scrub: re-reads 'obj' (its extents are here) under 'pin' and
     * returns the number of blocks failing their sums (0: clean) or
     * -errno. NULL when the tier cannot check (a remote checks its own). */
    long (*verify)(struct tier *t, uint64_t pin, const struct index_object *obj);
    /* The move that put extents 'e' committed or gave up (after put, once
     * the index says which): the sweep may judge them from now on. NULL
     * when not needed. */
    void (*settle)(struct tier *t, const struct index_extent *e, size_t n);
    void (*destroy)(struct tier *t);
};

/* The common head of every tier implementation's struct. */
struct tier {
    const struct tier_ops *ops;
    uint32_t id;                        /* TIER_COLD, TIER_REMOTE */
    char name[TIER_CLASS_NAME_MAX + 1]; /* its own storage class */
    bool reads_wait;                    /* reads wait on a network (remote) */
};

/* Opens the cold tier in 'dir' (created if needed). Returns 0 and sets
 * '*out', or -errno. */
struct tier_cold_config {
    const char *dir;
    uint64_t volume_size;
    uint32_t max_volumes;
    int zstd_level;
    uint32_t block_len; /* plain bytes per block: a power of 2, 4 KiB..16 MiB */
    uint32_t max_pins;
};
int tier_cold_open(const struct tier_cold_config *cfg, struct tier **out);

/* Opens the remote tier of the configuration's remote_tier_* directives
 * (tier_remote.c; nothing is sent but what creating a client needs).
 * Returns 0 and sets '*out', or -errno. */
int tier_remote_open(const struct server *srv, struct tier **out);

/* ---- the tier set (tier.c) ---------------------------------------------- */

struct tier_set;

/* Reader pins held by one request in every tier that has pins. */
struct tier_pins {
    uint64_t pin[TIER_MAX];
    uint32_t held; /* bit i: pin[i] is held */
};

/* Move counters since start (tier_stats_get). */
struct tier_stats {
    uint64_t objects_moved; /* transitions that committed */
    uint64_t bytes_moved;   /* their plain sizes */
    uint64_t errors;        /* moves that failed (retried by a later pass) */
    uint64_t orphans_swept; /* remote objects no record referenced */
};

/*
 * Opens every configured tier of 'srv' (the cold tier always, in
 * cold_dir or DATA/cold). Returns 0 and sets srv->tiers, or -errno
 * (logged). Then, at startup, the caller hands every referenced extent
 * of a tier to tier_mark_used and calls tier_set_ready.
 */
int tier_set_open(struct server *srv);
/* Startup: extent 'e' (TIER_OF(e->flags) != TIER_HOT) is referenced.
 * Returns 0, or -EINVAL (no such tier, or out of range: corruption). */
int tier_mark_used(struct tier_set *ts, const struct index_extent *e);
/* Startup: builds the local tiers' free space. Returns 0 or -errno. */
int tier_set_ready(struct tier_set *ts);
/* Closes every tier; NULL is a no-op. */
void tier_set_close(struct tier_set *ts);

/* The extent flags storage class 'name' maps to: 0 for STANDARD,
 * TIER_FLAGS(...) for a tier class. Returns 0, or -EINVAL (unknown). */
int tier_class_parse(const struct tier_set *ts, struct slice name, uint32_t *flags);
/* The storage class name of extent flags 'flags' ("STANDARD" for 0). */
const char *tier_class_name(const struct tier_set *ts, uint32_t flags);
/* The flags of an object's bytes: its first extent's (0 when inline or empty). */
uint32_t tier_object_flags(const struct index_object *obj);

/* Pins every tier that has pins (before an index lookup). Returns 0 or
 * -EAGAIN (a pin table is full; nothing is held then). */
int tier_pins_take(struct tier_set *ts, struct tier_pins *p);
/* Drops every pin in 'p' except the one of tier 'keep' (TIER_MAX: none). */
void tier_pins_drop(struct tier_set *ts, struct tier_pins *p, uint32_t keep);

/* A reader of bytes [first, first+len) of tiered object 'obj' under the
 * pins 'p' (borrowed until destroy). Returns 0 or -errno. */
int tier_reader_create(struct tier_set *ts, const struct tier_pins *p,
                       const struct index_object *obj, uint64_t first, uint64_t len,
                       struct tier_reader **out);
/* The same for an object whose tier copy holds 'stored_len' bytes other
 * than its size (an encrypted object's packages: sse_stored_size), bytes
 * [first, first+len) of that copy. */
int tier_reader_create_stored(struct tier_set *ts, const struct tier_pins *p,
                              const struct index_object *obj, uint64_t stored_len, uint64_t first,
                              uint64_t len, struct tier_reader **out);
ssize_t tier_reader_read(struct tier_reader *rd, uint64_t pos, void *buf, size_t len);
/* NULL is a no-op. */
void tier_reader_destroy(struct tier_reader *rd);

/* Scrub of tiered object 'obj' under pins 'p' (taken before its lookup):
 * bad blocks (0: clean, or the tier cannot check) or -errno. */
long tier_verify(struct tier_set *ts, const struct tier_pins *p, const struct index_object *obj);

/* Hands extents an index commit freed to the tiers holding them
 * (extents of the hot volumes are the caller's). */
void tier_release(struct tier_set *ts, const struct index_extent *e, size_t n);

/*
 * Moves object 'key' of bucket 'bucket_id' to the class of 'flags' (0:
 * back to the hot volumes) if it still has ETag 'etag'. Returns 1 (moved:
 * '*moved_len' bytes), 0 (already there), -ESTALE
 * (overwritten or moved meanwhile: nothing changed), -ENOENT, or -errno
 * (nothing visible changed; a later pass retries). Blocks (disk and
 * network I/O); run it on a worker or the lifecycle thread.
 */
int tier_move(struct server *srv, uint64_t bucket_id, struct slice key, const uint8_t etag[16],
              uint32_t flags, uint64_t *moved_len);

/* One object of a batch move: in 'bucket_id', 'key', 'etag', 'flags' (key
 * borrowed until the call returns), and in a versioned bucket the version
 * 'version_id' when 'has_version_id' (all zero: null; else the latest);
 * out 'result' and 'moved_len' as tier_move's return value and
 * '*moved_len'. */
struct tier_move_item {
    uint64_t bucket_id;
    struct slice key;
    uint8_t etag[16];
    uint32_t flags;
    bool has_version_id;
    uint8_t version_id[16]; /* INDEX_VERSION_ID_LEN */
    int result;
    uint64_t moved_len;
};
/* Moves 'n' objects as tier_move does each, with one sync per target
 * tier and ONE index transaction for the whole batch (so small objects
 * cost a fraction of an fdatasync each). Each item gets its own result. */
void tier_move_batch(struct server *srv, struct tier_move_item *items, size_t n);

/* Deletes the objects of tiers with a sweep (remote) that no record
 * references: tier copies a crash left unpublished, deletes a crash or
 * an unreachable remote lost. Returns the number deleted or -errno. */
long tier_sweep(struct server *srv);

/* Counters and space (TIER_MAX entries in 'space'; unused tiers zero). */
void tier_stats_get(struct tier_set *ts, struct tier_stats *st, struct tier_space *space);
/* The name of tier 'id' when it is configured, else NULL. */
const char *tier_name(const struct tier_set *ts, uint32_t id);
/* Whether reads of tier 'id' wait on a network (a remote tier), so a
 * response body must read it off the event thread (tier_stream.h). */
bool tier_reads_wait(const struct tier_set *ts, uint32_t id);

/* ---- request helpers (op_tier.c) ---------------------------------------- */

struct s3_req;

/* Internal metadata entry of an upload: the class its object gets. */
#define TIER_META_STORAGE_CLASS "x-shard-storage-class"

/* Reads x-amz-storage-class of 'r' into '*flags' (0: absent or
 * STANDARD). Returns false after answering InvalidStorageClass. */
bool s3_storage_class_from_request(struct s3_req *r, uint32_t *flags);
/* After object r->key of bucket 'bucket_id' was committed with ETag
 * 'etag': moves it to the class of 'flags' (nothing when it is there).
 * A failure is logged and leaves the object where it is, readable.
 * Returns 0 or -errno. Blocks: call it from a worker. */
int s3_storage_class_apply(struct s3_req *r, uint64_t bucket_id, const uint8_t etag[16],
                           uint32_t flags);

#endif
