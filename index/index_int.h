/*
 * index_int.h: private to index/. The LMDB handles behind struct index,
 * the read-transaction pool, error mapping, the object record codec, the
 * helpers the write batch shares with multipart uploads, and test-only
 * counters. Nothing outside index/ (and its unit tests)
 * includes this file; <lmdb.h> stops here.
 */
#ifndef SHARD_INDEX_INT_H
#define SHARD_INDEX_INT_H

#include "index/index.h"
#include "index/keys.h"

#include <lmdb.h>
#include <pthread.h>

struct index {
    MDB_env *env;
    MDB_dbi dbi_buckets;
    MDB_dbi dbi_bucketids;
    MDB_dbi dbi_objects;
    MDB_dbi dbi_meta;
    MDB_dbi dbi_uploads;
    MDB_dbi dbi_bucketuploads;
    MDB_dbi dbi_parts;
    MDB_dbi dbi_extrefs; /* shared extents (extref.c) */
    MDB_dbi dbi_users;
    MDB_dbi dbi_usernames;
    MDB_dbi dbi_keys;
    MDB_dbi dbi_grants;
    MDB_dbi dbi_tree;         /* ordered long keys and uploads (tree.c) */
    MDB_dbi dbi_members;      /* tar member indexes (member.c) */
    MDB_dbi dbi_bucketconfig; /* per-bucket configuration (bucket_config.c) */
    MDB_dbi dbi_uploadsdone;  /* completed uploads (upload.c) */
    MDB_dbi dbi_versions;     /* versions of versioned buckets (version.c) */
    uint64_t version_seq;     /* low half of the next version id (writer only) */
    bool is_nosync;
    /* Reset read transactions ready for mdb_txn_renew (see env.c). */
    pthread_mutex_t pool_mu;
    MDB_txn **pool;
    size_t pool_n;
    size_t pool_cap;
};

/* Maps an LMDB (or errno) return code to 0 / -errno. */
int index__err(int rc);

/* Returns a read-only transaction in '*out' (from the pool when possible);
 * release it with index__read_end. Returns 0 or -errno. */
int index__read_begin(struct index *ix, MDB_txn **out);
/* Resets 'txn' and returns it to the pool. NULL is a no-op. */
void index__read_end(struct index *ix, MDB_txn *txn);
/* One durable write of one record in its own transaction: puts 'v' under
 * 'k' in 'dbi', or deletes 'k' when 'v' is NULL (-ENOENT when absent).
 * Returns 0 or -errno. */
int index__write_one(struct index *ix, MDB_dbi dbi, MDB_val *k, MDB_val *v);

/* ---- object records (record.c) ----------------------------------------- */

/* A parsed record; pointers borrow the LMDB value (valid for the txn).
 * 'extents_raw' is the packed on-disk extent array. */
struct index__record {
    struct index_object obj; /* extents == NULL here; see extents_raw */
    const uint8_t *extents_raw;
    struct slice full_key; /* empty for a direct key */
};

/* Bytes needed to format 'o' with a stored full key of 'key_len' bytes. */
size_t index__record_len(const struct index_object *o, size_t key_len);
/* Formats 'o' (and 'key_len' bytes of 'key' when non-zero) into 'out' of
 * exactly index__record_len() bytes. */
void index__record_format(uint8_t *out, const struct index_object *o, const char *key,
                          size_t key_len);
/* Parses the record 'p'/'len' with bounds checks. Returns 0, or -EIO
 * (through CORRUPT_BKPT) when the bytes are not a valid record. */
int index__record_parse(const uint8_t *p, size_t len, struct index__record *out);
/* Decodes extent 'i' of a parsed record. */
void index__record_extent(const struct index__record *r, uint32_t i, struct index_extent *out);
/* Copies a parsed record into 'a' as a self-contained index_object. */
void index__record_copy(const struct index__record *r, struct arena *a, struct index_object *out);
/* Decodes all extents of a parsed record into an array in 'a' (NULL when
 * it has none). */
struct index_extent *index__record_extents(const struct index__record *r, struct arena *a);

