/*
 * version.c: versioned buckets. Every version of a key (objects and
 * delete markers) is a record in "versions" (schema in keys.h), newest
 * first; the latest version, unless it is a delete marker, is also in
 * "objects", so reads of the latest and ListObjects never look here and
 * unversioned buckets never touch this file's writes.
 *
 * Invariants, each kept inside the one write transaction of a change:
 * "objects" holds a copy of exactly the newest "versions" record of a key
 * when that record is not a delete marker, and nothing otherwise; the
 * "versions" record holds the extents (holder counts in extref.c), its
 * "objects" copy none; a bucket leaves OFF with all its objects made null
 * versions (index_versioning_put), so no object of a versioned bucket
 * lacks its "versions" record.
 */
#include "index/index_int.h"

#include <errno.h>
#include <time.h>
#include <xxhash.h>

/* ---- keys --------------------------------------------------------------- */

/* Writes the prefix every "versions" key of 'key' in bucket 'bid' starts
 * with into 'out' (INDEX_VKEY_MAX bytes) and returns its length. */
static size_t
vkey_prefix(uint8_t *out, uint64_t bid, struct slice key)
{
    uint8_t esc[2 * INDEX_MAX_KEY];
    size_t n = index__key_escape(esc, key);
    index__put_be64(out, bid);
    if (n <= INDEX_VKEY_DIRECT_MAX) {
        memcpy(out + INDEX_BID_LEN, esc, n);
        out[INDEX_BID_LEN + n] = 0;
        out[INDEX_BID_LEN + n + 1] = 0;
        return INDEX_BID_LEN + n + 2;
    }
    memcpy(out + INDEX_BID_LEN, esc, INDEX_VKEY_DIRECT_MAX);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(key.ptr, key.len));
    memcpy(out + INDEX_BID_LEN + INDEX_VKEY_DIRECT_MAX, c.digest, INDEX_HASH_LEN);
    return INDEX_BID_LEN + INDEX_VKEY_DIRECT_MAX + INDEX_HASH_LEN;
}

/* The full "versions" key of version 'vid' of 'key'. Returns its length. */
static size_t
vkey_encode(uint8_t *out, uint64_t bid, struct slice key, const uint8_t *vid)
{
    size_t n = vkey_prefix(out, bid, key);
    for (size_t i = 0; i < INDEX_VERSION_ID_LEN; i++)
        out[n + i] = (uint8_t)~vid[i];
    return n + INDEX_VERSION_ID_LEN;
}

/* A seek target before every key >= 'key' (and, outside runs of long
 * keys, after every key < 'key'): bid | esc(key) cut at 464 bytes. */
static size_t
vkey_seek(uint8_t *out, uint64_t bid, struct slice key)
{
    uint8_t esc[2 * INDEX_MAX_KEY];
    size_t n = index__key_escape(esc, key);
    if (n > INDEX_VKEY_DIRECT_MAX)
        n = INDEX_VKEY_DIRECT_MAX;
    index__put_be64(out, bid);
    memcpy(out + INDEX_BID_LEN, esc, n);
    return INDEX_BID_LEN + n;
}

static bool
vid_is_null(const uint8_t *vid)
{
    for (size_t i = 0; i < INDEX_VERSION_ID_LEN; i++)
        if (vid[i])
            return false;
    return true;
}

/* The id of a new version of a key whose newest version has id 'newest'
 * (NULL: none): the clock and a sequence number, and always above
 * 'newest', so ids grow in commit order even if the clock steps back. */
static void
vid_new(struct index *ix, const uint8_t *newest, uint8_t out[INDEX_VERSION_ID_LEN])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    index__put_be64(out, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    index__put_be64(out + 8, ++ix->version_seq);
    if (newest && memcmp(out, newest, INDEX_VERSION_ID_LEN) <= 0) {
        memcpy(out, newest, INDEX_VERSION_ID_LEN);
        for (int i = INDEX_VERSION_ID_LEN - 1; i >= 0 && ++out[i] == 0; i--)
            ;
    }
}

/* ---- lookups ------------------------------------------------------------ */

/* The "objects" record of 'key' (see object.c's lookup). Returns 0,
 * -ENOENT or -errno; 'out' borrows the txn's pages. */
static int
objects_get(struct index *ix, MDB_txn *txn, uint64_t bid, struct slice key,
            struct index__record *out)
{
    uint8_t lkey[INDEX_LKEY_MAX];
    MDB_val k = {index__objkey_encode(lkey, bid, key), lkey}, v;
    int rc = index__get(txn, ix->dbi_objects, &k, &v);
    if (rc != 0)
        return rc;
    if ((rc = index__record_parse(v.mv_data, v.mv_size, out)) != 0)
        return rc;
    if (key.len > INDEX_DIRECT_MAX && !slice_eq(out->full_key, key))
        return -ENOENT;
    return 0;
}

