/*
 * bucket.c: buckets. A bucket lives in two databases kept in step inside
 * one write transaction: "buckets" (name -> record) and "bucketids"
 * (id -> name). Ids come from the counter in "meta" and are never reused,
 * so a stale id held by a request that raced a DeleteBucket can never
 * write into a newer bucket of the same name.
 */
#include "index/index_int.h"

#include <errno.h>

static const char NEXT_ID_KEY[] = "next_bucket_id";

#define INDEX_BUCKET_PUBLIC_READ 0x01

/* Formats 'b' into 'out' (>= 19 + 63 bytes); returns the length. */
static size_t
bucket_format(uint8_t *out, const struct index_bucket *b)
{
    size_t owner_len = strlen(b->owner);
    out[0] = INDEX_BUCKET_VERSION;
    index__put_le64(out + 1, b->id);
    index__put_le64(out + 9, (uint64_t)b->created_ns);
    out[17] = (uint8_t)owner_len;
    memcpy(out + 18, b->owner, owner_len);
    out[18 + owner_len] = b->is_public_read ? INDEX_BUCKET_PUBLIC_READ : 0;
    return 19 + owner_len;
}

/* Parses the record 'v' of bucket 'name' into 'out'. Returns 0 or -EIO. */
static int
bucket_parse(const MDB_val *name, const MDB_val *v, struct index_bucket *out)
{
    const uint8_t *p = v->mv_data;
    memset(out, 0, sizeof(*out));
    if (name->mv_size == 0 || name->mv_size > INDEX_MAX_BUCKET)
        return CORRUPT_BKPT("bucket name length");
    if (v->mv_size < 18 || p[0] != INDEX_BUCKET_VERSION)
        return CORRUPT_BKPT("bucket record header");
    size_t owner_len = p[17];
    /* Records written before users existed end after the owner. */
    if (owner_len >= sizeof(out->owner) ||
        (v->mv_size != 18 + owner_len && v->mv_size != 19 + owner_len))
        return CORRUPT_BKPT("bucket record length");
    if (v->mv_size == 19 + owner_len)
        out->is_public_read = (p[18 + owner_len] & INDEX_BUCKET_PUBLIC_READ) != 0;
    memcpy(out->name, name->mv_data, name->mv_size);
    out->id = index__get_le64(p + 1);
    out->created_ns = (int64_t)index__get_le64(p + 9);
    memcpy(out->owner, p + 18, owner_len);
    return 0;
}

/* Looks up bucket 'name' in 'txn'. Returns 0, -ENOENT or -EIO. */
static int
bucket_lookup(struct index *ix, MDB_txn *txn, struct slice name, struct index_bucket *out)
{
    MDB_val k = {name.len, (void *)name.ptr}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_buckets, &k, &v));
    if (rc == 0)
        rc = bucket_parse(&k, &v, out);
    return rc;
}

static bool
name_is_valid(struct slice name)
{
    return name.len > 0 && name.len <= INDEX_MAX_BUCKET && !memchr(name.ptr, '\0', name.len);
}

int
index_bucket_create(struct index *ix, struct slice name, const char *owner, int64_t now_ns,
                    struct index_bucket *out)
{
    MDB_txn *txn = NULL;
    struct index_bucket b;
    int rc;

    if (!owner)
        owner = "";
    if (!name_is_valid(name) || strlen(owner) >= sizeof(b.owner))
        return -EINVAL;
    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    rc = bucket_lookup(ix, txn, name, &b);
    if (rc == 0) {
        if (out)
            *out = b;
        rc = -EEXIST;
        goto fail;
    }
    if (rc != -ENOENT)
        goto fail;

    MDB_val mk = {sizeof(NEXT_ID_KEY) - 1, (void *)NEXT_ID_KEY}, mv;
    uint64_t id = 1;
    rc = index__err(mdb_get(txn, ix->dbi_meta, &mk, &mv));
    if (rc == 0) {
        if (mv.mv_size != 8) {
            rc = CORRUPT_BKPT("meta next_bucket_id");
            goto fail;
        }
        id = index__get_le64(mv.mv_data);
    } else if (rc != -ENOENT) {
        goto fail;
    }
    if (id == 0 || id == UINT64_MAX) {
        rc = CORRUPT_BKPT("meta next_bucket_id value");
        goto fail;
    }

