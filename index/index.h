/*
 * index.h: the metadata index (buckets, objects, listing). The whole
 * interface of index/.
 *
 * The local implementation is LMDB, but no LMDB type appears here: a
 * distributed ordered KV must be able to replace it without touching
 * server/. All values handed out are copied into the caller's arena; none
 * points into the store. Functions return 0 or a negative errno.
 * Thread-safety: every function may be called from any thread; readers
 * never wait for the writer (MVCC). index_commit() calls are serialized
 * internally (one writer at a time).
 */
#ifndef SHARD_INDEX_H
#define SHARD_INDEX_H

#include "common/common.h"

#include <stdbool.h>
#include <stdint.h>

struct index;

/* S3 allows keys up to 1024 bytes; bucket names up to 63. */
#define INDEX_MAX_KEY 1024
#define INDEX_MAX_BUCKET 63

/*
 * Opens (creating if needed) the index in directory 'dir' with a maximum
 * size of 'map_size' bytes. Returns 0 and sets '*out', or -errno.
 * 'is_nosync': skip fsync on commit (tests only; never in production).
 */
int index_open(struct index **out, const char *dir, uint64_t map_size, bool is_nosync);
/* Closes the index; NULL is a no-op. No call may be in progress. */
void index_close(struct index *ix);

/* ---- buckets ------------------------------------------------------------ */

struct index_bucket {
    char name[INDEX_MAX_BUCKET + 1];
    uint64_t id; /* never reused, > 0 */
    int64_t created_ns;
    char owner[72];      /* owner user id (NUL-terminated, up to 64 hex chars, may be empty:
                            buckets made before users existed, owned by root) */
    bool is_public_read; /* anonymous GET/HEAD/List allowed (canned ACL public-read) */
};

/* Creates bucket 'name' (validated by the caller) owned by 'owner'.
 * Returns 0 and fills 'out' (may be NULL), or -EEXIST (out filled with the
 * existing bucket), or -ENOSPC (index full). -EINVAL when 'name' is empty
 * or longer than INDEX_MAX_BUCKET, or 'owner' does not fit 'owner[]'. */
int index_bucket_create(struct index *ix, struct slice name, const char *owner, int64_t now_ns,
                        struct index_bucket *out);
/* Returns 0 and fills 'out', or -ENOENT. */
int index_bucket_get(struct index *ix, struct slice name, struct index_bucket *out);
/* Sets or clears the public-read flag of bucket 'name'. Returns 0 or -ENOENT. */
int index_bucket_set_public(struct index *ix, struct slice name, bool is_public_read);
/* Deletes bucket 'name' when it is empty and still the bucket of id
 * 'expected_id' (the one the caller authorized), checked and deleted in one
 * write transaction. Returns 0, -ENOENT (no bucket of that name), -ESTALE
 * (the name now belongs to a bucket of another id: nothing is deleted),
 * -ENOTEMPTY (objects remain) or -EBUSY (no object, but multipart uploads
 * in progress remain: the caller may abort them and try again). */
int index_bucket_delete(struct index *ix, struct slice name, uint64_t expected_id);
/* Calls 'fn' for each bucket in name order; stops early when fn returns non-zero.
 * 'fn' runs inside a read transaction (a snapshot); it may call index/
 * functions, including index_commit, which the snapshot will not see. */
typedef int (*index_bucket_fn)(void *ctx, const struct index_bucket *b);
int index_bucket_list(struct index *ix, index_bucket_fn fn, void *ctx);

/* ---- objects ------------------------------------------------------------ */

/* A run of bytes in a storage volume. Mirrors struct storage_extent;
 * server/ converts between the two. */
struct index_extent {
    uint32_t volume;
    uint32_t flags;  /* reserved, 0 */
    uint64_t offset; /* bytes into the volume */
    uint64_t len;    /* logical bytes of object data in this extent */
};

/* Version ids are 16 raw bytes (32 lower-case hex chars in the API): the
 * commit time in ns (8, BE) then a sequence number (8, BE), so byte order
 * is commit order within a key. The all-zero id names the "null" version
 * in calls that take an id. */
#define INDEX_VERSION_ID_LEN 16
#define INDEX_VERSION_HAS_ID 1u /* the record is a version of a versioned bucket */
#define INDEX_VERSION_NULL                                                                         \
    2u                          /* ... whose id is "null" (written while unversioned or            \
                                   suspended) */
#define INDEX_VERSION_MARKER 4u /* ... a delete marker (no data) */

/* Object Lock retention modes (stable on disk). */
enum index_lock_mode {
    INDEX_LOCK_NONE = 0,
    INDEX_LOCK_GOVERNANCE = 1,
    INDEX_LOCK_COMPLIANCE = 2,
};

