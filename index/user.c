/*
 * user.c: users, their access keys and their per-bucket grants, in the
 * "users", "usernames", "keys" and "grants" databases (layouts in keys.h).
 *
 * Invariants kept inside each write transaction: "users" and "usernames"
 * name the same set of users; every key and grant belongs to a user that
 * exists (a user is deleted together with its keys and grants). Secrets
 * arrive already encrypted by the caller: index/ stores an opaque blob.
 * A user record may end with an e-mail address (u8 length, bytes); records
 * written before addresses existed simply stop after the name.
 */
#include "index/index_int.h"

#include <errno.h>

#define USER_VERSION 1
#define KEY_VERSION 1
#define GRANT_VERSION 1
#define USER_FLAG_ADMIN 0x01
#define KEY_FLAG_READ_ONLY 0x01
#define GRANT_KEY_LEN (INDEX_USER_ID_LEN + 8)

/* ======================================================================
 * Records
 * ====================================================================== */

static bool
user_id_is_valid(struct slice id)
{
    if (id.len != INDEX_USER_ID_LEN)
        return false;
    for (size_t i = 0; i < id.len; i++) {
        char c = id.ptr[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return true;
}

static bool
name_is_valid(struct slice name, size_t max)
{
    return name.len > 0 && name.len <= max && !memchr(name.ptr, '\0', name.len);
}

/* Parses the user record 'v' of user id 'id'. Returns 0 or -EIO. */
static int
user_parse(const MDB_val *id, const MDB_val *v, struct index_user *out)
{
    const uint8_t *p = v->mv_data;
    memset(out, 0, sizeof(*out));
    if (id->mv_size != INDEX_USER_ID_LEN)
        return CORRUPT_BKPT("user id length");
    if (v->mv_size < 11 || p[0] != USER_VERSION)
        return CORRUPT_BKPT("user record header");
    size_t name_len = p[10];
    if (name_len == 0 || name_len > INDEX_USER_NAME_MAX || v->mv_size < 11 + name_len)
        return CORRUPT_BKPT("user record length");
    if (v->mv_size > 11 + name_len) {
        size_t email_len = p[11 + name_len];
        if (email_len > INDEX_USER_EMAIL_MAX || v->mv_size != 12 + name_len + email_len)
            return CORRUPT_BKPT("user record e-mail length");
        memcpy(out->email, p + 12 + name_len, email_len);
    }
    memcpy(out->id, id->mv_data, INDEX_USER_ID_LEN);
    out->is_admin = (p[1] & USER_FLAG_ADMIN) != 0;
    out->created_ns = (int64_t)index__get_le64(p + 2);
    memcpy(out->name, p + 11, name_len);
    return 0;
}

/* Parses key record 'v' of access key 'k'. Returns 0 or -EIO. */
static int
key_parse(const MDB_val *k, const MDB_val *v, struct index_key *out)
{
    const uint8_t *p = v->mv_data;
    memset(out, 0, sizeof(*out));
    if (k->mv_size == 0 || k->mv_size > INDEX_ACCESS_KEY_MAX)
        return CORRUPT_BKPT("access key length");
    if (v->mv_size < 76 || p[0] != KEY_VERSION)
        return CORRUPT_BKPT("key record header");
    size_t blob_len = index__get_le16(p + 74);
    if (blob_len > INDEX_SECRET_BLOB_MAX || v->mv_size != 76 + blob_len)
        return CORRUPT_BKPT("key record length");
    memcpy(out->access_key, k->mv_data, k->mv_size);
    out->is_read_only = (p[1] & KEY_FLAG_READ_ONLY) != 0;
    out->created_ns = (int64_t)index__get_le64(p + 2);
    memcpy(out->user_id, p + 10, INDEX_USER_ID_LEN);
    memcpy(out->secret_blob, p + 76, blob_len);
    out->secret_blob_len = blob_len;
    return 0;
}

/* Parses grant record 'v' under LMDB key 'k'. Returns 0 or -EIO. */
static int
grant_parse(const MDB_val *k, const MDB_val *v, struct index_grant *out)
{
    const uint8_t *p = v->mv_data;
    memset(out, 0, sizeof(*out));
    if (k->mv_size != GRANT_KEY_LEN)
        return CORRUPT_BKPT("grant key length");
    if (v->mv_size < 4 || p[0] != GRANT_VERSION || p[1] < INDEX_GRANT_READ ||
        p[1] > INDEX_GRANT_ADMIN)
        return CORRUPT_BKPT("grant record header");
    size_t prefix_len = index__get_le16(p + 2);
    if (prefix_len > INDEX_GRANT_PREFIX_MAX || v->mv_size != 4 + prefix_len)
        return CORRUPT_BKPT("grant record length");
    memcpy(out->user_id, k->mv_data, INDEX_USER_ID_LEN);
    out->bucket_id = index__get_be64((const uint8_t *)k->mv_data + INDEX_USER_ID_LEN);
    out->level = (enum index_grant_level)p[1];
    memcpy(out->prefix, p + 4, prefix_len);
    return 0;
}

/* Fills 'g->bucket' with the name of bucket 'g->bucket_id' in 'txn'.
 * Returns 0, -ENOENT (the bucket is gone) or -errno. */
static int
grant_bucket_name(struct index *ix, MDB_txn *txn, struct index_grant *g)
{
    uint8_t idkey[8];
    index__put_be64(idkey, g->bucket_id);
    MDB_val k = {8, idkey}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_bucketids, &k, &v));
    if (rc != 0)
        return rc;
    if (v.mv_size == 0 || v.mv_size > INDEX_MAX_BUCKET)
        return CORRUPT_BKPT("bucket id record");
    memcpy(g->bucket, v.mv_data, v.mv_size);
    g->bucket[v.mv_size] = '\0';
    return 0;
}

