/*
 * env.c: opening and closing the LMDB environment, the pool of reusable
 * read transactions, and the mapping of LMDB codes to -errno.
 *
 * Readers never block the writer or each other (MVCC). Beginning a read
 * transaction costs a reader-slot search, so finished ones are reset
 * (mdb_txn_reset keeps the slot) and parked in a small pool; the next
 * reader on any thread renews one (MDB_NOTLS makes this legal). A pool
 * rather than thread-local slots: a thread that exits can't strand a
 * reader slot, and index_close() can find and abort every parked txn.
 */
#include "index/index_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Parked read transactions kept at most; beyond this they are aborted. */
#define INDEX_POOL_MAX 256
/* Reader slots in the lock file (one per concurrent read txn). */
#define INDEX_MAX_READERS 1024

int
index__err(int rc)
{
    switch (rc) {
    case MDB_SUCCESS:
        return 0;
    case MDB_NOTFOUND:
        return -ENOENT;
    case MDB_KEYEXIST:
        return -EEXIST;
    case MDB_MAP_FULL:
    case MDB_TXN_FULL:
        return -ENOSPC;
    case MDB_READERS_FULL:
    case MDB_MAP_RESIZED:
        return -EAGAIN;
    case MDB_BAD_VALSIZE:
        return -EINVAL;
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH:
        return CORRUPT_BKPT(mdb_strerror(rc));
    default:
        if (rc > 0 && rc < 4096)
            return -rc; /* an errno from the OS */
        log_error("index: lmdb: %s", mdb_strerror(rc));
        return -EIO;
    }
}

/* Opens (creating) the named database 'name' in 'txn' into '*dbi'. */
static int
open_dbi(MDB_txn *txn, const char *name, MDB_dbi *dbi)
{
    return mdb_dbi_open(txn, name, MDB_CREATE, dbi);
}

/*
 * Fills the key tree (keys.h) of an environment made before it existed,
 * inside the opening write txn 'txn': every long object key and every
 * upload. One pass over "objects" and "uploads", once. Returns 0 or -errno.
 */
static int
tree_build(struct index *ix, MDB_txn *txn)
{
    struct index__iter it;
    struct index__record r;
    struct index__upload_rec u;
    uint8_t str[INDEX_TREE_STR_MAX];
    uint64_t n_keys = 0, n_uploads = 0;
    int rc;

    if ((rc = index__iter_begin(&it, txn, ix->dbi_objects, NULL, 0)) != 0)
        goto fail;
    while ((rc = index__iter_next(&it)) == 1) {
        if (!index__objkey_is_long(it.k.mv_size))
            continue;
        if ((rc = index__record_parse(it.v.mv_data, it.v.mv_size, &r)) != 0)
            goto fail;
        if (r.full_key.len <= INDEX_DIRECT_MAX) {
            rc = CORRUPT_BKPT("long key record without its full key");
            goto fail;
        }
        /* The tree lives in another database: the cursor stays valid. */
        uint64_t bid = index__get_be64(it.k.mv_data);
        memcpy(str, r.full_key.ptr, r.full_key.len);
        struct slice key = {(const char *)str, r.full_key.len};
        if ((rc = index__tree_insert(ix, txn, INDEX_TREE_ROOT_OBJECTS(bid), key)) != 0)
            goto fail;
        n_keys++;
    }
    if (rc < 0)
        goto fail;
    index__iter_end(&it);

    if ((rc = index__iter_begin(&it, txn, ix->dbi_uploads, NULL, 0)) != 0)
        goto fail;
    while ((rc = index__iter_next(&it)) == 1) {
        if (it.k.mv_size != INDEX_UPLOAD_RAW_LEN) {
            rc = CORRUPT_BKPT("uploads key length");
            goto fail;
        }
        if ((rc = index__upload_parse(it.v.mv_data, it.v.mv_size, &u)) != 0)
            goto fail;
        size_t n = index__upload_tree_str(str, u.key, it.k.mv_data);
        struct slice s = {(const char *)str, n};
        if ((rc = index__tree_insert(ix, txn, INDEX_TREE_ROOT_UPLOADS(u.bucket_id), s)) != 0)
            goto fail;
        n_uploads++;
    }
    if (rc < 0)
        goto fail;
    rc = 0;
    if (n_keys || n_uploads)
        log_info("index: built the key tree: %" PRIu64 " long keys, %" PRIu64 " uploads", n_keys,
                 n_uploads);

fail:
    index__iter_end(&it);
    return rc;
}

