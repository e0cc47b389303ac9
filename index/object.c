/*
 * object.c: object lookups, the write batch (group commit) and the scans
 * over every record. All ops of a batch run in one LMDB write transaction
 * and become durable with one commit, so N concurrent PUT completions cost
 * one fsync. Conditions and the bucket-exists check are evaluated inside
 * that transaction, so they are atomic with the write. The extents of a
 * replaced or deleted version are copied out before the old record is
 * overwritten. INDEX_OP_SET_META rewrites a record with new metadata and
 * the same data; INDEX_OP_SET_EXTENTS the same object with its bytes
 * elsewhere (a tier move). Multipart ops are dispatched to upload.c, which publishes a
 * completed upload through the same put path (index__object_write).
 */
#include "index/index_int.h"

#include <errno.h>
#include <inttypes.h>

/*
 * Finds the record of 'key' in bucket 'bucket_id' within 'txn'. Returns
 * 0 and fills 'out' (borrowing the txn's pages), -ENOENT, or -EIO. For a
 * long key the stored full key must match too, so a hash collision reads
 * as absent rather than as another object.
 */
static int
object_lookup(struct index *ix, MDB_txn *txn, uint64_t bucket_id, struct slice key,
              struct index__record *out)
{
    uint8_t lkey[INDEX_LKEY_MAX];
    MDB_val k = {index__objkey_encode(lkey, bucket_id, key), lkey}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_objects, &k, &v));
    if (rc != 0)
        return rc;
    if ((rc = index__record_parse(v.mv_data, v.mv_size, out)) != 0)
        return rc;
    if (key.len > INDEX_DIRECT_MAX) {
        if (!slice_eq(out->full_key, key))
            return -ENOENT;
    } else if (out->full_key.len != 0) {
        return CORRUPT_BKPT("direct key record carries a full key");
    }
    return 0;
}

bool
index__key_is_valid(struct slice key)
{
    return key.len > 0 && key.len <= INDEX_MAX_KEY;
}

int
index_object_get(struct index *ix, uint64_t bucket_id, struct slice key, struct arena *a,
                 struct index_object *out)
{
    MDB_txn *txn = NULL;
    struct index__record r;
    if (!index__key_is_valid(key))
        return -ENOENT;
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = object_lookup(ix, txn, bucket_id, key, &r);
    if (rc == 0)
        index__record_copy(&r, a, out);
    index__read_end(ix, txn);
    return rc;
}

/* ---- write batches ------------------------------------------------------ */

bool
index__object_is_valid(const struct index_object *o)
{
    if (!o || (o->n_extents && !o->extents) || (o->sums_len && !o->sums) ||
        (o->meta_len && !o->meta) || (o->inline_len && !o->inline_data))
        return false;
    return o->n_extents <= UINT32_MAX / INDEX_EXTENT_REC_LEN && o->sums_len <= UINT32_MAX &&
           o->meta_len <= UINT32_MAX && o->inline_len <= UINT32_MAX;
}

int
index__bucket_check(struct index *ix, MDB_txn *txn, uint64_t bucket_id, uint64_t *checked_bid)
{
    if (bucket_id == 0)
        return -ENOENT; /* ids start at 1; 0 is also the "none" cache value */
    if (bucket_id == *checked_bid)
        return 0;
    uint8_t idkey[8];
    index__put_be64(idkey, bucket_id);
    MDB_val k = {8, idkey}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_bucketids, &k, &v));
    if (rc == 0)
        *checked_bid = bucket_id;
    return rc;
}

int
index__share_check(struct index *ix, MDB_txn *txn, const struct index_op *op, bool *is_same)
{
    struct index__record src;
    struct index_extent e;
    *is_same = false;
    if (op->has_share_version_id)
        return index__version_share_check(ix, txn, op, is_same);
    int rc = object_lookup(ix, txn, op->share_bucket_id, op->share_key, &src);
    if (rc == -ENOENT)
        return 0;
    if (rc != 0)
        return rc;
    if (src.obj.n_extents != op->object->n_extents ||
        memcmp(src.obj.etag, op->object->etag, 16) != 0)
        return 0;
    for (uint32_t i = 0; i < src.obj.n_extents; i++) {
        index__record_extent(&src, i, &e);
        const struct index_extent *want = &op->object->extents[i];
        if (e.volume != want->volume || e.flags != want->flags || e.offset != want->offset ||
            e.len != want->len)
            return 0;
    }
    *is_same = true;
    return 0;
}