/* A version found: its record (borrowing the txn's pages) and its key. */
struct ver_pos {
    struct index__record rec;
    uint8_t lkey[INDEX_VKEY_MAX];
    size_t lkey_len;
};

/* Finds the newest version of 'key' ('skip' > 0: the one after the
 * 'skip' newest). Returns 0, -ENOENT or -errno. */
static int
ver_newest(struct index *ix, MDB_txn *txn, uint64_t bid, struct slice key, struct ver_pos *out)
{
    struct index__iter it;
    uint8_t pfx[INDEX_VKEY_MAX];
    size_t n = vkey_prefix(pfx, bid, key);
    int rc = index__iter_begin(&it, txn, ix->dbi_versions, pfx, n);
    while (rc == 0 && (rc = index__iter_next(&it)) == 1) {
        if ((rc = index__record_parse(it.v.mv_data, it.v.mv_size, &out->rec)) != 0)
            break;
        if (!slice_eq(out->rec.full_key, key)) {
            rc = 0;
            continue; /* another key sharing the prefix (see keys.h) */
        }
        memcpy(out->lkey, it.k.mv_data, it.k.mv_size);
        out->lkey_len = it.k.mv_size;
        rc = 2;
    }
    index__iter_end(&it);
    return rc == 2 ? 0 : rc == 0 ? -ENOENT : rc;
}

/* Finds version 'vid' (all zero: the null version) of 'key' and sets
 * '*is_newest' when it is the newest. Returns 0, -ENOENT or -errno. */
static int
ver_find(struct index *ix, MDB_txn *txn, uint64_t bid, struct slice key, const uint8_t *vid,
         struct ver_pos *out, bool *is_newest)
{
    struct index__iter it;
    uint8_t pfx[INDEX_VKEY_MAX];
    int rc;
    *is_newest = true;
    if (!vid_is_null(vid)) {
        struct ver_pos newest;
        out->lkey_len = vkey_encode(out->lkey, bid, key, vid);
        MDB_val k = {out->lkey_len, out->lkey}, v;
        if ((rc = index__get(txn, ix->dbi_versions, &k, &v)) != 0)
            return rc;
        if ((rc = index__record_parse(v.mv_data, v.mv_size, &out->rec)) != 0)
            return rc;
        if (!slice_eq(out->rec.full_key, key) || (out->rec.obj.version_flags & INDEX_VERSION_NULL))
            return -ENOENT;
        if ((rc = ver_newest(ix, txn, bid, key, &newest)) != 0)
            return rc;
        *is_newest =
            newest.lkey_len == out->lkey_len && memcmp(newest.lkey, out->lkey, out->lkey_len) == 0;
        /* ver_newest's cursor may have moved the pages: read again. */
        if ((rc = index__get(txn, ix->dbi_versions, &k, &v)) != 0)
            return rc;
        return index__record_parse(v.mv_data, v.mv_size, &out->rec);
    }
    size_t n = vkey_prefix(pfx, bid, key);
    bool is_first = true;
    rc = index__iter_begin(&it, txn, ix->dbi_versions, pfx, n);
    while (rc == 0 && (rc = index__iter_next(&it)) == 1) {
        if ((rc = index__record_parse(it.v.mv_data, it.v.mv_size, &out->rec)) != 0)
            break;
        rc = 0;
        if (!slice_eq(out->rec.full_key, key))
            continue;
        if (out->rec.obj.version_flags & INDEX_VERSION_NULL) {
            memcpy(out->lkey, it.k.mv_data, it.k.mv_size);
            out->lkey_len = it.k.mv_size;
            *is_newest = is_first;
            rc = 2;
            break;
        }
        is_first = false;
    }
    index__iter_end(&it);
    return rc == 2 ? 0 : rc == 0 ? -ENOENT : rc;
}

/* ---- writes ------------------------------------------------------------- */

/* Puts record 'o' (with its trailer) at "versions" key 'lkey'. */
static int
ver_put(struct index *ix, MDB_txn *txn, const uint8_t *lkey, size_t lkey_len,
        const struct index_object *o, struct slice key)
{
    MDB_val k = {lkey_len, (void *)lkey}, v = {index__record_len(o, key.len), NULL};
    int rc = index__err(mdb_put(txn, ix->dbi_versions, &k, &v, MDB_RESERVE));
    if (rc == 0)
        index__record_format(v.mv_data, o, key.ptr, key.len);
    return rc;
}

/* Makes 'o' the "objects" record of 'key' (a long key joins the key tree
 * when it was absent). */