int
index_open(struct index **out, const char *dir, uint64_t map_size, bool is_nosync)
{
    struct index *ix = xcalloc(1, sizeof(*ix));
    MDB_txn *txn = NULL;
    int rc;

    *out = NULL;
    pthread_mutex_init(&ix->pool_mu, NULL);
    ix->is_nosync = is_nosync;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        rc = -errno;
        log_error("index: mkdir %s: %s", dir, strerror(-rc));
        goto fail;
    }
    if ((rc = index__err(mdb_env_create(&ix->env))) != 0)
        goto fail;
    if ((rc = index__err(mdb_env_set_maxdbs(ix->env, 32))) != 0 ||
        (rc = index__err(mdb_env_set_maxreaders(ix->env, INDEX_MAX_READERS))) != 0 ||
        (rc = index__err(mdb_env_set_mapsize(ix->env, (size_t)map_size))) != 0)
        goto fail;
    if (mdb_env_get_maxkeysize(ix->env) < INDEX_LKEY_MAX) {
        log_error("index: this LMDB allows keys of %d bytes, need %d",
                  mdb_env_get_maxkeysize(ix->env), INDEX_LKEY_MAX);
        rc = -ENOTSUP;
        goto fail;
    }
    unsigned flags = MDB_NOTLS | (is_nosync ? MDB_NOSYNC : 0);
    if ((rc = index__err(mdb_env_open(ix->env, dir, flags, 0600))) != 0) {
        log_error("index: open %s: %s", dir, strerror(-rc));
        goto fail;
    }
    /* LMDB fsyncs data.mdb at each commit but never the directory: make
     * the file's name durable before the first commit can be acknowledged. */
    if (!is_nosync && (rc = dir_sync(dir)) != 0) {
        log_error("index: fsync of directory %s: %s", dir, strerror(-rc));
        goto fail;
    }
    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    if ((rc = index__err(open_dbi(txn, "buckets", &ix->dbi_buckets))) != 0 ||
        (rc = index__err(open_dbi(txn, "bucketids", &ix->dbi_bucketids))) != 0 ||
        (rc = index__err(open_dbi(txn, "objects", &ix->dbi_objects))) != 0 ||
        (rc = index__err(open_dbi(txn, "meta", &ix->dbi_meta))) != 0 ||
        (rc = index__err(open_dbi(txn, "uploads", &ix->dbi_uploads))) != 0 ||
        (rc = index__err(open_dbi(txn, "bucketuploads", &ix->dbi_bucketuploads))) != 0 ||
        (rc = index__err(open_dbi(txn, "parts", &ix->dbi_parts))) != 0 ||
        (rc = index__err(open_dbi(txn, "extrefs", &ix->dbi_extrefs))) != 0 ||
        (rc = index__err(open_dbi(txn, "users", &ix->dbi_users))) != 0 ||
        (rc = index__err(open_dbi(txn, "usernames", &ix->dbi_usernames))) != 0 ||
        (rc = index__err(open_dbi(txn, "keys", &ix->dbi_keys))) != 0 ||
        (rc = index__err(open_dbi(txn, "grants", &ix->dbi_grants))) != 0 ||
        (rc = index__err(open_dbi(txn, "members", &ix->dbi_members))) != 0 ||
        (rc = index__err(open_dbi(txn, "bucketconfig", &ix->dbi_bucketconfig))) != 0 ||
        (rc = index__err(open_dbi(txn, "uploadsdone", &ix->dbi_uploadsdone))) != 0 ||
        (rc = index__err(open_dbi(txn, "versions", &ix->dbi_versions))) != 0)
        goto fail;
    rc = index__err(mdb_dbi_open(txn, "keytree", 0, &ix->dbi_tree));
    if (rc == -ENOENT) {
        if ((rc = index__err(open_dbi(txn, "keytree", &ix->dbi_tree))) != 0 ||
            (rc = tree_build(ix, txn)) != 0)
            goto fail;
    }
    if (rc != 0)
        goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;
    if (rc != 0)
        goto fail;
    *out = ix;
    return 0;

fail:
    if (txn)
        mdb_txn_abort(txn);
    index_close(ix);
    return rc;
}

void
index_close(struct index *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->pool_n; i++)
        mdb_txn_abort(ix->pool[i]);
    free(ix->pool);
    if (ix->env)
        mdb_env_close(ix->env);
    pthread_mutex_destroy(&ix->pool_mu);
    free(ix);
}

int
index__read_begin(struct index *ix, MDB_txn **out)
{
    MDB_txn *txn = NULL;

    pthread_mutex_lock(&ix->pool_mu);
    if (ix->pool_n)
        txn = ix->pool[--ix->pool_n];
    pthread_mutex_unlock(&ix->pool_mu);
    if (txn) {
        if (mdb_txn_renew(txn) == MDB_SUCCESS) {
            *out = txn;
            return 0;
        }
        mdb_txn_abort(txn);
    }
    int rc = index__err(mdb_txn_begin(ix->env, NULL, MDB_RDONLY, &txn));
    *out = rc == 0 ? txn : NULL;
    return rc;
}

int
index__write_one(struct index *ix, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
    MDB_txn *txn = NULL;
    int rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn));
    if (rc != 0)
        return rc;
    rc = index__err(v ? mdb_put(txn, dbi, k, v, 0) : mdb_del(txn, dbi, k, NULL));
    if (rc != 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    return index__err(mdb_txn_commit(txn));
}

void
index__read_end(struct index *ix, MDB_txn *txn)
{
    if (!txn)
        return;
    mdb_txn_reset(txn);
    pthread_mutex_lock(&ix->pool_mu);
    if (ix->pool_n == ix->pool_cap && ix->pool_cap < INDEX_POOL_MAX) {
        ix->pool_cap = ix->pool_cap ? ix->pool_cap * 2 : 16;
        ix->pool = xrealloc(ix->pool, ix->pool_cap * sizeof(*ix->pool));
    }
    if (ix->pool_n < ix->pool_cap) {
        ix->pool[ix->pool_n++] = txn;
        txn = NULL;
    }
    pthread_mutex_unlock(&ix->pool_mu);
    if (txn)
        mdb_txn_abort(txn);
}

int
index_stats_get(struct index *ix, struct index_stats *out)
{
    MDB_envinfo info;
    MDB_stat st;
    int rc = index__err(mdb_env_info(ix->env, &info));
    if (rc == 0)
        rc = index__err(mdb_env_stat(ix->env, &st));
    if (rc != 0)
        return rc;
    out->map_size_bytes = info.me_mapsize;
    out->used_bytes = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
    return 0;
}