/*
 * Adds long key 'key' of bucket 'bucket_id' to the bucket's key tree, or
 * removes it ('is_delete'). A key missing from the tree on removal is
 * logged and otherwise ignored: the object must stay deletable. Returns
 * 0 or -errno.
 */
static int
object_tree_update(struct index *ix, MDB_txn *txn, uint64_t bucket_id, struct slice key,
                   bool is_delete)
{
    uint64_t root = INDEX_TREE_ROOT_OBJECTS(bucket_id);
    if (!is_delete)
        return index__tree_insert(ix, txn, root, key);
    int rc = index__tree_remove(ix, txn, root, key);
    if (rc == -ENOENT) {
        log_error("index: a %zu-byte key of bucket %" PRIu64 " was missing from the key tree",
                  key.len, bucket_id);
        rc = 0;
    }
    return rc;
}

int
index__object_write(struct index *ix, MDB_txn *txn, struct index_op *op, bool is_delete)
{
    struct index__record old;
    enum index_versioning vstate;
    bool has_lock;
    int rc;

    /* A versioned bucket keeps every version (version.c); in the others
     * only the null version exists. */
    if ((rc = index__versioning_read(ix, txn, op->bucket_id, &vstate, &has_lock)) != 0)
        return rc;
    if (vstate != INDEX_VERSIONING_OFF)
        return index__version_write(ix, txn, op, is_delete, vstate);
    if (is_delete && op->has_version_id) {
        static const uint8_t null_id[INDEX_VERSION_ID_LEN];
        if (memcmp(op->version_id, null_id, INDEX_VERSION_ID_LEN) != 0)
            return 0;
    }

    uint8_t lkey[INDEX_LKEY_MAX];
    MDB_val k = {index__objkey_encode(lkey, op->bucket_id, op->key), lkey}, v;
    rc = index__err(mdb_get(txn, ix->dbi_objects, &k, &v));
    bool exists = rc == 0;
    if (rc != 0 && rc != -ENOENT)
        return rc;
    if (exists) {
        if ((rc = index__record_parse(v.mv_data, v.mv_size, &old)) != 0)
            return rc;
        if (op->key.len > INDEX_DIRECT_MAX && !slice_eq(old.full_key, op->key)) {
            /* Two keys with one XXH3-128: never expected; refuse rather
             * than overwrite the other object. */
            log_error("index: hash collision on a %zu-byte key", op->key.len);
            op->result = -EIO;
            return 0;
        }
    }
    if (op->if_none_match && exists) {
        op->result = -EEXIST;
        return 0;
    }
    if (op->if_exists && !exists) {
        op->result = -ENODATA;
        return 0;
    }
    if (op->has_if_none_match_etag && exists &&
        memcmp(old.obj.etag, op->if_none_match_etag, 16) == 0) {
        op->result = -EEXIST;
        return 0;
    }
    if (exists && ((op->has_if_size && old.obj.size != op->if_size) ||
                   (op->has_if_mtime_s && old.obj.mtime_ns / 1000000000 != op->if_mtime_s))) {
        op->result = -ESTALE;
        return 0;
    }
    if (op->has_if_match && (!exists || memcmp(old.obj.etag, op->if_match_etag, 16) != 0)) {
        op->result = -ESTALE;
        return 0;
    }
    if (is_delete && !exists)
        return 0;

    /* Copy the old extents out before the put/del invalidates 'old'. */
    if (exists) {
        op->freed = index__record_extents(&old, op->arena);
        op->n_freed = old.obj.n_extents;
    }
    if (!is_delete && op->share_key.len) {
        bool is_same;
        if ((rc = index__share_check(ix, txn, op, &is_same)) != 0)
            return rc;
        if (!is_same) {
            op->result = -ESTALE;
            op->freed = NULL;
            op->n_freed = 0;
            return 0;
        }
        /* Count the new holder first: a copy onto its own source then
         * drops one holder again below and frees nothing. */
        if ((rc = index__extrefs_share(ix, txn, op->object->extents, op->object->n_extents)) != 0)
            return rc;
    }
    if (op->n_freed && (rc = index__extrefs_release(ix, txn, op->freed, &op->n_freed)) != 0)
        return rc;

    /* A long key enters or leaves its bucket's key tree with its record. */
    bool is_long = op->key.len > INDEX_DIRECT_MAX;
    if (is_long && exists == is_delete &&
        (rc = object_tree_update(ix, txn, op->bucket_id, op->key, is_delete)) != 0)
        return rc;
    /* The replaced or deleted version's member index goes with it (also
     * when no version exists: one seek, and nothing left over by any
     * other path can be taken for the new version's). */
    if ((rc = index__members_drop(ix, txn, op->bucket_id, op->key)) != 0)
        return rc;
    if (is_delete)
        return index__err(mdb_del(txn, ix->dbi_objects, &k, NULL));

    /* Version and lock fields (say, of a copy's versioned source) have no
     * place in an unversioned bucket. */
    struct index_object o = *op->object;
    o.version_flags = 0;
    o.retain_until_ns = 0;
    o.lock_mode = INDEX_LOCK_NONE;
    o.has_legal_hold = false;
    size_t key_len = op->key.len > INDEX_DIRECT_MAX ? op->key.len : 0;
    v.mv_size = index__record_len(&o, key_len);
    v.mv_data = NULL;
    if ((rc = index__err(mdb_put(txn, ix->dbi_objects, &k, &v, MDB_RESERVE))) != 0)
        return rc;
    index__record_format(v.mv_data, &o, op->key.ptr, key_len);
    if (op->members)
        return index__members_write(ix, txn, op->bucket_id, op->key, op->object->etag, op->members);
    return 0;
}