struct index_object {
    uint64_t size;
    int64_t mtime_ns;
    uint8_t etag[16];     /* MD5 (single PUT) or MD5 of part MD5s (multipart) */
    uint32_t parts_count; /* 0 for a single PUT */
    uint32_t n_extents;
    const struct index_extent *extents;
    /* Opaque to index/: the storage block checksums (storage/ format). */
    const uint8_t *sums;
    size_t sums_len;
    /* Opaque to index/: metadata encoded by server/ (content-type, user
     * metadata, checksums, part sizes...). */
    const uint8_t *meta;
    size_t meta_len;
    /* Small objects may be stored inline instead of in extents (n_extents 0). */
    const uint8_t *inline_data;
    size_t inline_len;
    /* Versioning (version.c). In an unversioned bucket all zero. In a
     * versioned one index/ assigns 'version_flags' and 'version_id' on
     * every write (what the caller sets is ignored) and fills them on
     * reads; the Object Lock fields are the caller's on a PUT. */
    uint32_t version_flags;                   /* INDEX_VERSION_* */
    uint8_t version_id[INDEX_VERSION_ID_LEN]; /* raw; time-ordered */
    int64_t retain_until_ns;                  /* Object Lock retention; 0: none */
    uint8_t lock_mode;                        /* INDEX_LOCK_* */
    bool has_legal_hold;
};

/* Looks up 'key' in bucket 'bucket_id'. Returns 0 and fills 'out' (all
 * pointers copied into 'a'), or -ENOENT. */
int index_object_get(struct index *ix, uint64_t bucket_id, struct slice key, struct arena *a,
                     struct index_object *out);

/* ---- write batches (group commit) -------------------------------------- */

#define INDEX_SET_RETENTION 1u
#define INDEX_SET_LEGAL_HOLD 2u

enum index_op_kind {
    INDEX_OP_PUT,             /* insert or replace the object */
    INDEX_OP_DELETE,          /* remove the object if present (absent is not an error) */
    INDEX_OP_UPLOAD_CREATE,   /* start a multipart upload ('upload') */
    INDEX_OP_PART_PUT,        /* add or replace a part ('upload_id', 'part') */
    INDEX_OP_UPLOAD_ABORT,    /* drop an upload and all its parts ('upload_id') */
    INDEX_OP_UPLOAD_COMPLETE, /* publish 'object' made of 'parts_used' ('upload_id') */
    INDEX_OP_MEMBERS_PUT,     /* attach 'members' to the object at 'key' (index_member below) */
    INDEX_OP_SET_META,        /* replace the metadata blob of an object (below) */
    INDEX_OP_SET_LOCK,        /* change retention or legal hold of a version (below) */
    INDEX_OP_SET_EXTENTS,     /* move an object's bytes: replace its extents (below) */
};

/* ---- multipart uploads -------------------------------------------------- */

/* Upload ids are 32 lower-case hex chars chosen by the caller; the first 16
 * encode the initiation time (big-endian ns), so id order is initiation order. */
#define INDEX_UPLOAD_ID_LEN 32
#define INDEX_MAX_PARTS 10000

struct index_upload {
    char upload_id[INDEX_UPLOAD_ID_LEN + 1];
    uint64_t bucket_id;
    struct slice key; /* the object key (in the arena when read back) */
    int64_t initiated_ns;
    /* Opaque to index/: metadata for the final object (content-type, user
     * metadata, checksum algorithm...), encoded by server/. */
    const uint8_t *meta;
    size_t meta_len;
};

struct index_part {
    uint32_t number; /* 1..INDEX_MAX_PARTS */
    uint64_t size;
    int64_t mtime_ns;
    uint8_t etag[16]; /* MD5 of the part */
    uint32_t n_extents;
    const struct index_extent *extents;
    const uint8_t *sums; /* storage checksums of those extents */
    size_t sums_len;
    const uint8_t *meta; /* opaque to index/: the part's checksum */
    size_t meta_len;
};

/* A part named in CompleteMultipartUpload, with the ETag the caller saw. */
struct index_part_ref {
    uint32_t number;
    uint8_t etag[16];
};

/*
 * One mutation inside a batch. Conditions are checked inside the write
 * transaction, so conditional writes are atomic.
 */