static int
objects_put(struct index *ix, MDB_txn *txn, uint64_t bid, struct slice key,
            const struct index_object *o)
{
    uint8_t lkey[INDEX_LKEY_MAX];
    MDB_val k = {index__objkey_encode(lkey, bid, key), lkey}, v;
    int rc;
    bool is_long = key.len > INDEX_DIRECT_MAX;
    if (is_long) {
        rc = index__err(mdb_get(txn, ix->dbi_objects, &k, &v));
        if (rc == -ENOENT)
            rc = index__tree_insert(ix, txn, INDEX_TREE_ROOT_OBJECTS(bid), key);
        if (rc != 0)
            return rc;
    }
    size_t key_len = is_long ? key.len : 0;
    v.mv_size = index__record_len(o, key_len);
    v.mv_data = NULL;
    if ((rc = index__err(mdb_put(txn, ix->dbi_objects, &k, &v, MDB_RESERVE))) != 0)
        return rc;
    index__record_format(v.mv_data, o, key.ptr, key_len);
    return 0;
}

/* Removes the "objects" record of 'key', if any. */
static int
objects_del(struct index *ix, MDB_txn *txn, uint64_t bid, struct slice key)
{
    uint8_t lkey[INDEX_LKEY_MAX];
    MDB_val k = {index__objkey_encode(lkey, bid, key), lkey};
    int rc = index__err(mdb_del(txn, ix->dbi_objects, &k, NULL));
    if (rc == -ENOENT)
        return 0;
    if (rc == 0 && key.len > INDEX_DIRECT_MAX) {
        rc = index__tree_remove(ix, txn, INDEX_TREE_ROOT_OBJECTS(bid), key);
        if (rc == -ENOENT)
            rc = 0;
    }
    return rc;
}

/* True when Object Lock forbids removing version 'o' at op->now_ns. */
static bool
ver_is_locked(const struct index_object *o, const struct index_op *op)
{
    if (o->has_legal_hold)
        return true;
    if (o->lock_mode == INDEX_LOCK_NONE || o->retain_until_ns <= op->now_ns)
        return false;
    return o->lock_mode == INDEX_LOCK_COMPLIANCE || !op->bypass_governance;
}

/*
 * After the newest version of 'key' changed: makes "objects" hold a copy
 * of the newest version unless it is a delete marker (or there is none),
 * and drops the tar member index of the old latest.
 */
static int
latest_refresh(struct index *ix, MDB_txn *txn, uint64_t bid, struct slice key, struct arena *a)
{
    struct ver_pos np;
    struct index_object o;
    int rc = index__members_drop(ix, txn, bid, key);
    if (rc != 0)
        return rc;
    rc = ver_newest(ix, txn, bid, key, &np);
    if (rc == -ENOENT || (rc == 0 && (np.rec.obj.version_flags & INDEX_VERSION_MARKER)))
        return objects_del(ix, txn, bid, key);
    if (rc != 0)
        return rc;
    index__record_copy(&np.rec, a, &o);
    return objects_put(ix, txn, bid, key, &o);
}

/* Removes the version at 'pos' of 'key' for good: its extents (those
 * nobody else holds) go to op->freed. Then refreshes the latest when it
 * was the newest. */
static int
ver_remove(struct index *ix, MDB_txn *txn, struct index_op *op, struct ver_pos *pos, bool is_newest)
{
    int rc;
    op->result_version_flags = pos->rec.obj.version_flags;
    memcpy(op->result_version_id, pos->rec.obj.version_id, INDEX_VERSION_ID_LEN);
    op->freed = index__record_extents(&pos->rec, op->arena);
    op->n_freed = pos->rec.obj.n_extents;
    MDB_val k = {pos->lkey_len, pos->lkey};
    if ((rc = index__err(mdb_del(txn, ix->dbi_versions, &k, NULL))) != 0)
        return rc;
    if (op->n_freed && (rc = index__extrefs_release(ix, txn, op->freed, &op->n_freed)) != 0)
        return rc;
    return is_newest ? latest_refresh(ix, txn, op->bucket_id, op->key, op->arena) : 0;
}

int
index__version_write(struct index *ix, MDB_txn *txn, struct index_op *op, bool is_delete,
                     enum index_versioning state)
{
    struct index__record cur;
    struct ver_pos pos;
    bool is_newest;
    int rc;

    if (is_delete && op->has_version_id) {
        rc = ver_find(ix, txn, op->bucket_id, op->key, op->version_id, &pos, &is_newest);
        if (rc == -ENOENT)
            return 0;
        if (rc != 0)
            return rc;
        if (ver_is_locked(&pos.rec.obj, op)) {
            op->result = -EACCES;
            return 0;
        }
        return ver_remove(ix, txn, op, &pos, is_newest);
    }