/* ---- the write batch (object.c), shared with upload.c ------------------ */

/* True for an S3 key the index can store (1..INDEX_MAX_KEY bytes). */
bool index__key_is_valid(struct slice key);
/* True when the pointers and lengths of 'o' are consistent and fit a record. */
bool index__object_is_valid(const struct index_object *o);
/*
 * Checks inside write txn 'txn' that bucket 'bucket_id' exists; the id
 * last found is cached in '*checked_bid' (0: none), since no bucket can be
 * deleted while the txn is open. Returns 0, -ENOENT, or -errno.
 */
int index__bucket_check(struct index *ix, MDB_txn *txn, uint64_t bucket_id, uint64_t *checked_bid);
/*
 * Puts 'op->object' at 'op->key' ('is_delete': deletes it) in bucket
 * 'op->bucket_id', which the caller checked exists, evaluating the op's
 * conditions. Sets 'op->result' for outcomes of the op itself (condition
 * failed: nothing is written) and 'op->freed' to the replaced version's
 * extents; returns 0, or -errno when the txn failed and must be aborted.
 */
int index__object_write(struct index *ix, MDB_txn *txn, struct index_op *op, bool is_delete);
/* Sets '*is_same' when the copy source of 'op' (share_key, and
 * share_version_id when has_share_version_id) still exists and holds
 * exactly the extents of op->object. Returns 0 or -errno. */
int index__share_check(struct index *ix, MDB_txn *txn, const struct index_op *op, bool *is_same);

/* ---- versions (version.c) ------------------------------------------------ */

/* Reads the versioning state of 'bucket_id' inside 'txn'. Returns 0 or
 * -errno. */
int index__versioning_read(struct index *ix, MDB_txn *txn, uint64_t bucket_id,
                           enum index_versioning *state, bool *has_object_lock);
/*
 * The versioned counterpart of index__object_write (same contract) for a
 * bucket in 'state' (ENABLED or SUSPENDED): PUT, UPLOAD_COMPLETE and
 * DELETE as index.h describes under "Versions".
 */
int index__version_write(struct index *ix, MDB_txn *txn, struct index_op *op, bool is_delete,
                         enum index_versioning state);
/* INDEX_OP_SET_META on a given version, INDEX_OP_SET_LOCK (index.h).
 * Same return convention. */
int index__version_set_meta(struct index *ix, MDB_txn *txn, struct index_op *op);
int index__version_set_extents(struct index *ix, MDB_txn *txn, struct index_op *op);
/*
 * INDEX_OP_SET_EXTENTS on 'old' (an object's record or a version's): when
 * it is the one the mover read (op->object's ETag and mtime, op->expect_*),
 * fills 'o' (in op->arena) with it carrying op->object's extents, sums and
 * inline bytes, and hands the old extents to the extref count (op->freed).
 * Returns 0 (op->result = -ESTALE when it is not that one), or -errno.
 */
int index__extents_swap(struct index *ix, MDB_txn *txn, struct index_op *op,
                        const struct index__record *old, struct index_object *o);
int index__version_set_lock(struct index *ix, MDB_txn *txn, struct index_op *op);
/* Finds the version 'share_version_id' of the copy source of 'op' and
 * sets '*is_same' when it holds exactly op->object's extents. */
int index__version_share_check(struct index *ix, MDB_txn *txn, const struct index_op *op,
                               bool *is_same);

/* ---- tar member indexes (member.c) --------------------------------------- */

/* Deletes every record of the member index of 'key' in bucket 'bucket_id'
 * inside write txn 'txn' (none is fine). Returns 0 or -errno. */
int index__members_drop(struct index *ix, MDB_txn *txn, uint64_t bucket_id, struct slice key);
/* Writes member index 'm' of that object, built from the version with etag
 * 'etag', inside 'txn'; the caller dropped any older one. Returns 0,
 * -EINVAL (a name of 0 or more than INDEX_MEMBER_NAME_MAX bytes, too many
 * members) or -errno. */
int index__members_write(struct index *ix, MDB_txn *txn, uint64_t bucket_id, struct slice key,
                         const uint8_t etag[16], const struct index_members *m);