struct index_op {
    enum index_op_kind kind;
    uint64_t bucket_id;
    struct slice key;
    const struct index_object *object; /* INDEX_OP_PUT, INDEX_OP_UPLOAD_COMPLETE */
    /* Multipart ops:
     *  UPLOAD_CREATE: 'upload' (its bucket_id must exist: else -ENOENT;
     *    an existing id: -EEXIST).
     *  PART_PUT: 'upload_id' + 'part'; -ENOENT when the upload does not
     *    exist (NoSuchUpload); freed = the replaced part's extents.
     *  UPLOAD_ABORT: 'upload_id'; -ENOENT when absent; freed = every part's
     *    extents.
     *  UPLOAD_COMPLETE: 'upload_id', 'bucket_id', 'key', 'object' (the
     *    caller joined the parts' extents and sums in order) and
     *    'parts_used'. -ENOENT when the upload is gone; -ESTALE when a used
     *    part no longer exists with that etag (it was replaced meanwhile);
     *    the PUT conditions (if_none_match/has_if_match) apply to the key.
     *    On success the object is put, the upload and ALL its parts are
     *    removed, and freed = extents of the parts not used + the replaced
     *    object's extents (the used parts' extents now belong to the object).
     *    'parts_used' numbers must be 1..INDEX_MAX_PARTS with none twice
     *    (-EINVAL); the order is the caller's (S3 wants ascending).
     *  All four: an 'upload_id' that is not INDEX_UPLOAD_ID_LEN lower-case
     *    hex chars gives -EINVAL. COMPLETE requires 'bucket_id' and 'key' to
     *    be the upload's (-EINVAL otherwise); CREATE, PART_PUT and ABORT
     *    check them the same way only when set (non-zero / non-empty).
     *    CREATE reads the id, bucket and key from 'upload'. */
    const struct index_upload *upload;
    const char *upload_id; /* NUL-terminated, INDEX_UPLOAD_ID_LEN chars */
    const struct index_part *part;
    const struct index_part_ref *parts_used;
    uint32_t n_parts_used;
    bool if_none_match; /* fail with -EEXIST when the key exists */
    bool has_if_match;  /* fail with -ESTALE unless the current etag matches */
    /* More conditions on the current object (PUT, DELETE, UPLOAD_COMPLETE),
     * checked before has_if_match: */
    bool if_exists;              /* -ENODATA when the key is absent */
    bool has_if_none_match_etag; /* -EEXIST when the current etag is this one */
    uint8_t if_none_match_etag[16];
    bool has_if_size; /* -ESTALE when the object exists with another size */
    uint64_t if_size;
    bool has_if_mtime_s; /* -ESTALE when it exists with another mtime (in seconds) */
    int64_t if_mtime_s;
    /* INDEX_OP_PUT of a copy that shares the source's extents instead of
     * copying bytes: 'object' holds exactly the extents of the object
     * 'share_key' in 'share_bucket_id'. Checked inside the transaction: if
     * that object is gone or holds other extents now, -ESTALE and nothing
     * changes; else each extent gains a holder, and deleting either object
     * later frees nothing the other still holds. */
    uint64_t share_bucket_id;
    struct slice share_key;
    uint8_t if_match_etag[16];
    /* The tar member index of the object (see "tar member indexes"):
     *  PUT, UPLOAD_COMPLETE: written with the object when non-NULL. Every
     *    PUT, UPLOAD_COMPLETE and DELETE that applies drops the index the
     *    replaced or deleted version had, in the same transaction.
     *  MEMBERS_PUT: 'bucket_id', 'key', 'if_match_etag' (the etag of the
     *    object the index was built from) and 'members': -ESTALE when the
     *    object is gone or has another etag now (nothing is written). */
    const struct index_members *members;
    /* UPLOAD_COMPLETE: what the completion answered, opaque to index/ (may
     * be empty): kept with the bucket id and key under the upload id in
     * the same transaction, so a client that lost the answer and completes
     * again gets it back (index_upload_done_get). */
    const uint8_t *done_result;
    size_t done_result_len;
    /* INDEX_OP_SET_META: rewrites the record of 'key' with the metadata
     * blob of 'object' (meta, meta_len) and everything else as stored:
     * size, ETag, mtime, extents, block sums and inline data stay, so no
     * data moves and nothing is freed. 'object' names the version the
     * caller read: unless the stored object still has object->etag and
     * object->mtime_ns, -ESTALE and nothing changes (a concurrent
     * overwrite is never clobbered); an absent key is -ENOENT. Only
     * 'object's etag, mtime_ns, meta and meta_len are read. */
    /* Versions (version.c; see "versions" below). In a versioned bucket
     * a PUT or UPLOAD_COMPLETE adds a version and a DELETE without
     * 'has_version_id' adds a delete marker; while suspended both replace
     * the "null" version instead. 'has_version_id' with 'version_id'
     * (all zero: the null version) makes DELETE remove that one version
     * for good (absent: result 0, nothing happens; freed = its extents
     * unless another version or copy holds them) and SET_META and
     * SET_LOCK act on that version instead of the latest. In an
     * unversioned bucket only the null version exists. 'now_ns' is the
     * clock Object Lock retention is compared with: removing a version
     * under retention (COMPLIANCE, or GOVERNANCE without
     * 'bypass_governance') or a legal hold gives -EACCES.
     * 'share_version_id' (with 'has_share_version_id') names the version
     * of 'share_key' a shared copy reads. */
    bool has_version_id;
    uint8_t version_id[INDEX_VERSION_ID_LEN];
    bool has_share_version_id;
    uint8_t share_version_id[INDEX_VERSION_ID_LEN];
    int64_t now_ns;
    bool bypass_governance;
    /* INDEX_OP_SET_LOCK: 'lock_what' (INDEX_SET_RETENTION and/or
     * INDEX_SET_LEGAL_HOLD) says which of object->retain_until_ns,
     * lock_mode and has_legal_hold to store on the version. A COMPLIANCE
     * retention in force can only be kept or extended, a GOVERNANCE one
     * shortened, removed or changed only with 'bypass_governance':
     * otherwise -EACCES. A delete marker or absent version: -ENOENT;
     * an unversioned bucket: -EINVAL. */
    unsigned lock_what;
    /* INDEX_OP_SET_EXTENTS: rewrites the record of 'key' with the
     * extents and block sums of 'object' (inline_data too, normally
     * none) and everything else as stored (size, ETag, mtime, metadata),
     * only if the stored object still has object->etag, object->mtime_ns
     * and exactly the 'n_expect_extents' extents 'expect_extents' (flags
     * included) and 'expect_inline_len' inline bytes: else -ESTALE and
     * nothing changes (an overwrite or another move wins); absent or a
     * delete marker: -ENOENT. In a bucket that versioning was ever turned
     * on for, the version 'version_id' when 'has_version_id' (all zero:
     * null), else the latest, is rewritten, with its "objects" copy when
     * it is the latest (result_version_* name it). freed = the old
     * extents no other record holds. The new extents must be held by no
     * record yet. */
    const struct index_extent *expect_extents;
    uint32_t n_expect_extents;
    size_t expect_inline_len;
    /* Results, filled by index_commit: */
    int result; /* 0, -ENOENT (bucket gone or id 0), -EEXIST, -ESTALE,
                   -ENOSPC, -EACCES (Object Lock) */
    /* The version the op made (PUT, UPLOAD_COMPLETE, DELETE adding a
     * marker) or removed (DELETE with an id): INDEX_VERSION_* flags (0 in
     * an unversioned bucket, or when nothing was removed) and its id. */
    uint32_t result_version_flags;
    uint8_t result_version_id[INDEX_VERSION_ID_LEN];
    /* (has_if_match on an absent key gives -ESTALE; an empty or too long
     * key, a NULL 'arena', or a PUT without a consistent 'object' gives
     * -EINVAL; -EIO marks a 128-bit hash collision between two keys of
     * more than 480 bytes, which is not expected to ever happen.) */
    /* The extents no longer referenced after this op (the replaced or
     * deleted version), copied into 'arena'; the caller frees them in
     * storage after the commit. 'arena' is required (NULL: -EINVAL). */
    struct arena *arena;
    struct index_extent *freed;
    uint32_t n_freed;
};