/* INDEX_OP_MEMBERS_PUT: replaces the member index of op->key when the
 * object still has etag op->if_match_etag (else op->result = -ESTALE). */
static int
members_put(struct index *ix, MDB_txn *txn, struct index_op *op)
{
    struct index__record cur;
    int rc = object_lookup(ix, txn, op->bucket_id, op->key, &cur);
    if (rc == -ENOENT || (rc == 0 && memcmp(cur.obj.etag, op->if_match_etag, 16) != 0)) {
        op->result = -ESTALE;
        return 0;
    }
    if (rc != 0)
        return rc;
    if ((rc = index__members_drop(ix, txn, op->bucket_id, op->key)) != 0)
        return rc;
    return index__members_write(ix, txn, op->bucket_id, op->key, op->if_match_etag, op->members);
}

/* Writes 'o' back as the record of op->key in the objects database (a
 * rewrite of an existing record in place: SET_META, SET_EXTENTS). */
static int
object_record_rewrite(struct index *ix, MDB_txn *txn, const struct index_op *op,
                      const struct index_object *o)
{
    uint8_t lkey[INDEX_LKEY_MAX];
    MDB_val k = {index__objkey_encode(lkey, op->bucket_id, op->key), lkey}, v;
    size_t key_len = op->key.len > INDEX_DIRECT_MAX ? op->key.len : 0;
    v.mv_size = index__record_len(o, key_len);
    v.mv_data = NULL;
    int rc = index__err(mdb_put(txn, ix->dbi_objects, &k, &v, MDB_RESERVE));
    if (rc != 0)
        return rc;
    index__record_format(v.mv_data, o, op->key.ptr, key_len);
    return 0;
}

/*
 * INDEX_OP_SET_META (contract in index.h): copies the stored record out of
 * the txn's pages first, since the put below may reuse them, then writes
 * it back with the new metadata blob. Same return convention as
 * index__object_write.
 */
static int
object_set_meta(struct index *ix, MDB_txn *txn, struct index_op *op)
{
    struct index__record old;
    struct index_object o;
    enum index_versioning vstate;
    bool has_lock;
    int rc = index__versioning_read(ix, txn, op->bucket_id, &vstate, &has_lock);
    if (rc != 0)
        return rc;
    if (vstate != INDEX_VERSIONING_OFF)
        return index__version_set_meta(ix, txn, op);
    static const uint8_t null_id[INDEX_VERSION_ID_LEN];
    if (op->has_version_id && memcmp(op->version_id, null_id, INDEX_VERSION_ID_LEN) != 0) {
        op->result = -ENOENT;
        return 0;
    }
    rc = object_lookup(ix, txn, op->bucket_id, op->key, &old);
    if (rc == -ENOENT) {
        op->result = -ENOENT;
        return 0;
    }
    if (rc != 0)
        return rc;
    if (memcmp(old.obj.etag, op->object->etag, 16) != 0 ||
        old.obj.mtime_ns != op->object->mtime_ns) {
        op->result = -ESTALE;
        return 0;
    }
    index__record_copy(&old, op->arena, &o);
    o.meta = op->object->meta;
    o.meta_len = op->object->meta_len;
    return object_record_rewrite(ix, txn, op, &o);
}