    memset(&b, 0, sizeof(b));
    memcpy(b.name, name.ptr, name.len);
    b.id = id;
    b.created_ns = now_ns;
    memcpy(b.owner, owner, strlen(owner));
    uint8_t rec[19 + sizeof(b.owner)], idkey[8], next[8];
    index__put_be64(idkey, id);
    index__put_le64(next, id + 1);
    MDB_val bk = {name.len, (void *)name.ptr}, bv = {bucket_format(rec, &b), rec};
    MDB_val ik = {8, idkey}, iv = {name.len, (void *)name.ptr};
    MDB_val nv = {8, next};
    if ((rc = index__err(mdb_put(txn, ix->dbi_buckets, &bk, &bv, 0))) != 0 ||
        (rc = index__err(mdb_put(txn, ix->dbi_bucketids, &ik, &iv, 0))) != 0 ||
        (rc = index__err(mdb_put(txn, ix->dbi_meta, &mk, &nv, 0))) != 0)
        goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;
    if (rc != 0)
        goto fail;
    if (out)
        *out = b;
    return 0;

fail:
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

int
index_bucket_get(struct index *ix, struct slice name, struct index_bucket *out)
{
    MDB_txn *txn = NULL;
    if (!name_is_valid(name))
        return -ENOENT;
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = bucket_lookup(ix, txn, name, out);
    index__read_end(ix, txn);
    return rc;
}

int
index_bucket_set_public(struct index *ix, struct slice name, bool is_public_read)
{
    MDB_txn *txn = NULL;
    struct index_bucket b;
    uint8_t rec[19 + sizeof(b.owner)];
    int rc;

    if (!name_is_valid(name))
        return -ENOENT;
    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    if ((rc = bucket_lookup(ix, txn, name, &b)) != 0)
        goto fail;
    b.is_public_read = is_public_read;
    MDB_val bk = {name.len, (void *)name.ptr}, bv = {bucket_format(rec, &b), rec};
    if ((rc = index__err(mdb_put(txn, ix->dbi_buckets, &bk, &bv, 0))) != 0)
        goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;

fail:
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

int
index_bucket_delete(struct index *ix, struct slice name, uint64_t expected_id)
{
    MDB_txn *txn = NULL;
    struct index__iter it = {0};
    struct index_bucket b;
    int rc;

    if (!name_is_valid(name))
        return -ENOENT;
    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    if ((rc = bucket_lookup(ix, txn, name, &b)) != 0)
        goto fail;
    /* The caller authorized the deletion of one bucket: a bucket of the
     * same name made since (a new id) is someone else's decision. */
    if (b.id != expected_id) {
        rc = -ESTALE;
        goto fail;
    }

    /* Empty means no object key, no upload key and no version (a delete
     * marker too) starts with the bucket id: one seek in each database. */
    uint8_t idkey[8];
    index__put_be64(idkey, b.id);
    const MDB_dbi dbis[3] = {ix->dbi_objects, ix->dbi_bucketuploads, ix->dbi_versions};
    for (size_t i = 0; i < 3; i++) {
        if ((rc = index__iter_begin(&it, txn, dbis[i], idkey, sizeof(idkey))) != 0 ||
            (rc = index__iter_next(&it)) != 0) {
            if (rc == 1)
                rc = i == 0 ? -ENOTEMPTY : -EBUSY;
            goto fail;
        }
        index__iter_end(&it);
    }

    MDB_val bk = {name.len, (void *)name.ptr}, ik = {8, idkey};
    if ((rc = index__err(mdb_del(txn, ix->dbi_buckets, &bk, NULL))) != 0)
        goto fail;
    rc = index__err(mdb_del(txn, ix->dbi_bucketids, &ik, NULL));
    if (rc == -ENOENT)
        rc = CORRUPT_BKPT("bucket without its id record");
    if (rc != 0)
        goto fail;
    if ((rc = index__bucket_config_drop(ix, txn, b.id)) != 0)
        goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;
    if (rc != 0)
        goto fail;
    return 0;

fail:
    index__iter_end(&it);
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

int
index_bucket_list(struct index *ix, index_bucket_fn fn, void *ctx)
{
    MDB_txn *txn = NULL;
    struct index__iter it = {0};
    struct index_bucket b;
    int rc;

    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__iter_begin(&it, txn, ix->dbi_buckets, NULL, 0)) != 0)
        goto fail;
    while ((rc = index__iter_next(&it)) == 1) {
        if ((rc = bucket_parse(&it.k, &it.v, &b)) != 0)
            goto fail;
        if (fn(ctx, &b) != 0)
            break;
    }
    if (rc > 0)
        rc = 0;

fail:
    index__iter_end(&it);
    index__read_end(ix, txn);
    return rc;
}

int
index_bucket_count(struct index *ix, uint64_t bucket_id, uint64_t *n_objects, uint64_t *n_bytes)
{
    return index_bucket_usage(ix, bucket_id, UINT64_MAX, n_objects, n_bytes, NULL);
}

int
index_bucket_usage(struct index *ix, uint64_t bucket_id, uint64_t max_objects, uint64_t *n_objects,
                   uint64_t *n_bytes, bool *is_truncated)
{
    MDB_txn *txn = NULL;
    struct index__iter it = {0};
    struct index__record r;
    uint8_t idkey[8];
    uint64_t n = 0, bytes = 0;
    bool is_cut = false;
    int rc;

    index__put_be64(idkey, bucket_id);
    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__iter_begin(&it, txn, ix->dbi_objects, idkey, sizeof(idkey))) != 0)
        goto fail;
    while ((rc = index__iter_next(&it)) == 1) {
        if (n == max_objects) {
            is_cut = true;
            rc = 0;
            break;
        }
        if ((rc = index__record_parse(it.v.mv_data, it.v.mv_size, &r)) != 0)
            goto fail;
        n++;
        bytes += r.obj.size;
    }
    if (rc == 0) {
        if (n_objects)
            *n_objects = n;
        if (n_bytes)
            *n_bytes = bytes;
        if (is_truncated)
            *is_truncated = is_cut;
    }

fail:
    index__iter_end(&it);
    index__read_end(ix, txn);
    return rc;
}