/*
 * Applies 'ops' in ONE write transaction and one durable commit. An op
 * whose condition fails (or whose bucket does not exist) is skipped with
 * its 'result' set; the others still apply. Returns 0 when the transaction
 * committed (check each op's result), or -errno when nothing was applied
 * (-ENOSPC when the index is full, -EIO); then every op's 'result' holds
 * that error and no op reports freed extents.
 */
int index_commit(struct index *ix, struct index_op *ops, size_t n_ops);

/* Reads an upload. Returns 0 (copied into 'a') or -ENOENT (also for a
 * malformed id). */
int index_upload_get(struct index *ix, const char *upload_id, struct arena *a,
                     struct index_upload *out);

/* The record of a completed upload: kept for at most
 * INDEX_UPLOADS_DONE_TTL_NS after its completion and for the latest
 * INDEX_UPLOADS_DONE_MAX completions (each completion drops up to two
 * records of the earliest-initiated uploads past either bound). */
#define INDEX_UPLOADS_DONE_MAX 10000
#define INDEX_UPLOADS_DONE_TTL_NS (24ll * 3600 * 1000000000)
#define INDEX_UPLOAD_DONE_RESULT_MAX 4096

struct index_upload_done {
    uint64_t bucket_id;
    struct slice key; /* in the arena */
    int64_t completed_ns;
    const uint8_t *result; /* op->done_result as committed (in the arena) */
    size_t result_len;
    uint32_t version_flags; /* the version the completion wrote (0: none) */
    uint8_t version_id[INDEX_VERSION_ID_LEN];
};

/* Reads the record of completed upload 'upload_id'. Returns 0 (copied
 * into 'a'), or -ENOENT (none kept, or a malformed id). */
int index_upload_done_get(struct index *ix, const char *upload_id, struct arena *a,
                          struct index_upload_done *out);

/* Lists the parts of 'upload_id' with number > 'after', at most 'max'
 * (1..INDEX_MAX_PARTS; larger is clamped, 0 lists nothing and is not
 * truncated), in number order, copied into 'a'. '*is_truncated' says
 * whether more follow. Returns 0 or -ENOENT (no such upload, or a
 * malformed id). */
int index_part_list(struct index *ix, const char *upload_id, uint32_t after, uint32_t max,
                    struct arena *a, struct index_part **parts, uint32_t *n_parts,
                    bool *is_truncated);