/*
 * INDEX_OP_SET_EXTENTS (contract in index.h): checks the stored record is
 * the version the mover read, then writes it back with the new extents,
 * sums and inline bytes, and hands the old extents to the extref count
 * (a copy may still hold them). Same return convention as
 * index__object_write.
 */
static int
object_set_extents(struct index *ix, MDB_txn *txn, struct index_op *op)
{
    struct index__record old;
    struct index_object o;
    /* A versioned bucket keeps each version's extents in `versions`: the
     * version record moves (and its `objects` copy with it). */
    enum index_versioning vstate;
    bool has_lock;
    int rc = index__versioning_read(ix, txn, op->bucket_id, &vstate, &has_lock);
    if (rc != 0)
        return rc;
    if (vstate != INDEX_VERSIONING_OFF)
        return index__version_set_extents(ix, txn, op);
    static const uint8_t null_id[INDEX_VERSION_ID_LEN];
    if (op->has_version_id && memcmp(op->version_id, null_id, INDEX_VERSION_ID_LEN) != 0) {
        op->result = -ENOENT;
        return 0;
    }
    rc = object_lookup(ix, txn, op->bucket_id, op->key, &old);
    if (rc == -ENOENT) {
        op->result = -ENOENT;
        return 0;
    }
    if (rc != 0)
        return rc;
    if ((rc = index__extents_swap(ix, txn, op, &old, &o)) != 0 || op->result != 0)
        return rc;
    return object_record_rewrite(ix, txn, op, &o);
}

int
index__extents_swap(struct index *ix, MDB_txn *txn, struct index_op *op,
                    const struct index__record *old, struct index_object *o)
{
    struct index_extent e;
    bool is_same = memcmp(old->obj.etag, op->object->etag, 16) == 0 &&
                   old->obj.mtime_ns == op->object->mtime_ns &&
                   old->obj.n_extents == op->n_expect_extents &&
                   old->obj.inline_len == op->expect_inline_len;
    for (uint32_t i = 0; is_same && i < old->obj.n_extents; i++) {
        index__record_extent(old, i, &e);
        const struct index_extent *want = &op->expect_extents[i];
        is_same = e.volume == want->volume && e.flags == want->flags && e.offset == want->offset &&
                  e.len == want->len;
    }
    if (!is_same) {
        op->result = -ESTALE;
        return 0;
    }
    index__record_copy(old, op->arena, o);
    op->freed = index__record_extents(old, op->arena);
    op->n_freed = old->obj.n_extents;
    int rc = 0;
    if (op->n_freed && (rc = index__extrefs_release(ix, txn, op->freed, &op->n_freed)) != 0)
        return rc;
    o->extents = op->object->extents;
    o->n_extents = op->object->n_extents;
    o->sums = op->object->sums;
    o->sums_len = op->object->sums_len;
    o->inline_data = op->object->inline_data;
    o->inline_len = op->object->inline_len;
    return 0;
}

/*
 * Applies 'op' inside write txn 'txn'. Sets op->result for the outcomes an
 * op can have on its own (condition failed, bucket gone) and returns 0;
 * returns -errno when the transaction itself failed and must be aborted.
 * 'checked_bid' caches the last bucket id known to exist in this txn.
 */
