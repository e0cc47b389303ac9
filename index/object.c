/*
 * object.c: object lookups and the write batch (group commit). All ops of
 * a batch run in one LMDB write transaction and become durable with one
 * commit, so N concurrent PUT completions cost one fsync. Conditions and
 * the bucket-exists check are evaluated inside that transaction, so they
 * are atomic with the write. The extents of a replaced or deleted version
 * are copied out before the old record is overwritten.
 */
#include "index/index_int.h"

#include <errno.h>

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

static bool
key_is_valid(struct slice key)
{
    return key.len > 0 && key.len <= INDEX_MAX_KEY;
}

int
index_object_get(struct index *ix, uint64_t bucket_id, struct slice key, struct arena *a,
                 struct index_object *out)
{
    MDB_txn *txn = NULL;
    struct index__record r;
    if (!key_is_valid(key))
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

static bool
object_is_valid(const struct index_object *o)
{
    if (!o || (o->n_extents && !o->extents) || (o->sums_len && !o->sums) ||
        (o->meta_len && !o->meta) || (o->inline_len && !o->inline_data))
        return false;
    return o->n_extents <= UINT32_MAX / INDEX_EXTENT_REC_LEN && o->sums_len <= UINT32_MAX &&
           o->meta_len <= UINT32_MAX && o->inline_len <= UINT32_MAX;
}

/* Returns 0 when bucket 'bucket_id' exists in 'txn', else -ENOENT/-EIO. */
static int
bucket_exists(struct index *ix, MDB_txn *txn, uint64_t bucket_id)
{
    uint8_t idkey[8];
    index__put_be64(idkey, bucket_id);
    MDB_val k = {8, idkey}, v;
    return index__err(mdb_get(txn, ix->dbi_bucketids, &k, &v));
}

/*
 * Applies 'op' inside write txn 'txn'. Sets op->result for the outcomes an
 * op can have on its own (condition failed, bucket gone) and returns 0;
 * returns -errno when the transaction itself failed and must be aborted.
 * 'checked_bid' caches the last bucket id known to exist in this txn
 * (buckets cannot be deleted while the txn is open).
 */
static int
apply_op(struct index *ix, MDB_txn *txn, struct index_op *op, uint64_t *checked_bid)
{
    struct index__record old;
    int rc;

    op->result = 0;
    op->freed = NULL;
    op->n_freed = 0;
    if (!key_is_valid(op->key) || !op->arena ||
        (op->kind == INDEX_OP_PUT && !object_is_valid(op->object)) ||
        (op->kind != INDEX_OP_PUT && op->kind != INDEX_OP_DELETE)) {
        op->result = -EINVAL;
        return 0;
    }
    if (op->bucket_id != *checked_bid) {
        rc = bucket_exists(ix, txn, op->bucket_id);
        if (rc == -ENOENT) {
            op->result = -ENOENT;
            return 0;
        }
        if (rc != 0)
            return rc;
        *checked_bid = op->bucket_id;
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
    if (op->has_if_match && (!exists || memcmp(old.obj.etag, op->if_match_etag, 16) != 0)) {
        op->result = -ESTALE;
        return 0;
    }
    if (op->kind == INDEX_OP_DELETE && !exists)
        return 0;

    /* Copy the old extents out before the put/del invalidates 'old'. */
    if (exists && old.obj.n_extents) {
        op->freed = arena_alloc(op->arena, (size_t)old.obj.n_extents * sizeof(*op->freed));
        for (uint32_t i = 0; i < old.obj.n_extents; i++)
            index__record_extent(&old, i, &op->freed[i]);
        op->n_freed = old.obj.n_extents;
    }

    if (op->kind == INDEX_OP_DELETE)
        return index__err(mdb_del(txn, ix->dbi_objects, &k, NULL));

    size_t key_len = op->key.len > INDEX_DIRECT_MAX ? op->key.len : 0;
    v.mv_size = index__record_len(op->object, key_len);
    v.mv_data = NULL;
    if ((rc = index__err(mdb_put(txn, ix->dbi_objects, &k, &v, MDB_RESERVE))) != 0)
        return rc;
    index__record_format(v.mv_data, op->object, op->key.ptr, key_len);
    return 0;
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

/* ---- space accounting --------------------------------------------------- */

int
index_extents_scan(struct index *ix, index_extent_fn fn, void *ctx)
{
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    struct index__record r;
    struct index_extent e;
    MDB_val k, v;
    int rc;

    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__err(mdb_cursor_open(txn, ix->dbi_objects, &cur))) != 0)
        goto fail;
    for (rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_FIRST)); rc == 0;
         rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_NEXT))) {
        if ((rc = index__record_parse(v.mv_data, v.mv_size, &r)) != 0)
            goto fail;
        for (uint32_t i = 0; i < r.obj.n_extents; i++) {
            index__record_extent(&r, i, &e);
            fn(ctx, &e);
        }
    }
    if (rc == -ENOENT)
        rc = 0;
    /* HOOK: when multipart uploads land, also walk the extents of every
     * uploaded-but-not-completed part here (their own database), so the
     * allocator does not hand out space that a pending part holds. */

fail:
    if (cur)
        mdb_cursor_close(cur);
    index__read_end(ix, txn);
    return rc;
}