struct index_upload_list_params {
    uint64_t bucket_id;
    struct slice prefix;
    struct slice delimiter;
    struct slice key_marker;       /* uploads with key > marker, or key == marker and */
    struct slice upload_id_marker; /*   upload_id > this (only when key_marker is set;
                                        when this is empty, only keys > key_marker, as
                                        in S3). A key_marker that equals or extends a
                                        common prefix skips that prefix (as start_after
                                        does in index_object_list). */
    uint32_t max_uploads;          /* 0..1000 (larger is clamped; 0 returns nothing,
                                      not truncated) */
};

struct index_upload_list_result {
    struct index_upload *uploads; /* in (key, upload_id) order, in the arena */
    uint32_t n_uploads;
    struct slice *prefixes; /* common prefixes when a delimiter is given */
    uint32_t n_prefixes;
    bool is_truncated;
    /* Set only when truncated (empty otherwise): the last key or common
     * prefix returned, and the last upload id (empty when a prefix came
     * last). Pass them as the next page's markers. */
    struct slice next_key_marker;
    struct slice next_upload_id_marker;
};

/* ListMultipartUploads with S3's semantics (uploads + common prefixes count
 * against max_uploads). Starts with one seek to the markers and skips each
 * common prefix with one seek, so the cost is proportional to the page
 * returned, however many uploads the bucket has. Returns 0 or -errno. */
int index_upload_list(struct index *ix, const struct index_upload_list_params *p, struct arena *a,
                      struct index_upload_list_result *out);

/* ---- listing ------------------------------------------------------------ */

struct index_list_params {
    uint64_t bucket_id;
    struct slice prefix;
    struct slice delimiter;   /* any string; empty = none */
    struct slice start_after; /* exclusive: list keys > start_after; when it
                                 equals/extends a common prefix that prefix is skipped */
    uint32_t max_keys;        /* 0..1000 (larger is clamped to 1000); keys +
                                 common prefixes returned <= max_keys; 0
                                 returns nothing, not truncated */
};

struct index_list_entry {
    bool is_prefix;   /* a CommonPrefix (only 'key' is set) */
    struct slice key; /* in the arena */
    uint64_t size;
    int64_t mtime_ns;
    uint8_t etag[16];
    uint32_t parts_count;
    uint32_t flags; /* the first extent's flags (its tier: server/tier.h); 0 when none */
};

struct index_list_result {
    struct index_list_entry *entries; /* in the arena, in S3 order */
    uint32_t n_entries;
    bool is_truncated;
    struct slice next_marker; /* the last key or prefix returned when truncated
                                 (empty otherwise); pass it as the next
                                 page's start_after */
};

/*
 * Lists in S3 order with S3's prefix/delimiter semantics. A delimiter
 * listing skips each common prefix with one seek, so the cost is
 * proportional to the page returned. Keys of any length up to
 * INDEX_MAX_KEY list in byte order, also many long keys sharing their
 * first 480 bytes, at the same cost. Returns 0 or -errno.
 */
int index_object_list(struct index *ix, const struct index_list_params *p, struct arena *a,
                      struct index_list_result *out);

/* Number of objects in a bucket (admin/metrics; O(n) allowed). */
int index_bucket_count(struct index *ix, uint64_t bucket_id, uint64_t *n_objects,
                       uint64_t *n_bytes);
/* The same, reading at most 'max_objects' records in one read transaction
 * (the console's bounded view): '*is_truncated' (may be NULL) tells whether
 * the bucket holds more, and the counts are then those of the first
 * 'max_objects' keys. Returns 0 or -errno. */
int index_bucket_usage(struct index *ix, uint64_t bucket_id, uint64_t max_objects,
                       uint64_t *n_objects, uint64_t *n_bytes, bool *is_truncated);

/* ---- versions (version.c) ------------------------------------------------ */

/* A bucket's versioning state (stable on disk). A bucket starts OFF and
 * never returns to it. */
enum index_versioning {
    INDEX_VERSIONING_OFF = 0,
    INDEX_VERSIONING_ENABLED = 1,
    INDEX_VERSIONING_SUSPENDED = 2,
};

/* Reads the versioning state of bucket 'bucket_id' ('*has_object_lock':
 * Object Lock is enabled). A bucket never configured is OFF. Returns 0 or
 * -errno. */
int index_versioning_get(struct index *ix, uint64_t bucket_id, enum index_versioning *state,
                         bool *has_object_lock);
/*
 * Sets the versioning state of bucket 'bucket_id' to 'state' (ENABLED or
 * SUSPENDED), and turns Object Lock on when 'enable_object_lock' (it
 * stays on). Leaving OFF makes every existing object the "null" version
 * of its key, in the same transaction (once; it costs one write per
 * object). Returns 0, -ENOENT (no such bucket), -EINVAL (state OFF, or
 * Object Lock on a bucket that is not ENABLED by this call or before),
 * -EPERM (suspending a bucket with Object Lock) or -errno.
 */