/* ======================================================================
 * Users
 * ====================================================================== */

int
index_user_create(struct index *ix, const struct index_user *u)
{
    MDB_txn *txn = NULL;
    struct slice id = slice_from_cstr(u->id), name = slice_from_cstr(u->name);
    struct slice email = slice_from_cstr(u->email);
    uint8_t rec[12 + INDEX_USER_NAME_MAX + INDEX_USER_EMAIL_MAX];
    int rc;

    if (!user_id_is_valid(id) || !name_is_valid(name, INDEX_USER_NAME_MAX) ||
        email.len > INDEX_USER_EMAIL_MAX)
        return -EINVAL;
    rec[0] = USER_VERSION;
    rec[1] = u->is_admin ? USER_FLAG_ADMIN : 0;
    index__put_le64(rec + 2, (uint64_t)u->created_ns);
    rec[10] = (uint8_t)name.len;
    memcpy(rec + 11, name.ptr, name.len);
    size_t rec_len = 11 + name.len;
    if (email.len) {
        rec[rec_len++] = (uint8_t)email.len;
        memcpy(rec + rec_len, email.ptr, email.len);
        rec_len += email.len;
    }
    MDB_val ik = {id.len, (void *)id.ptr}, iv = {rec_len, rec};
    MDB_val nk = {name.len, (void *)name.ptr}, nv = {id.len, (void *)id.ptr};
    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    if ((rc = index__err(mdb_put(txn, ix->dbi_usernames, &nk, &nv, MDB_NOOVERWRITE))) != 0 ||
        (rc = index__err(mdb_put(txn, ix->dbi_users, &ik, &iv, MDB_NOOVERWRITE))) != 0)
        goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;

fail:
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

/* Looks up user id 'id' in 'txn'. Returns 0, -ENOENT or -EIO. */
static int
user_lookup_id(struct index *ix, MDB_txn *txn, struct slice id, struct index_user *out)
{
    MDB_val k = {id.len, (void *)id.ptr}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_users, &k, &v));
    if (rc == 0)
        rc = user_parse(&k, &v, out);
    return rc;
}