    rc = objects_get(ix, txn, op->bucket_id, op->key, &cur);
    bool exists = rc == 0;
    if (rc != 0 && rc != -ENOENT)
        return rc;
    if (exists && !(cur.obj.version_flags & INDEX_VERSION_HAS_ID))
        return CORRUPT_BKPT("an object of a versioned bucket has no version");
    /* The "objects" copy is the newest version (see the top of the file):
     * its id bounds the new one without a cursor walk through "versions".
     * Copied now, as the writes below may move the txn's pages. */
    uint8_t newest_id[INDEX_VERSION_ID_LEN];
    if (exists)
        memcpy(newest_id, cur.obj.version_id, INDEX_VERSION_ID_LEN);
    if (op->if_none_match && exists) {
        op->result = -EEXIST;
        return 0;
    }
    if (op->has_if_match && (!exists || memcmp(cur.obj.etag, op->if_match_etag, 16) != 0)) {
        op->result = -ESTALE;
        return 0;
    }
    if (!is_delete && op->share_key.len) {
        bool is_same;
        if ((rc = index__share_check(ix, txn, op, &is_same)) != 0)
            return rc;
        if (!is_same) {
            op->result = -ESTALE;
            return 0;
        }
        if ((rc = index__extrefs_share(ix, txn, op->object->extents, op->object->n_extents)) != 0)
            return rc;
    }
    bool is_null = state == INDEX_VERSIONING_SUSPENDED;
    if (is_null) {
        /* Suspended: the new null version replaces the old one. */
        static const uint8_t null_id[INDEX_VERSION_ID_LEN];
        rc = ver_find(ix, txn, op->bucket_id, op->key, null_id, &pos, &is_newest);
        if (rc == 0) {
            if (ver_is_locked(&pos.rec.obj, op)) {
                op->result = -EACCES;
                return 0;
            }
            op->freed = index__record_extents(&pos.rec, op->arena);
            op->n_freed = pos.rec.obj.n_extents;
            MDB_val k = {pos.lkey_len, pos.lkey};
            if ((rc = index__err(mdb_del(txn, ix->dbi_versions, &k, NULL))) != 0)
                return rc;
            if (op->n_freed && (rc = index__extrefs_release(ix, txn, op->freed, &op->n_freed)) != 0)
                return rc;
        } else if (rc != -ENOENT) {
            return rc;
        }
    }
    struct index_object o;
    memset(&o, 0, sizeof(o));
    if (!is_delete) {
        o = *op->object;
    } else {
        o.mtime_ns = op->now_ns;
        if (o.mtime_ns == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            o.mtime_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        }
    }
    if (exists) {
        /* A null version removed above may have been that newest one:
         * the new id is then above an id no longer stored, still above
         * every id that is. */
        vid_new(ix, newest_id, o.version_id);
    } else {
        /* No "objects" copy: a new key, or a delete marker is newest. */
        rc = ver_newest(ix, txn, op->bucket_id, op->key, &pos);
        if (rc != 0 && rc != -ENOENT)
            return rc;
        vid_new(ix, rc == 0 ? pos.rec.obj.version_id : NULL, o.version_id);
    }
    o.version_flags = INDEX_VERSION_HAS_ID | (is_null ? INDEX_VERSION_NULL : 0) |
                      (is_delete ? INDEX_VERSION_MARKER : 0);
    if (is_delete) {
        o.retain_until_ns = 0;
        o.lock_mode = INDEX_LOCK_NONE;
        o.has_legal_hold = false;
    }
    uint8_t lkey[INDEX_VKEY_MAX];
    size_t lkey_len = vkey_encode(lkey, op->bucket_id, op->key, o.version_id);
    if ((rc = ver_put(ix, txn, lkey, lkey_len, &o, op->key)) != 0)
        return rc;
    op->result_version_flags = o.version_flags;
    memcpy(op->result_version_id, o.version_id, INDEX_VERSION_ID_LEN);
    if ((rc = index__members_drop(ix, txn, op->bucket_id, op->key)) != 0)
        return rc;
    if (is_delete)
        return objects_del(ix, txn, op->bucket_id, op->key);
    if ((rc = objects_put(ix, txn, op->bucket_id, op->key, &o)) != 0)
        return rc;
    if (op->members)
        return index__members_write(ix, txn, op->bucket_id, op->key, o.etag, op->members);
    return 0;
}

int
index__version_share_check(struct index *ix, MDB_txn *txn, const struct index_op *op, bool *is_same)
{
    struct ver_pos pos;
    struct index_extent e;
    bool is_newest;
    *is_same = false;
    int rc = ver_find(ix, txn, op->share_bucket_id, op->share_key, op->share_version_id, &pos,
                      &is_newest);
    if (rc == -ENOENT)
        return 0;
    if (rc != 0)
        return rc;
    const struct index_object *src = &pos.rec.obj;
    if (src->n_extents != op->object->n_extents || memcmp(src->etag, op->object->etag, 16) != 0)
        return 0;
    for (uint32_t i = 0; i < src->n_extents; i++) {
        index__record_extent(&pos.rec, i, &e);
        const struct index_extent *want = &op->object->extents[i];
        if (e.volume != want->volume || e.offset != want->offset || e.len != want->len)
            return 0;
    }
    *is_same = true;
    return 0;
}