static int
apply_op(struct index *ix, MDB_txn *txn, struct index_op *op, uint64_t *checked_bid)
{
    int rc;

    op->result = 0;
    op->freed = NULL;
    op->n_freed = 0;
    op->result_version_flags = 0;
    memset(op->result_version_id, 0, sizeof(op->result_version_id));
    if (!op->arena) {
        op->result = -EINVAL;
        return 0;
    }
    switch (op->kind) {
    case INDEX_OP_PUT:
    case INDEX_OP_DELETE:
    case INDEX_OP_MEMBERS_PUT:
    case INDEX_OP_SET_META:
    case INDEX_OP_SET_LOCK:
    case INDEX_OP_SET_EXTENTS:
        break;
    case INDEX_OP_UPLOAD_CREATE:
    case INDEX_OP_PART_PUT:
    case INDEX_OP_UPLOAD_ABORT:
    case INDEX_OP_UPLOAD_COMPLETE:
        return index__upload_apply(ix, txn, op, checked_bid);
    default:
        op->result = -EINVAL;
        return 0;
    }
    if (!index__key_is_valid(op->key) ||
        ((op->kind == INDEX_OP_PUT || op->kind == INDEX_OP_SET_META ||
          op->kind == INDEX_OP_SET_LOCK || op->kind == INDEX_OP_SET_EXTENTS) &&
         !index__object_is_valid(op->object)) ||
        (op->kind == INDEX_OP_SET_EXTENTS && op->n_expect_extents && !op->expect_extents)) {
        op->result = -EINVAL;
        return 0;
    }
    rc = index__bucket_check(ix, txn, op->bucket_id, checked_bid);
    if (rc == -ENOENT) {
        op->result = -ENOENT;
        return 0;
    }
    if (rc != 0)
        return rc;
    if (op->kind == INDEX_OP_MEMBERS_PUT) {
        if (op->members)
            return members_put(ix, txn, op);
        op->result = -EINVAL;
        return 0;
    }
    if (op->kind == INDEX_OP_SET_META)
        return object_set_meta(ix, txn, op);
    if (op->kind == INDEX_OP_SET_LOCK) {
        enum index_versioning vstate;
        bool has_lock;
        if ((rc = index__versioning_read(ix, txn, op->bucket_id, &vstate, &has_lock)) != 0)
            return rc;
        if (vstate == INDEX_VERSIONING_OFF) {
            op->result = -EINVAL;
            return 0;
        }
        return index__version_set_lock(ix, txn, op);
    }
    if (op->kind == INDEX_OP_SET_EXTENTS)
        return object_set_extents(ix, txn, op);
    return index__object_write(ix, txn, op, op->kind == INDEX_OP_DELETE);
}

int
index_commit(struct index *ix, struct index_op *ops, size_t n_ops)
{
    MDB_txn *txn = NULL;
    uint64_t checked_bid = 0; /* no bucket has id 0 */
    size_t i = 0;
    int rc;

    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    for (i = 0; i < n_ops; i++)
        if ((rc = apply_op(ix, txn, &ops[i], &checked_bid)) != 0)
            goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;
    if (rc != 0)
        goto fail;
    return 0;

fail:
    if (txn)
        mdb_txn_abort(txn);
    /* Nothing was applied: no op may report freed extents. */
    for (size_t j = 0; j < n_ops; j++) {
        ops[j].result = rc;
        ops[j].freed = NULL;
        ops[j].n_freed = 0;
    }
    if (rc != -ENOSPC)
        log_error("index: commit of %zu ops failed at op %zu: %s", n_ops, i, strerror(-rc));
    return rc;
}

/* ---- scans --------------------------------------------------------------- */

/* Calls 'fn' for every extent of every record in 'dbi' (object or part
 * records: one codec) within read txn 'txn'. Returns 0 or -errno. */
static int
extents_scan_dbi(struct index *ix, MDB_txn *txn, MDB_dbi dbi, bool check_shared, index_extent_fn fn,
                 void *ctx)
{
    struct index__iter it;
    struct index__record r;
    struct index_extent e;
    int rc;

    if ((rc = index__iter_begin(&it, txn, dbi, NULL, 0)) != 0)
        goto fail;
    while ((rc = index__iter_next(&it)) == 1) {
        if ((rc = index__record_parse(it.v.mv_data, it.v.mv_size, &r)) != 0)
            goto fail;
        /* The latest version's copy in "objects": "versions" holds them. */
        if (dbi == ix->dbi_objects && (r.obj.version_flags & INDEX_VERSION_HAS_ID))
            continue;
        for (uint32_t i = 0; i < r.obj.n_extents; i++) {
            index__record_extent(&r, i, &e);
            bool shared = false;
            if (check_shared && (rc = index__extrefs_is_shared(ix, txn, &e, &shared)) != 0)
                goto fail;
            if (!shared)
                fn(ctx, &e);
        }
    }

fail:
    index__iter_end(&it);
    return rc;
}