int index_versioning_put(struct index *ix, uint64_t bucket_id, enum index_versioning state,
                         bool enable_object_lock);

/*
 * Reads version 'version_id' (all zero: the "null" version; NULL: the
 * newest version, which may be a delete marker) of 'key' in bucket
 * 'bucket_id' into 'a'. A bucket that was never versioned has only its
 * null versions (the objects). Returns 0, -ENOENT or -errno. A delete
 * marker comes back with INDEX_VERSION_MARKER set and no data.
 */
int index_object_version_get(struct index *ix, uint64_t bucket_id, struct slice key,
                             const uint8_t *version_id, struct arena *a, struct index_object *out);

struct index_version_list_params {
    uint64_t bucket_id;
    struct slice prefix;
    struct slice delimiter;
    struct slice key_marker;                         /* after this key's versions, or ... */
    bool has_version_id_marker;                      /* ... after this version of key_marker */
    uint8_t version_id_marker[INDEX_VERSION_ID_LEN]; /* all zero: "null" */
    uint32_t max_keys; /* 0..1000 (clamped); versions + markers + prefixes */
};

struct index_version_entry {
    bool is_prefix;   /* a CommonPrefix: only 'key' is set */
    struct slice key; /* in the arena */
    bool is_latest;
    uint32_t version_flags; /* INDEX_VERSION_* */
    uint8_t version_id[INDEX_VERSION_ID_LEN];
    uint64_t size;
    int64_t mtime_ns;
    uint8_t etag[16];
    uint32_t parts_count;
    uint32_t flags; /* the first extent's flags (its tier: server/tier.h); 0 when none */
};

struct index_version_list_result {
    struct index_version_entry *entries; /* in the arena: key order, newest first */
    uint32_t n_entries;
    bool is_truncated;
    /* When truncated: the last entry returned (key, and its version when
     * it is a version: 'next_has_version_id'). */
    struct slice next_key_marker;
    bool next_has_version_id;
    uint32_t next_version_flags;
    uint8_t next_version_id[INDEX_VERSION_ID_LEN];
};

/*
 * ListObjectVersions of a versioned bucket (one that was never versioned
 * has no versions here: list its objects instead). Keys in byte order
 * (keys whose escaped form exceeds 464 bytes and shares those bytes with
 * another key's list in a fixed but arbitrary order among themselves),
 * newest version first. One seek to the markers and one per common
 * prefix skipped: O(page). Returns 0 or -errno.
 */
int index_version_list(struct index *ix, const struct index_version_list_params *p, struct arena *a,
                       struct index_version_list_result *out);

/* ---- tar member indexes (member.c) --------------------------------------- */

/* The member index of a tar object: each regular file of the archive with
 * the offset of its data in the object. It belongs to one version of one
 * object (the etag it was built from) and is dropped with that version. */
#define INDEX_MEMBER_NAME_MAX 4096
#define INDEX_MEMBERS_MAX 1000000

struct index_member {
    struct slice name; /* 1..INDEX_MEMBER_NAME_MAX bytes (in the arena when read) */
    uint64_t offset;   /* of the member's data in the object */
    uint64_t size;
    uint32_t mode;
    int64_t mtime_s;
};

struct index_members {
    bool is_archive;                    /* false: the object is known not to be a readable tar
                                           ('members' unused); member requests say so */
    const struct index_member *members; /* archive order */
    uint32_t n_members;                 /* 0..INDEX_MEMBERS_MAX */
};

/*
 * Finds member 'name' (the last one of that name, as tar extracts) in the
 * index of object 'key' of bucket 'bucket_id' built from the version with
 * etag 'etag'. Returns 0 and fills 'out' (name copied into 'a'), -ENOENT
 * (an archive without that member), -ENODATA (no index for that version:
 * build one), -EILSEQ (that version is not a readable tar), or -errno.
 */
int index_member_get(struct index *ix, uint64_t bucket_id, struct slice key, const uint8_t etag[16],
                     struct slice name, struct arena *a, struct index_member *out);

/*
 * Lists up to 'max' (1..INDEX_MEMBERS_MAX) members of that index in
 * archive order, after member 'marker' (empty: from the first; a name
 * present several times: after its last occurrence), copied into 'a'.
 * '*is_truncated' says whether more follow. Costs O(max + log n). Returns
 * 0, -ENOENT (a marker that is no member), -ENODATA, -EILSEQ (as
 * index_member_get) or -errno.
 */
int index_member_list(struct index *ix, uint64_t bucket_id, struct slice key,
                      const uint8_t etag[16], struct slice marker, uint32_t max, struct arena *a,
                      struct index_member **out, uint32_t *n_out, bool *is_truncated);

/* Number of member index records (heads) in the whole index, for tests and
 * metrics (one seek per index). Returns 0 or -errno. */