/* Finds the version SET_META / SET_LOCK act on: op->version_id, or the
 * latest. A delete marker counts as absent. Returns 0, -ENOENT or -errno. */
static int
ver_target(struct index *ix, MDB_txn *txn, const struct index_op *op, struct ver_pos *pos,
           bool *is_newest)
{
    int rc;
    if (op->has_version_id) {
        rc = ver_find(ix, txn, op->bucket_id, op->key, op->version_id, pos, is_newest);
    } else {
        *is_newest = true;
        rc = ver_newest(ix, txn, op->bucket_id, op->key, pos);
    }
    if (rc == 0 && (pos->rec.obj.version_flags & INDEX_VERSION_MARKER))
        rc = -ENOENT;
    return rc;
}

/* Writes the changed version 'o' back at 'pos', and its "objects" copy
 * when it is the latest. */
static int
ver_rewrite(struct index *ix, MDB_txn *txn, const struct index_op *op, const struct ver_pos *pos,
            bool is_newest, const struct index_object *o)
{
    int rc = ver_put(ix, txn, pos->lkey, pos->lkey_len, o, op->key);
    if (rc == 0 && is_newest)
        rc = objects_put(ix, txn, op->bucket_id, op->key, o);
    return rc;
}

int
index__version_set_meta(struct index *ix, MDB_txn *txn, struct index_op *op)
{
    struct ver_pos pos;
    struct index_object o;
    bool is_newest;
    int rc = ver_target(ix, txn, op, &pos, &is_newest);
    if (rc == -ENOENT) {
        op->result = -ENOENT;
        return 0;
    }
    if (rc != 0)
        return rc;
    if (memcmp(pos.rec.obj.etag, op->object->etag, 16) != 0 ||
        pos.rec.obj.mtime_ns != op->object->mtime_ns) {
        op->result = -ESTALE;
        return 0;
    }
    index__record_copy(&pos.rec, op->arena, &o);
    o.meta = op->object->meta;
    o.meta_len = op->object->meta_len;
    op->result_version_flags = o.version_flags;
    memcpy(op->result_version_id, o.version_id, INDEX_VERSION_ID_LEN);
    return ver_rewrite(ix, txn, op, &pos, is_newest, &o);
}

int
index__version_set_lock(struct index *ix, MDB_txn *txn, struct index_op *op)
{
    struct ver_pos pos;
    struct index_object o;
    bool is_newest;
    int rc = ver_target(ix, txn, op, &pos, &is_newest);
    if (rc == -ENOENT) {
        op->result = -ENOENT;
        return 0;
    }
    if (rc != 0)
        return rc;
    index__record_copy(&pos.rec, op->arena, &o);
    const struct index_object *want = op->object;
    if (op->lock_what & INDEX_SET_RETENTION) {
        bool is_in_force = o.lock_mode != INDEX_LOCK_NONE && o.retain_until_ns > op->now_ns;
        bool is_extension =
            want->lock_mode == o.lock_mode && want->retain_until_ns >= o.retain_until_ns;
        if (is_in_force && !is_extension &&
            (o.lock_mode == INDEX_LOCK_COMPLIANCE || !op->bypass_governance)) {
            op->result = -EACCES;
            return 0;
        }
        o.lock_mode = want->lock_mode;
        o.retain_until_ns = want->lock_mode == INDEX_LOCK_NONE ? 0 : want->retain_until_ns;
    }
    if (op->lock_what & INDEX_SET_LEGAL_HOLD)
        o.has_legal_hold = want->has_legal_hold;
    op->result_version_flags = o.version_flags;
    memcpy(op->result_version_id, o.version_id, INDEX_VERSION_ID_LEN);
    return ver_rewrite(ix, txn, op, &pos, is_newest, &o);
}

/*
 * INDEX_OP_SET_EXTENTS in a versioned bucket (contract in index.h): the
 * version op->version_id (or the latest) is checked to be the one the
 * mover read, then rewritten with the new extents, sums and inline bytes,
 * and its "objects" copy too when it is the latest, in this transaction;
 * the old extents go to the extref count (a copy may still hold them).
 */