/* ---- multipart uploads (upload.c, upload_list.c) ------------------------ */

/*
 * Applies one of the INDEX_OP_UPLOAD_* / INDEX_OP_PART_PUT ops inside
 * write txn 'txn' (contract in index.h). Same return convention as
 * index__object_write.
 */
int index__upload_apply(struct index *ix, MDB_txn *txn, struct index_op *op, uint64_t *checked_bid);

/* A parsed upload record; pointers borrow the LMDB value. */
struct index__upload_rec {
    uint64_t bucket_id;
    int64_t initiated_ns;
    struct slice key;
    const uint8_t *meta;
    size_t meta_len;
};

/* Parses the upload record 'p'/'len'. Returns 0 or -EIO (CORRUPT_BKPT). */
int index__upload_parse(const uint8_t *p, size_t len, struct index__upload_rec *out);
/* Copies 'r' (of the raw id 'raw_id') into 'a' as an index_upload. */
void index__upload_copy(const struct index__upload_rec *r, const uint8_t *raw_id, struct arena *a,
                        struct index_upload *out);

/* ---- listing helpers (list.c) ------------------------------------------- */

/* Returns the length of the common prefix 'key' rolls up into under
 * 'prefix' and 'delim' (S3 rules), or 0 when it does not roll up. */
size_t index__rollup_len(struct slice key, struct slice prefix, struct slice delim);
/* Writes succ('cp') into 'out' (room for cp.len bytes): the smallest
 * string greater than every string starting with 'cp', i.e. 'cp' with its
 * trailing 0xFF bytes dropped and its last byte incremented. Returns its
 * length, or 0 when 'cp' is all 0xFF (nothing follows it). */
size_t index__key_succ(struct slice cp, char *out);

/* ---- per-bucket configuration (bucket_config.c) ----------------------- */

/* Deletes every configuration of bucket 'bucket_id' inside write txn
 * 'txn' (the bucket is being deleted). Returns 0 or -errno. */
int index__bucket_config_drop(struct index *ix, MDB_txn *txn, uint64_t bucket_id);

/* ---- shared extents (extref.c) ---------------------------------------- */

/* Adds one holder to each of the 'n' extents (a new record points at
 * extents another record already holds). Returns 0 or -errno. */
int index__extrefs_share(struct index *ix, MDB_txn *txn, const struct index_extent *e, size_t n);
/* A record drops its 'n' extents 'e': removes one holder from each shared
 * one and compacts 'e'/'*n' to the extents nobody holds any more (the ones
 * storage may reuse). Returns 0 or -errno. */
int index__extrefs_release(struct index *ix, MDB_txn *txn, struct index_extent *e, uint32_t *n);
/* Sets '*shared' when 'e' has more than one holder. Returns 0 or -errno. */
int index__extrefs_is_shared(struct index *ix, MDB_txn *txn, const struct index_extent *e,
                             bool *shared);
/* Calls 'fn' once for every shared extent. Returns 0 or -errno. */
int index__extrefs_scan(struct index *ix, MDB_txn *txn, index_extent_fn fn, void *ctx);

/* ---- the cursor loop (iter.c) ------------------------------------------- */

/*
 * Walks the entries of one database whose keys start with 'prefix', in
 * key order:
 *
 *     struct index__iter it;
 *     if ((rc = index__iter_begin(&it, txn, dbi, pfx, pfx_len)) != 0) goto fail;
 *     while ((rc = index__iter_next(&it)) == 1)
 *         use it.k, it.v;          (borrowing the txn's pages)
 *     if (rc < 0) goto fail;
 *     ...
 *   fail:
 *     index__iter_end(&it);
 *
 * The first index__iter_next starts at the prefix unless a seek placed the
 * iterator first. Each returns 1 with 'k'/'v' set, 0 once past the prefix
 * (or the end of the database; later calls stay at 0), or -errno. An
 * empty prefix walks the whole database. 'k'/'v' stay valid until the
 * next call or a write to the database in the same txn.
 */