/* Looks up user 'name' in 'txn'. Returns 0, -ENOENT or -EIO. */
static int
user_lookup_name(struct index *ix, MDB_txn *txn, struct slice name, struct index_user *out)
{
    MDB_val k = {name.len, (void *)name.ptr}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_usernames, &k, &v));
    if (rc != 0)
        return rc;
    if (v.mv_size != INDEX_USER_ID_LEN)
        return CORRUPT_BKPT("user name record");
    rc = user_lookup_id(ix, txn, (struct slice){v.mv_data, v.mv_size}, out);
    return rc == -ENOENT ? CORRUPT_BKPT("user name without user") : rc;
}

int
index_user_get(struct index *ix, struct slice name, struct index_user *out)
{
    MDB_txn *txn = NULL;
    if (!name_is_valid(name, INDEX_USER_NAME_MAX))
        return -ENOENT;
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = user_lookup_name(ix, txn, name, out);
    index__read_end(ix, txn);
    return rc;
}

int
index_user_get_by_id(struct index *ix, struct slice id, struct index_user *out)
{
    MDB_txn *txn = NULL;
    if (!user_id_is_valid(id))
        return -ENOENT;
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = user_lookup_id(ix, txn, id, out);
    index__read_end(ix, txn);
    return rc;
}

/* Deletes every entry of 'dbi' for which 'match' says yes ('prefix' is an
 * optional key prefix to range-scan instead of the whole database). */
static int
delete_matching(MDB_txn *txn, MDB_dbi dbi, struct slice prefix,
                bool (*match)(const MDB_val *k, const MDB_val *v, const void *arg), const void *arg)
{
    struct index__iter it;
    int rc = index__iter_begin(&it, txn, dbi, prefix.ptr, prefix.len);
    while (rc >= 0 && (rc = index__iter_next(&it)) == 1)
        if (!match || match(&it.k, &it.v, arg))
            rc = index__iter_del(&it);
    index__iter_end(&it);
    return rc < 0 ? rc : 0;
}

static bool
key_of_user(const MDB_val *k, const MDB_val *v, const void *arg)
{
    (void)k;
    return v->mv_size >= 76 && memcmp((const uint8_t *)v->mv_data + 10, arg, 64) == 0;
}

int
index_user_delete(struct index *ix, struct slice name)
{
    MDB_txn *txn = NULL;
    struct index_user u;
    int rc;

    if (!name_is_valid(name, INDEX_USER_NAME_MAX))
        return -ENOENT;
    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    if ((rc = user_lookup_name(ix, txn, name, &u)) != 0)
        goto fail;
    MDB_val nk = {name.len, (void *)name.ptr}, ik = {INDEX_USER_ID_LEN, u.id};
    struct slice id = {u.id, INDEX_USER_ID_LEN};
    if ((rc = index__err(mdb_del(txn, ix->dbi_usernames, &nk, NULL))) != 0 ||
        (rc = index__err(mdb_del(txn, ix->dbi_users, &ik, NULL))) != 0 ||
        (rc = delete_matching(txn, ix->dbi_keys, SLICE_NULL, key_of_user, u.id)) != 0 ||
        (rc = delete_matching(txn, ix->dbi_grants, id, NULL, NULL)) != 0)
        goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;

fail:
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

struct email_find {
    struct slice email;
    struct index_user *out;
    bool is_found;
};

static int
email_find_one(void *ctx, const struct index_user *u)
{
    struct email_find *f = ctx;
    if (!u->email[0] || slice_casecmp(slice_from_cstr(u->email), f->email) != 0)
        return 0;
    *f->out = *u;
    f->is_found = true;
    return 1;
}

int
index_user_get_by_email(struct index *ix, struct slice email, struct index_user *out)
{
    struct email_find f = {.email = email, .out = out};
    if (email.len == 0)
        return -ENOENT;
    int rc = index_user_list(ix, email_find_one, &f);
    if (rc < 0)
        return rc;
    return f.is_found ? 0 : -ENOENT;
}

int
index_user_list(struct index *ix, index_user_fn fn, void *ctx)
{
    MDB_txn *txn = NULL;
    struct index__iter it = {0};
    struct index_user u;
    int rc;

    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__iter_begin(&it, txn, ix->dbi_usernames, NULL, 0)) != 0)
        goto fail;
    while ((rc = index__iter_next(&it)) == 1) {
        if (it.v.mv_size != INDEX_USER_ID_LEN) {
            rc = CORRUPT_BKPT("user name record");
            goto fail;
        }
        if ((rc = user_lookup_id(ix, txn, (struct slice){it.v.mv_data, it.v.mv_size}, &u)) != 0)
            goto fail;
        if (fn(ctx, &u) != 0)
            break;
    }
    if (rc > 0)
        rc = 0;

