/*
 * bucket_config.c: the per-bucket configurations of the "bucketconfig"
 * database (lifecycle, tagging; later policy, CORS, encryption,
 * versioning), one opaque value per (bucket id, kind).
 *
 * Invariant: a value exists only for a bucket id present in "bucketids".
 * put checks the id inside its write transaction, and index_bucket_delete
 * drops the bucket's values in its own (index__bucket_config_drop), so a
 * bucket re-created under the same name (a new id) starts bare.
 */
#include "index/index_int.h"

#include <errno.h>

static bool
kind_is_valid(enum index_bucket_config_kind kind)
{
    return (int)kind > 0 && (int)kind < 256;
}

static void
config_key(uint8_t out[INDEX_BUCKETCONFIG_KEY_LEN], uint64_t bucket_id,
           enum index_bucket_config_kind kind)
{
    index__put_be64(out, bucket_id);
    out[INDEX_BID_LEN] = (uint8_t)kind;
}

int
index_bucket_config_put(struct index *ix, uint64_t bucket_id, enum index_bucket_config_kind kind,
                        const void *val, size_t len)
{
    MDB_txn *txn = NULL;
    uint8_t key[INDEX_BUCKETCONFIG_KEY_LEN], idkey[INDEX_BID_LEN];
    int rc;

    if (!kind_is_valid(kind) || !val || len == 0 || len > INDEX_BUCKET_CONFIG_MAX)
        return -EINVAL;
    if (bucket_id == 0)
        return -ENOENT;
    config_key(key, bucket_id, kind);
    index__put_be64(idkey, bucket_id);
    MDB_val k = {sizeof(key), key}, v = {len, (void *)val}, ik = {sizeof(idkey), idkey}, iv;
    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    if ((rc = index__err(mdb_get(txn, ix->dbi_bucketids, &ik, &iv))) != 0)
        goto fail;
    if ((rc = index__err(mdb_put(txn, ix->dbi_bucketconfig, &k, &v, 0))) != 0)
        goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;

fail:
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

int
index_bucket_config_get(struct index *ix, uint64_t bucket_id, enum index_bucket_config_kind kind,
                        struct arena *a, const void **val, size_t *len)
{
    MDB_txn *txn = NULL;
    uint8_t key[INDEX_BUCKETCONFIG_KEY_LEN];
    int rc;

    if (!kind_is_valid(kind))
        return -ENOENT;
    config_key(key, bucket_id, kind);
    MDB_val k = {sizeof(key), key}, v;
    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__err(mdb_get(txn, ix->dbi_bucketconfig, &k, &v))) != 0)
        goto fail;
    if (v.mv_size == 0 || v.mv_size > INDEX_BUCKET_CONFIG_MAX) {
        rc = CORRUPT_BKPT("bucket configuration of a bad length");
        goto fail;
    }
    *val = arena_memdup(a, v.mv_data, v.mv_size);
    *len = v.mv_size;

fail:
    index__read_end(ix, txn);
    return rc;
}

int
index_bucket_config_delete(struct index *ix, uint64_t bucket_id, enum index_bucket_config_kind kind)
{
    uint8_t key[INDEX_BUCKETCONFIG_KEY_LEN];

    if (!kind_is_valid(kind))
        return -ENOENT;
    config_key(key, bucket_id, kind);
    MDB_val k = {sizeof(key), key};
    return index__write_one(ix, ix->dbi_bucketconfig, &k, NULL);
}

int
index__bucket_config_drop(struct index *ix, MDB_txn *txn, uint64_t bucket_id)
{
    MDB_cursor *cur = NULL;
    uint8_t idkey[INDEX_BID_LEN];
    int rc;

    index__put_be64(idkey, bucket_id);
    if ((rc = index__err(mdb_cursor_open(txn, ix->dbi_bucketconfig, &cur))) != 0)
        goto fail;
    MDB_val k = {sizeof(idkey), idkey}, v;
    rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE));
    while (rc == 0 && k.mv_size == INDEX_BUCKETCONFIG_KEY_LEN &&
           memcmp(k.mv_data, idkey, sizeof(idkey)) == 0) {
        if ((rc = index__err(mdb_cursor_del(cur, 0))) != 0)
            goto fail;
        k = (MDB_val){sizeof(idkey), idkey};
        rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE));
    }
    if (rc == -ENOENT)
        rc = 0;

fail:
    if (cur)
        mdb_cursor_close(cur);
    return rc;
}

int
index_bucket_config_list(struct index *ix, enum index_bucket_config_kind kind,
                         index_bucket_config_fn fn, void *ctx)
{
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    struct arena *a = NULL;
    int rc;

    if (!kind_is_valid(kind))
        return 0;
    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__err(mdb_cursor_open(txn, ix->dbi_bucketconfig, &cur))) != 0)
        goto fail;
    a = arena_create(0);
    MDB_val k, v;
    for (rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_FIRST)); rc == 0;
         rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_NEXT))) {
        if (k.mv_size != INDEX_BUCKETCONFIG_KEY_LEN) {
            rc = CORRUPT_BKPT("bucket configuration key of a bad length");
            goto fail;
        }
        const uint8_t *kp = k.mv_data;
        if (kp[INDEX_BID_LEN] != (uint8_t)kind)
            continue;
        if (v.mv_size == 0 || v.mv_size > INDEX_BUCKET_CONFIG_MAX) {
            rc = CORRUPT_BKPT("bucket configuration of a bad length");
            goto fail;
        }
        const void *val = arena_memdup(a, v.mv_data, v.mv_size);
        int stop = fn(ctx, index__get_be64(kp), val, v.mv_size);
        arena_clear(a);
        if (stop)
            break;
    }
    if (rc == -ENOENT)
        rc = 0;

fail:
    if (cur)
        mdb_cursor_close(cur);
    index__read_end(ix, txn);
    if (a)
        arena_destroy(a);
    return rc;
}