#define INDEX_ITER_PREFIX_MAX INDEX_LKEY_MAX

struct index__iter {
    MDB_cursor *cur;
    MDB_val k, v;
    uint8_t prefix[INDEX_ITER_PREFIX_MAX];
    size_t prefix_len;
    bool is_started;
    bool is_end;
    bool is_deleted; /* the entry last handed out was deleted */
};

/* Opens a cursor on 'dbi' in 'txn' over the keys starting with 'prefix'
 * ('prefix_len' <= INDEX_ITER_PREFIX_MAX, copied). Returns 0 or -errno;
 * index__iter_end is safe either way. */
int index__iter_begin(struct index__iter *it, MDB_txn *txn, MDB_dbi dbi, const void *prefix,
                      size_t prefix_len);
/* Moves to the next entry. Returns 1, 0 (no more) or -errno. */
int index__iter_next(struct index__iter *it);
/* Positions at the first entry >= 'key' ('len' bytes; a key shorter than
 * the prefix means the prefix). Returns 1, 0 or -errno like next. */
int index__iter_seek(struct index__iter *it, const void *key, size_t len);
/* Positions at the first entry > 'key'. Returns 1, 0 or -errno. */
int index__iter_after(struct index__iter *it, const void *key, size_t len);
/* Deletes the entry last handed out (write txns only); the next
 * index__iter_next returns the one after it. Returns 0 or -errno. */
int index__iter_del(struct index__iter *it);
/* Closes the cursor. Safe on an iterator that failed to begin. */
void index__iter_end(struct index__iter *it);

/* mdb_get mapped to 0 / -errno and counted in index__reads. */
int index__get(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v);

/* ---- the ordered string sets of "keytree" (tree.c) --------------------- */

/* Adds string 's' (1..INDEX_TREE_STR_MAX bytes) to the set of 'root' in
 * write txn 'txn' (present already: nothing changes). Returns 0, -EINVAL
 * or -errno. */
int index__tree_insert(struct index *ix, MDB_txn *txn, uint64_t root, struct slice s);
/* Removes 's' from the set of 'root'. Returns 0, -ENOENT (not in the set)
 * or -errno. */
int index__tree_remove(struct index *ix, MDB_txn *txn, uint64_t root, struct slice s);

/* One entry on the path of the walk (tree.c). */
struct index__tree_level {
    uint64_t node;
    uint64_t child;
    size_t len; /* of the chunk, stored in the walk's 'str' */
    bool is_leaf;
    uint8_t state; /* 0: nothing handed out, 1: leaf done, 2: children done */
};

/* An in-order walk of one set; each step costs O(1) LMDB reads. */
struct index__tree_iter {
    struct index__iter it;
    uint64_t root;
    int depth;     /* levels on the path */
    int cur_level; /* the level whose entry the cursor sits on, or -1 */
    struct index__tree_level lv[INDEX_TREE_DEPTH];
    uint8_t str[INDEX_TREE_DEPTH * INDEX_TREE_CHUNK];
};

/* Starts a walk of the set of 'root' in 'txn'; position it with
 * index__tree_iter_seek before the first next. Returns 0 or -errno;
 * index__tree_iter_end is safe either way. */
int index__tree_iter_begin(struct index__tree_iter *t, struct index *ix, MDB_txn *txn,
                           uint64_t root);
/* Positions the walk so that the next string is the first >= 'target'.
 * Returns 0 or -errno. */
int index__tree_iter_seek(struct index__tree_iter *t, struct slice target);
/* Hands out the next string in byte order: '*out' borrows the walk's
 * buffer until the next call. Returns 1, 0 at the end, or -errno. */
int index__tree_iter_next(struct index__tree_iter *t, struct slice *out);
void index__tree_iter_end(struct index__tree_iter *t);

/* ---- test hooks --------------------------------------------------------- */

/* Number of LMDB reads (cursor positionings and index__get calls) made on
 * the calling thread since it started. Tests use it to check that a
 * listing page costs O(page), not O(keys or uploads in the bucket). */
uint64_t index__reads(void);

#endif