fail:
    index__iter_end(&it);
    index__read_end(ix, txn);
    return rc;
}

/* ======================================================================
 * Access keys
 * ====================================================================== */

int
index_key_create(struct index *ix, const struct index_key *k)
{
    MDB_txn *txn = NULL;
    struct index_user u;
    struct slice ak = slice_from_cstr(k->access_key), uid = slice_from_cstr(k->user_id);
    uint8_t rec[76 + INDEX_SECRET_BLOB_MAX];
    int rc;

    if (!name_is_valid(ak, INDEX_ACCESS_KEY_MAX) || !user_id_is_valid(uid) ||
        k->secret_blob_len == 0 || k->secret_blob_len > INDEX_SECRET_BLOB_MAX)
        return -EINVAL;
    rec[0] = KEY_VERSION;
    rec[1] = k->is_read_only ? KEY_FLAG_READ_ONLY : 0;
    index__put_le64(rec + 2, (uint64_t)k->created_ns);
    memcpy(rec + 10, uid.ptr, INDEX_USER_ID_LEN);
    index__put_le16(rec + 74, (uint16_t)k->secret_blob_len);
    memcpy(rec + 76, k->secret_blob, k->secret_blob_len);
    MDB_val kk = {ak.len, (void *)ak.ptr}, kv = {76 + k->secret_blob_len, rec};
    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    if ((rc = user_lookup_id(ix, txn, uid, &u)) != 0)
        goto fail;
    rc = index__err(mdb_put(txn, ix->dbi_keys, &kk, &kv, MDB_NOOVERWRITE));
    if (rc != 0)
        goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;

fail:
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

int
index_key_get(struct index *ix, struct slice access_key, struct index_key *out)
{
    MDB_txn *txn = NULL;
    if (!name_is_valid(access_key, INDEX_ACCESS_KEY_MAX))
        return -ENOENT;
    MDB_val k = {access_key.len, (void *)access_key.ptr}, v;
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = index__err(mdb_get(txn, ix->dbi_keys, &k, &v));
    if (rc == 0)
        rc = key_parse(&k, &v, out);
    index__read_end(ix, txn);
    return rc;
}

int
index_key_delete(struct index *ix, struct slice access_key)
{
    if (!name_is_valid(access_key, INDEX_ACCESS_KEY_MAX))
        return -ENOENT;
    MDB_val k = {access_key.len, (void *)access_key.ptr};
    return index__write_one(ix, ix->dbi_keys, &k, NULL);
}

int
index_key_list(struct index *ix, struct slice user_id, index_key_fn fn, void *ctx)
{
    MDB_txn *txn = NULL;
    struct index__iter it = {0};
    struct index_key key;
    int rc;

    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__iter_begin(&it, txn, ix->dbi_keys, NULL, 0)) != 0)
        goto fail;
    while ((rc = index__iter_next(&it)) == 1) {
        if ((rc = key_parse(&it.k, &it.v, &key)) != 0)
            goto fail;
        if (user_id.len && !slice_eq(user_id, slice_from_cstr(key.user_id)))
            continue;
        if (fn(ctx, &key) != 0)
            break;
    }
    if (rc > 0)
        rc = 0;

fail:
    index__iter_end(&it);
    index__read_end(ix, txn);
    return rc;
}

/* ======================================================================
 * Grants
 * ====================================================================== */

static void
grant_key(uint8_t out[GRANT_KEY_LEN], struct slice user_id, uint64_t bucket_id)
{
    memcpy(out, user_id.ptr, INDEX_USER_ID_LEN);
    index__put_be64(out + INDEX_USER_ID_LEN, bucket_id);
}