int
index__version_set_extents(struct index *ix, MDB_txn *txn, struct index_op *op)
{
    struct ver_pos pos;
    struct index_object o;
    bool is_newest;
    int rc = ver_target(ix, txn, op, &pos, &is_newest);
    if (rc == -ENOENT) {
        op->result = -ENOENT;
        return 0;
    }
    if (rc != 0)
        return rc;
    if ((rc = index__extents_swap(ix, txn, op, &pos.rec, &o)) != 0 || op->result != 0)
        return rc;
    op->result_version_flags = o.version_flags;
    memcpy(op->result_version_id, o.version_id, INDEX_VERSION_ID_LEN);
    return ver_rewrite(ix, txn, op, &pos, is_newest, &o);
}

/* ---- versioning state --------------------------------------------------- */

static void
state_key(uint8_t out[INDEX_BUCKETCONFIG_KEY_LEN], uint64_t bid)
{
    index__put_be64(out, bid);
    out[INDEX_BID_LEN] = INDEX_BUCKET_CONFIG_VERSIONING;
}

int
index__versioning_read(struct index *ix, MDB_txn *txn, uint64_t bucket_id,
                       enum index_versioning *state, bool *has_object_lock)
{
    uint8_t key[INDEX_BUCKETCONFIG_KEY_LEN];
    state_key(key, bucket_id);
    MDB_val k = {sizeof(key), key}, v;
    *state = INDEX_VERSIONING_OFF;
    *has_object_lock = false;
    int rc = index__get(txn, ix->dbi_bucketconfig, &k, &v);
    if (rc == -ENOENT)
        return 0;
    if (rc != 0)
        return rc;
    const uint8_t *p = v.mv_data;
    if (v.mv_size != 2 || p[0] < INDEX_VERSIONING_ENABLED || p[0] > INDEX_VERSIONING_SUSPENDED)
        return CORRUPT_BKPT("versioning state");
    *state = (enum index_versioning)p[0];
    *has_object_lock = (p[1] & 1) != 0;
    return 0;
}

int
index_versioning_get(struct index *ix, uint64_t bucket_id, enum index_versioning *state,
                     bool *has_object_lock)
{
    MDB_txn *txn = NULL;
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = index__versioning_read(ix, txn, bucket_id, state, has_object_lock);
    index__read_end(ix, txn);
    return rc;
}

/* Makes every object of bucket 'bid' the null version of its key (the
 * bucket leaves OFF). Walks "objects" in chunks of keys so that no cursor
 * is open on it while it is written. */
static int
versioning_migrate(struct index *ix, MDB_txn *txn, uint64_t bid)
{
    enum { CHUNK = 256 };
    struct arena *a = arena_create(1 << 16);
    struct index__iter it = {0};
    uint8_t pfx[INDEX_BID_LEN], last[INDEX_LKEY_MAX];
    size_t last_len = 0;
    struct slice keys[CHUNK];
    int rc = 0;

    index__put_be64(pfx, bid);
    for (;;) {
        size_t n = 0;
        if ((rc = index__iter_begin(&it, txn, ix->dbi_objects, pfx, sizeof(pfx))) != 0)
            goto fail;
        rc = last_len ? index__iter_after(&it, last, last_len) : index__iter_next(&it);
        for (; rc == 1 && n < CHUNK; rc = index__iter_next(&it)) {
            struct index__record r;
            if ((rc = index__record_parse(it.v.mv_data, it.v.mv_size, &r)) != 0)
                goto fail;
            struct slice full = r.full_key.len
                                    ? r.full_key
                                    : (struct slice){(const char *)it.k.mv_data + INDEX_BID_LEN,
                                                     it.k.mv_size - INDEX_BID_LEN};
            keys[n++] = (struct slice){arena_memdup(a, full.ptr, full.len), full.len};
            memcpy(last, it.k.mv_data, it.k.mv_size);
            last_len = it.k.mv_size;
        }
        index__iter_end(&it);
        if (rc < 0)
            goto fail;
        for (size_t i = 0; i < n; i++) {
            struct index__record r;
            struct index_object o;
            if ((rc = objects_get(ix, txn, bid, keys[i], &r)) != 0)
                goto fail;
            if (r.obj.version_flags & INDEX_VERSION_HAS_ID)
                continue;
            index__record_copy(&r, a, &o);
            o.version_flags = INDEX_VERSION_HAS_ID | INDEX_VERSION_NULL;
            index__put_be64(o.version_id, o.mtime_ns > 0 ? (uint64_t)o.mtime_ns : 1);
            index__put_be64(o.version_id + 8, 0);
            uint8_t lkey[INDEX_VKEY_MAX];
            size_t lkey_len = vkey_encode(lkey, bid, keys[i], o.version_id);
            if ((rc = ver_put(ix, txn, lkey, lkey_len, &o, keys[i])) != 0 ||
                (rc = objects_put(ix, txn, bid, keys[i], &o)) != 0)
                goto fail;
        }
        arena_clear(a);
        if (n < CHUNK)
            break;
    }

fail:
    index__iter_end(&it);
    arena_destroy(a);
    return rc;
}