int
index_extents_scan(struct index *ix, index_extent_fn fn, void *ctx)
{
    MDB_txn *txn = NULL;
    int rc;

    /* One snapshot for both, so a part published as an object by a
     * CompleteMultipartUpload is seen exactly once. */
    /* Shared extents are skipped in the records and reported once from
     * the extrefs table (only objects share; parts never do). */
    if ((rc = index__read_begin(ix, &txn)) == 0 &&
        (rc = extents_scan_dbi(ix, txn, ix->dbi_objects, true, fn, ctx)) == 0 &&
        (rc = extents_scan_dbi(ix, txn, ix->dbi_versions, true, fn, ctx)) == 0 &&
        (rc = extents_scan_dbi(ix, txn, ix->dbi_parts, false, fn, ctx)) == 0)
        rc = index__extrefs_scan(ix, txn, fn, ctx);
    index__read_end(ix, txn);
    return rc;
}

/*
 * Copies the object after LMDB key 'last'/'*last_len' (the first one when
 * '*last_len' is 0) into 'a': '*bucket_id', '*key' and '*obj', and makes it
 * the new 'last'. Each call is its own read snapshot. Returns 1 for an
 * object, 0 when none follows, or -errno.
 */
static int
object_scan_next(struct index *ix, uint8_t *last, size_t *last_len, struct arena *a,
                 uint64_t *bucket_id, struct slice *key, struct index_object *obj)
{
    MDB_txn *txn = NULL;
    struct index__iter it = {0};
    struct index__record r;
    int rc;

    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__iter_begin(&it, txn, ix->dbi_objects, NULL, 0)) != 0)
        goto fail;
    if ((rc = index__iter_after(&it, last, *last_len)) != 1)
        goto fail;
    MDB_val k = it.k, v = it.v;
    if (k.mv_size <= INDEX_BID_LEN || k.mv_size > INDEX_LKEY_MAX) {
        rc = CORRUPT_BKPT("object key length");
        goto fail;
    }
    if ((rc = index__record_parse(v.mv_data, v.mv_size, &r)) != 0)
        goto fail;
    if (index__objkey_is_long(k.mv_size) != (r.full_key.len != 0)) {
        rc = CORRUPT_BKPT("object record full key does not match its LMDB key");
        goto fail;
    }
    memcpy(last, k.mv_data, k.mv_size);
    *last_len = k.mv_size;
    *bucket_id = index__get_be64(k.mv_data);
    struct slice full = r.full_key.len ? r.full_key
                                       : (struct slice){(const char *)k.mv_data + INDEX_BID_LEN,
                                                        k.mv_size - INDEX_BID_LEN};
    *key = (struct slice){arena_memdup(a, full.ptr, full.len), full.len};
    index__record_copy(&r, a, obj);
    rc = 1;

fail:
    index__iter_end(&it);
    index__read_end(ix, txn);
    return rc;
}

/*
 * Scrub walks the whole index while it reads every object's data, which
 * takes hours on a full disk: a read snapshot held that long would pin
 * every page freed meanwhile and grow the map. So each object is fetched
 * in its own (pooled, cheap) snapshot, resuming strictly after the last
 * LMDB key seen, and 'fn' runs outside any transaction. LMDB keys are
 * unique and only grow along the walk, so no object is visited twice;
 * objects written or deleted during the scan may or may not be seen.
 */
int
index_object_scan(struct index *ix, index_object_fn fn, void *ctx)
{
    struct arena *a = arena_create(1 << 14);
    uint8_t last[INDEX_LKEY_MAX];
    size_t last_len = 0;
    uint64_t bucket_id = 0;
    struct slice key = SLICE_NULL;
    struct index_object obj = {0};
    int rc;

    while ((rc = object_scan_next(ix, last, &last_len, a, &bucket_id, &key, &obj)) == 1) {
        int stop = fn(ctx, bucket_id, key, &obj);
        arena_clear(a);
        if (stop)
            break;
    }
    if (rc > 0)
        rc = 0;
    arena_destroy(a);
    return rc;
}