int
index_grant_put(struct index *ix, const struct index_grant *g, struct slice bucket)
{
    MDB_txn *txn = NULL;
    struct index_user u;
    struct slice uid = slice_from_cstr(g->user_id);
    size_t prefix_len = strnlen(g->prefix, sizeof(g->prefix));
    uint8_t key[GRANT_KEY_LEN], rec[4 + INDEX_GRANT_PREFIX_MAX];
    int rc;

    if (!user_id_is_valid(uid) || !name_is_valid(bucket, INDEX_MAX_BUCKET) ||
        g->level < INDEX_GRANT_READ || g->level > INDEX_GRANT_ADMIN ||
        prefix_len > INDEX_GRANT_PREFIX_MAX)
        return -EINVAL;
    if ((rc = index__err(mdb_txn_begin(ix->env, NULL, 0, &txn))) != 0)
        goto fail;
    if ((rc = user_lookup_id(ix, txn, uid, &u)) != 0)
        goto fail;
    MDB_val bk = {bucket.len, (void *)bucket.ptr}, bv;
    if ((rc = index__err(mdb_get(txn, ix->dbi_buckets, &bk, &bv))) != 0)
        goto fail;
    if (bv.mv_size < 9) {
        rc = CORRUPT_BKPT("bucket record header");
        goto fail;
    }
    grant_key(key, uid, index__get_le64((const uint8_t *)bv.mv_data + 1));
    rec[0] = GRANT_VERSION;
    rec[1] = (uint8_t)g->level;
    index__put_le16(rec + 2, (uint16_t)prefix_len);
    memcpy(rec + 4, g->prefix, prefix_len);
    MDB_val k = {GRANT_KEY_LEN, key}, v = {4 + prefix_len, rec};
    if ((rc = index__err(mdb_put(txn, ix->dbi_grants, &k, &v, 0))) != 0)
        goto fail;
    rc = index__err(mdb_txn_commit(txn));
    txn = NULL;

fail:
    if (txn)
        mdb_txn_abort(txn);
    return rc;
}

int
index_grant_get(struct index *ix, struct slice user_id, uint64_t bucket_id, struct index_grant *out)
{
    MDB_txn *txn = NULL;
    uint8_t key[GRANT_KEY_LEN];
    if (!user_id_is_valid(user_id))
        return -ENOENT;
    grant_key(key, user_id, bucket_id);
    MDB_val k = {GRANT_KEY_LEN, key}, v;
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = index__err(mdb_get(txn, ix->dbi_grants, &k, &v));
    if (rc == 0)
        rc = grant_parse(&k, &v, out);
    if (rc == 0)
        rc = grant_bucket_name(ix, txn, out);
    index__read_end(ix, txn);
    return rc;
}

int
index_grant_delete(struct index *ix, struct slice user_id, uint64_t bucket_id)
{
    uint8_t key[GRANT_KEY_LEN];
    if (!user_id_is_valid(user_id))
        return -ENOENT;
    grant_key(key, user_id, bucket_id);
    MDB_val k = {GRANT_KEY_LEN, key};
    return index__write_one(ix, ix->dbi_grants, &k, NULL);
}

int
index_grant_list(struct index *ix, struct slice user_id, index_grant_fn fn, void *ctx)
{
    MDB_txn *txn = NULL;
    struct index__iter it = {0};
    struct index_grant g;
    int rc;

    if (user_id.len && !user_id_is_valid(user_id))
        return 0;
    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__iter_begin(&it, txn, ix->dbi_grants, user_id.ptr, user_id.len)) != 0)
        goto fail;
    while ((rc = index__iter_next(&it)) == 1) {
        if ((rc = grant_parse(&it.k, &it.v, &g)) != 0)
            goto fail;
        rc = grant_bucket_name(ix, txn, &g);
        if (rc == -ENOENT)
            continue; /* the bucket is gone: the grant is dead */
        if (rc != 0)
            goto fail;
        if (fn(ctx, &g) != 0)
            break;
    }
    if (rc > 0)
        rc = 0;

fail:
    index__iter_end(&it);
    index__read_end(ix, txn);
    return rc;
}