int index_member_count(struct index *ix, uint64_t *n_indexes);

/* ---- space accounting --------------------------------------------------- */

/* Calls 'fn' for every extent referenced by any record in the index
 * (objects AND multipart parts), each exactly once even when several
 * objects share it (CopyObject), so the storage allocator can rebuild its
 * free map at startup (free space is derived, never stored, so it cannot
 * leak). Returns 0 or -errno. */
typedef void (*index_extent_fn)(void *ctx, const struct index_extent *e);
int index_extents_scan(struct index *ix, index_extent_fn fn, void *ctx);

/* The index's space: the map's size and the bytes its pages use (the
 * high-water mark of the file, free pages inside it included). */
struct index_stats {
    uint64_t map_size_bytes;
    uint64_t used_bytes;
};
/* Fills '*out'. Returns 0 or -errno. */
int index_stats_get(struct index *ix, struct index_stats *out);

/* How many extents are currently held by more than one object. */
uint64_t index_shared_extents(struct index *ix);

/* Calls 'fn' for every object (bucket id, key, record copied into a
 * per-call arena that is cleared after fn returns), for scrub. Stops when
 * fn returns non-zero. Returns 0 or -errno.
 * Order: by bucket id, then by stored key (byte order, except that keys
 * longer than 480 bytes sharing their first 480 follow hash order). Each
 * object is read in its own snapshot and 'fn' runs outside any
 * transaction (it may take long and call any index/ function): every
 * object present for the whole scan is visited exactly once; one written
 * or deleted during the scan may or may not be. */
typedef int (*index_object_fn)(void *ctx, uint64_t bucket_id, struct slice key,
                               const struct index_object *obj);
int index_object_scan(struct index *ix, index_object_fn fn, void *ctx);

/* ---- users, access keys and grants (user.c) ----------------------------- */

#define INDEX_USER_ID_LEN 64 /* lower-case hex chars */
#define INDEX_USER_NAME_MAX 64
#define INDEX_USER_EMAIL_MAX 128
#define INDEX_ACCESS_KEY_MAX 128
#define INDEX_SECRET_BLOB_MAX 512 /* an encrypted secret, opaque to index/ */
#define INDEX_GRANT_PREFIX_MAX 512

struct index_user {
    char id[INDEX_USER_ID_LEN + 1]; /* chosen by the caller, never reused */
    char name[INDEX_USER_NAME_MAX + 1];
    bool is_admin; /* may use the admin API */
    int64_t created_ns;
    char email[INDEX_USER_EMAIL_MAX + 1]; /* for ACL grants by emailAddress; "" none */
};

/* Creates user 'u'. Returns 0, -EEXIST (name or id taken) or -EINVAL (empty
 * name, id not INDEX_USER_ID_LEN chars). */
int index_user_create(struct index *ix, const struct index_user *u);
/* Looks a user up by name or by id. Returns 0 and fills 'out', or -ENOENT. */
int index_user_get(struct index *ix, struct slice name, struct index_user *out);
int index_user_get_by_id(struct index *ix, struct slice id, struct index_user *out);
/* Looks a user up by e-mail address (ASCII case-insensitive; a scan of the
 * users, who are few). Returns 0 and fills 'out', or -ENOENT. */
int index_user_get_by_email(struct index *ix, struct slice email, struct index_user *out);
/* Deletes user 'name' with all its access keys and grants, in one
 * transaction (its keys stop working at the next request). Buckets it owns
 * stay (owned by the id; root can still reach them). Returns 0 or -ENOENT. */
int index_user_delete(struct index *ix, struct slice name);
/* Calls 'fn' for every user in name order (stops when fn returns non-zero).
 * 'fn' runs inside a read snapshot and must not write to the index. */
typedef int (*index_user_fn)(void *ctx, const struct index_user *u);
int index_user_list(struct index *ix, index_user_fn fn, void *ctx);

struct index_key {
    char access_key[INDEX_ACCESS_KEY_MAX + 1];
    char user_id[INDEX_USER_ID_LEN + 1];
    bool is_read_only; /* the key may only read */
    int64_t created_ns;
    /* The secret, encrypted by the caller (index/ never sees it in clear). */
    uint8_t secret_blob[INDEX_SECRET_BLOB_MAX];
    size_t secret_blob_len;
};

/* Adds access key 'k' for its user. Returns 0, -EEXIST (access key taken),
 * -ENOENT (no such user id) or -EINVAL (empty key, sizes). */
int index_key_create(struct index *ix, const struct index_key *k);
/* Returns 0 and fills 'out', or -ENOENT. */
int index_key_get(struct index *ix, struct slice access_key, struct index_key *out);
/* Removes an access key. Returns 0 or -ENOENT. */
int index_key_delete(struct index *ix, struct slice access_key);
/* Calls 'fn' for each key (of user 'user_id', or all when it is empty), in
 * access-key order, inside a read snapshot (fn must not write). */