int
index_versioning_put(struct index *ix, uint64_t bucket_id, enum index_versioning state,
                     bool enable_object_lock)
{
    MDB_txn *txn = NULL;
    uint64_t checked = 0;
    enum index_versioning cur;
    bool has_lock;
    int rc;

    if (state != INDEX_VERSIONING_ENABLED && state != INDEX_VERSIONING_SUSPENDED)
        return -EINVAL;
    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    if ((rc = index__bucket_check(ix, txn, bucket_id, &checked)) != 0 ||
        (rc = index__versioning_read(ix, txn, bucket_id, &cur, &has_lock)) != 0)
        goto fail;
    if (has_lock && state == INDEX_VERSIONING_SUSPENDED) {
        rc = -EPERM;
        goto fail;
    }
    if (enable_object_lock && state != INDEX_VERSIONING_ENABLED) {
        rc = -EINVAL;
        goto fail;
    }
    if (cur == INDEX_VERSIONING_OFF && (rc = versioning_migrate(ix, txn, bucket_id)) != 0)
        goto fail;
    uint8_t key[INDEX_BUCKETCONFIG_KEY_LEN], val[2] = {(uint8_t)state, 0};
    if (has_lock || enable_object_lock)
        val[1] = 1;
    state_key(key, bucket_id);
    MDB_val k = {sizeof(key), key}, v = {sizeof(val), val};
    if ((rc = index__err(mdb_put(txn, ix->dbi_bucketconfig, &k, &v, 0))) != 0)
        goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;

fail:
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

/* ---- reads -------------------------------------------------------------- */

int
index_object_version_get(struct index *ix, uint64_t bucket_id, struct slice key,
                         const uint8_t *version_id, struct arena *a, struct index_object *out)
{
    MDB_txn *txn = NULL;
    struct ver_pos pos;
    bool is_newest;
    int rc;

    if (!index__key_is_valid(key))
        return -ENOENT;
    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if (version_id)
        rc = ver_find(ix, txn, bucket_id, key, version_id, &pos, &is_newest);
    else
        rc = ver_newest(ix, txn, bucket_id, key, &pos);
    if (rc == 0) {
        index__record_copy(&pos.rec, a, out);
    } else if (rc == -ENOENT && (!version_id || vid_is_null(version_id))) {
        /* A bucket never versioned: its objects are the null versions. */
        struct index__record r;
        if ((rc = objects_get(ix, txn, bucket_id, key, &r)) == 0) {
            if (r.obj.version_flags & INDEX_VERSION_HAS_ID)
                rc = -ENOENT; /* not null: the null version is gone */
            else
                index__record_copy(&r, a, out);
        }
    }

fail:
    index__read_end(ix, txn);
    return rc;
}

/* ---- listing ------------------------------------------------------------ */

/* State of one index_version_list call. */
struct vlist {
    const struct index_version_list_params *p;
    struct arena *a;
    struct index_version_list_result *out;
    uint32_t max;
    struct slice prev_key; /* key of the last version listed (IsLatest) */
};

/* Adds an entry; returns false when the page is full (the entry is then
 * what makes it truncated). */
static bool
vlist_add(struct vlist *l, const struct index_version_entry *e)
{
    if (l->out->n_entries == l->max) {
        l->out->is_truncated = true;
        return false;
    }
    l->out->entries[l->out->n_entries++] = *e;
    return true;
}

int
index_version_list(struct index *ix, const struct index_version_list_params *p, struct arena *a,
                   struct index_version_list_result *out)
{
    MDB_txn *txn = NULL;
    struct index__iter it = {0};
    uint8_t seek[INDEX_VKEY_MAX], pfx[INDEX_VKEY_MAX];
    size_t seek_len, pfx_len;
    struct vlist l = {.p = p, .a = a, .out = out};
    bool is_after = false;
    int rc;

    memset(out, 0, sizeof(*out));
    l.max = p->max_keys > 1000 ? 1000 : p->max_keys;
    out->entries = arena_calloc(a, l.max + 1, sizeof(*out->entries));
    if (l.max == 0)
        return 0;
    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    pfx_len = vkey_seek(pfx, p->bucket_id, p->prefix);
    seek_len = pfx_len;
    memcpy(seek, pfx, pfx_len);
    if (p->key_marker.len && index__key_is_valid(p->key_marker)) {
        rc = -ENOENT;
        if (p->has_version_id_marker && !vid_is_null(p->version_id_marker)) {
            /* A real id need not exist: its place in the order does. */
            seek_len = vkey_encode(seek, p->bucket_id, p->key_marker, p->version_id_marker);
            rc = 0;
        } else if (p->has_version_id_marker) {
            struct ver_pos pos;
            bool is_newest;
            rc = ver_find(ix, txn, p->bucket_id, p->key_marker, p->version_id_marker, &pos,
                          &is_newest);
            if (rc != 0 && rc != -ENOENT)
                goto fail;
            if (rc == 0) {
                seek_len = pos.lkey_len;
                memcpy(seek, pos.lkey, seek_len);
            }
        }
        if (rc == 0) {
            l.prev_key = p->key_marker; /* later versions of it are not latest */
        } else {
            /* After every version of the marker key. */
            seek_len = vkey_prefix(seek, p->bucket_id, p->key_marker);
            memset(seek + seek_len, 0xFF, INDEX_VERSION_ID_LEN);
            seek_len += INDEX_VERSION_ID_LEN;
        }
        is_after = true;
        /* Never before the prefix. */
        int cmp = memcmp(seek, pfx, MIN(seek_len, pfx_len));
        if (cmp < 0 || (cmp == 0 && seek_len < pfx_len)) {
            seek_len = pfx_len;
            memcpy(seek, pfx, pfx_len);
            is_after = false;
        }
    }
    /* A marker inside a common prefix resumes after the prefix. */
    struct slice skip_cp = SLICE_NULL;
    if (p->key_marker.len && p->delimiter.len) {
        size_t cl = index__rollup_len(p->key_marker, p->prefix, p->delimiter);
        if (cl)
            skip_cp = (struct slice){p->key_marker.ptr, cl};
    }
    if ((rc = index__iter_begin(&it, txn, ix->dbi_versions, pfx, pfx_len)) != 0)
        goto fail;
    if (skip_cp.len) {
        /* One seek past the whole prefix, not a walk through it. */
        char succ[INDEX_MAX_KEY];
        size_t sl = index__key_succ(skip_cp, succ);
        rc = 0;
        if (sl) {
            seek_len = vkey_seek(seek, p->bucket_id, (struct slice){succ, sl});
            rc = index__iter_seek(&it, seek, seek_len);
        }
    } else {
        rc = is_after ? index__iter_after(&it, seek, seek_len)
                      : index__iter_seek(&it, seek, seek_len);
    }
    while (rc == 1) {
        struct index__record r;
        if ((rc = index__record_parse(it.v.mv_data, it.v.mv_size, &r)) != 0)
            goto fail;
        struct slice key = r.full_key;
        if (!slice_has_prefix(key, p->prefix) || (skip_cp.len && slice_has_prefix(key, skip_cp))) {
            rc = index__iter_next(&it);
            continue;
        }
        size_t cl = p->delimiter.len ? index__rollup_len(key, p->prefix, p->delimiter) : 0;
        if (cl) {
            struct index_version_entry cp = {.is_prefix = true};
            cp.key = (struct slice){arena_memdup(a, key.ptr, cl), cl};
            if (!vlist_add(&l, &cp))
                break;
            skip_cp = cp.key;
            /* Skip the whole prefix with one seek, to succ(cp). */
            char succ[INDEX_MAX_KEY];
            size_t sl = index__key_succ(cp.key, succ);
            if (sl == 0) {
                rc = 0;
                break;
            }
            seek_len = vkey_seek(seek, p->bucket_id, (struct slice){succ, sl});
            rc = index__iter_seek(&it, seek, seek_len);
            continue;
        }
        bool is_latest = !slice_eq(key, l.prev_key);
        struct index_version_entry e = {.is_latest = is_latest};
        e.key = is_latest ? (struct slice){arena_memdup(a, key.ptr, key.len), key.len} : l.prev_key;
        e.version_flags = r.obj.version_flags;
        memcpy(e.version_id, r.obj.version_id, INDEX_VERSION_ID_LEN);
        e.size = r.obj.size;
        e.mtime_ns = r.obj.mtime_ns;
        memcpy(e.etag, r.obj.etag, 16);
        e.parts_count = r.obj.parts_count;
        if (r.obj.n_extents) {
            struct index_extent first;
            index__record_extent(&r, 0, &first);
            e.flags = first.flags;
        }
        if (!vlist_add(&l, &e))
            break;
        l.prev_key = e.key;
        rc = index__iter_next(&it);
    }
    if (rc < 0)
        goto fail;
    rc = 0;
    if (out->is_truncated && out->n_entries) {
        const struct index_version_entry *last = &out->entries[out->n_entries - 1];
        out->next_key_marker = last->key;
        if (!last->is_prefix) {
            out->next_has_version_id = true;
            out->next_version_flags = last->version_flags;
            memcpy(out->next_version_id, last->version_id, INDEX_VERSION_ID_LEN);
        }
    }

fail:
    index__iter_end(&it);
    index__read_end(ix, txn);
    return rc;
}