typedef int (*index_key_fn)(void *ctx, const struct index_key *k);
int index_key_list(struct index *ix, struct slice user_id, index_key_fn fn, void *ctx);

/* Grant levels: each includes the ones below it. */
enum index_grant_level {
    INDEX_GRANT_NONE = 0,
    INDEX_GRANT_READ = 1,  /* GET, HEAD, List */
    INDEX_GRANT_WRITE = 2, /* + PUT, DELETE, multipart */
    INDEX_GRANT_ADMIN = 3, /* + bucket ACL, delete bucket */
};

struct index_grant {
    char user_id[INDEX_USER_ID_LEN + 1];
    uint64_t bucket_id;
    char bucket[INDEX_MAX_BUCKET + 1]; /* filled by get/list */
    enum index_grant_level level;
    char prefix[INDEX_GRANT_PREFIX_MAX + 1]; /* empty: the whole bucket */
};

/* Grants (or replaces the grant of) user 'g->user_id' on bucket 'bucket'.
 * Grants follow the bucket id, so a bucket deleted and created again under
 * the same name does not inherit them. Returns 0, -ENOENT (no such user or
 * bucket) or -EINVAL. */
int index_grant_put(struct index *ix, const struct index_grant *g, struct slice bucket);
/* The grant of 'user_id' on bucket 'bucket_id'. Returns 0 or -ENOENT. */
int index_grant_get(struct index *ix, struct slice user_id, uint64_t bucket_id,
                    struct index_grant *out);
/* Removes a grant. Returns 0 or -ENOENT. */
int index_grant_delete(struct index *ix, struct slice user_id, uint64_t bucket_id);
/* Calls 'fn' for each grant of 'user_id' (all users when empty) whose bucket
 * still exists, with 'bucket' filled in; read snapshot, fn must not write. */
typedef int (*index_grant_fn)(void *ctx, const struct index_grant *g);
int index_grant_list(struct index *ix, struct slice user_id, index_grant_fn fn, void *ctx);

/* ---- per-bucket configuration (bucket_config.c) ------------------------ */

/* What a stored configuration is; the value is opaque to index/ (server/
 * formats it). Values are stable on disk: never renumber. */
enum index_bucket_config_kind {
    INDEX_BUCKET_CONFIG_LIFECYCLE = 1,
    INDEX_BUCKET_CONFIG_TAGGING = 2,
    INDEX_BUCKET_CONFIG_ENCRYPTION = 7, /* server/sse_bucket.c's default encryption */
    INDEX_BUCKET_CONFIG_CORS = 10,      /* numbered apart from other kinds being added meanwhile */
    INDEX_BUCKET_CONFIG_LOGGING = 11,
    /* Written by index_versioning_put only (2 bytes: state, flags bit 0
     * Object Lock): never put it with index_bucket_config_put. */
    INDEX_BUCKET_CONFIG_VERSIONING = 12,
    INDEX_BUCKET_CONFIG_OBJECT_LOCK = 13, /* the default retention (server/) */
};
/* Largest configuration value (a 1,000-rule lifecycle fits easily). */
#define INDEX_BUCKET_CONFIG_MAX (4u << 20)

/* Stores (or replaces) configuration 'kind' of bucket 'bucket_id': 'len'
 * bytes at 'val' (copied). Durable when it returns 0. Returns 0, -ENOENT
 * (no bucket with that id: checked in the same transaction, so a config
 * never outlives its bucket), -EINVAL (kind 0, len 0 or over
 * INDEX_BUCKET_CONFIG_MAX) or -errno. */
int index_bucket_config_put(struct index *ix, uint64_t bucket_id,
                            enum index_bucket_config_kind kind, const void *val, size_t len);
/* Reads configuration 'kind' of bucket 'bucket_id' into 'a' ('*val',
 * '*len'). Returns 0 or -ENOENT (none set). */
int index_bucket_config_get(struct index *ix, uint64_t bucket_id,
                            enum index_bucket_config_kind kind, struct arena *a, const void **val,
                            size_t *len);
/* Removes configuration 'kind' of bucket 'bucket_id'. Returns 0 or
 * -ENOENT (none was set). A deleted bucket loses all its configurations
 * with it (index_bucket_delete). */
int index_bucket_config_delete(struct index *ix, uint64_t bucket_id,
                               enum index_bucket_config_kind kind);
/* Calls 'fn' for every bucket that has configuration 'kind', in bucket id
 * order, with the value copied into a per-call arena cleared after fn
 * returns. 'fn' runs inside a read snapshot and must not write to the
 * index; it stops the walk by returning non-zero. Returns 0 or -errno. */
typedef int (*index_bucket_config_fn)(void *ctx, uint64_t bucket_id, const void *val, size_t len);
int index_bucket_config_list(struct index *ix, enum index_bucket_config_kind kind,
                             index_bucket_config_fn fn, void *ctx);

#endif
