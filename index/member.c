/*
 * member.c: tar member indexes ("members" database; layout in keys.h).
 *
 * An object's member index is a head record, one entry per member in
 * archive order, and one name record per member (a hash of the name, so a
 * lookup is one seek). All records of one object share a 16-byte prefix,
 * the object id (XXH3-128 of bucket id | key), so the index is dropped
 * with one range delete. Invariant: the writers of "objects"
 * (index__object_write) drop the index of the version they replace or
 * delete in the same transaction, and an index is written only with its
 * object or after checking, inside the transaction, that the object still
 * has the etag the index was built from; so no index outlives its
 * object's version. Readers check the etag in the head as well.
 */
#include "index/index_int.h"

#include <errno.h>
#include <xxhash.h>

#define MEMBER_HEAD_VERSION 1
#define MEMBER_HEAD_LEN 24
#define MEMBER_ENTRY_HEAD_LEN 30
#define MEMBER_OID_LEN 16
#define MEMBER_TAG_HEAD 0
#define MEMBER_TAG_ENTRY 1
#define MEMBER_TAG_NAME 2
#define MEMBER_ENTRY_KEY_LEN (MEMBER_OID_LEN + 1 + 4)
#define MEMBER_NAME_KEY_LEN (MEMBER_OID_LEN + 1 + 8 + 4)

/* Writes the object id of 'key' in bucket 'bucket_id' to 'out'. */
static void
member_oid(uint8_t *out, uint64_t bucket_id, struct slice key)
{
    uint8_t buf[8 + INDEX_MAX_KEY];
    size_t len = key.len < INDEX_MAX_KEY ? key.len : INDEX_MAX_KEY;
    index__put_be64(buf, bucket_id);
    memcpy(buf + 8, key.ptr, len);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(buf, 8 + len));
    memcpy(out, c.digest, MEMBER_OID_LEN);
}

static uint64_t
name_hash(struct slice name)
{
    return XXH3_64bits(name.ptr, name.len);
}

int
index__members_drop(struct index *ix, MDB_txn *txn, uint64_t bucket_id, struct slice key)
{
    uint8_t oid[MEMBER_OID_LEN];
    MDB_cursor *cur = NULL;
    member_oid(oid, bucket_id, key);
    int rc = index__err(mdb_cursor_open(txn, ix->dbi_members, &cur));
    if (rc != 0)
        return rc;
    MDB_val k = {sizeof(oid), oid}, v;
    rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE));
    while (rc == 0 && k.mv_size >= MEMBER_OID_LEN && memcmp(k.mv_data, oid, MEMBER_OID_LEN) == 0) {
        if ((rc = index__err(mdb_cursor_del(cur, 0))) != 0)
            break;
        rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT));
    }
    mdb_cursor_close(cur);
    return rc == -ENOENT || rc == -EINVAL ? 0 : rc;
}

int
index__members_write(struct index *ix, MDB_txn *txn, uint64_t bucket_id, struct slice key,
                     const uint8_t etag[16], const struct index_members *m)
{
    uint8_t kb[MEMBER_NAME_KEY_LEN];
    uint8_t head[MEMBER_HEAD_LEN];
    int rc;
    uint32_t n = m->is_archive ? m->n_members : 0;
    if (n > INDEX_MEMBERS_MAX || (n && !m->members))
        return -EINVAL;
    member_oid(kb, bucket_id, key);
    kb[MEMBER_OID_LEN] = MEMBER_TAG_HEAD;
    memset(head, 0, sizeof(head));
    head[0] = MEMBER_HEAD_VERSION;
    head[1] = m->is_archive ? 1 : 0;
    memcpy(head + 4, etag, 16);
    index__put_le32(head + 20, n);
    MDB_val k = {MEMBER_OID_LEN + 1, kb}, v = {sizeof(head), head};
    if ((rc = index__err(mdb_put(txn, ix->dbi_members, &k, &v, 0))) != 0)
        return rc;
    for (uint32_t i = 0; i < n; i++) {
        const struct index_member *e = &m->members[i];
        if (e->name.len == 0 || e->name.len > INDEX_MEMBER_NAME_MAX)
            return -EINVAL;
        kb[MEMBER_OID_LEN] = MEMBER_TAG_ENTRY;
        index__put_be32(kb + MEMBER_OID_LEN + 1, i);
        k.mv_size = MEMBER_ENTRY_KEY_LEN;
        v.mv_size = MEMBER_ENTRY_HEAD_LEN + e->name.len;
        v.mv_data = NULL;
        if ((rc = index__err(mdb_put(txn, ix->dbi_members, &k, &v, MDB_RESERVE))) != 0)
            return rc;
        uint8_t *p = v.mv_data;
        index__put_le64(p, e->offset);
        index__put_le64(p + 8, e->size);
        index__put_le32(p + 16, e->mode);
        index__put_le64(p + 20, (uint64_t)e->mtime_s);
        index__put_le16(p + 28, (uint16_t)e->name.len);
        memcpy(p + MEMBER_ENTRY_HEAD_LEN, e->name.ptr, e->name.len);
        kb[MEMBER_OID_LEN] = MEMBER_TAG_NAME;
        index__put_be64(kb + MEMBER_OID_LEN + 1, name_hash(e->name));
        index__put_be32(kb + MEMBER_OID_LEN + 9, i);
        k.mv_size = MEMBER_NAME_KEY_LEN;
        v.mv_size = 0;
        v.mv_data = head; /* any pointer: zero bytes */
        if ((rc = index__err(mdb_put(txn, ix->dbi_members, &k, &v, 0))) != 0)
            return rc;
    }
    return 0;
}

/* Parses entry value 'v' into 'out' (name borrowed). Returns 0 or -EIO. */
static int
entry_parse(const MDB_val *v, struct index_member *out)
{
    const uint8_t *p = v->mv_data;
    if (v->mv_size < MEMBER_ENTRY_HEAD_LEN)
        return CORRUPT_BKPT("short member entry");
    size_t name_len = index__get_le16(p + 28);
    if (v->mv_size != MEMBER_ENTRY_HEAD_LEN + name_len || name_len == 0)
        return CORRUPT_BKPT("member entry length");
    out->offset = index__get_le64(p);
    out->size = index__get_le64(p + 8);
    out->mode = index__get_le32(p + 16);
    out->mtime_s = (int64_t)index__get_le64(p + 20);
    out->name = (struct slice){(const char *)p + MEMBER_ENTRY_HEAD_LEN, name_len};
    return 0;
}

/* Checks the head of the index at 'oid' against 'etag' inside 'txn'.
 * Returns 0 (an archive), -ENODATA, -EILSEQ or -errno. */
static int
head_check(struct index *ix, MDB_txn *txn, const uint8_t *oid, const uint8_t etag[16])
{
    uint8_t kb[MEMBER_OID_LEN + 1];
    memcpy(kb, oid, MEMBER_OID_LEN);
    kb[MEMBER_OID_LEN] = MEMBER_TAG_HEAD;
    MDB_val k = {sizeof(kb), kb}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_members, &k, &v));
    if (rc == -ENOENT)
        return -ENODATA;
    if (rc != 0)
        return rc;
    const uint8_t *p = v.mv_data;
    if (v.mv_size != MEMBER_HEAD_LEN || p[0] != MEMBER_HEAD_VERSION)
        return CORRUPT_BKPT("member index head");
    if (memcmp(p + 4, etag, 16) != 0)
        return -ENODATA; /* another version's: never expected, see above */
    return (p[1] & 1) ? 0 : -EILSEQ;
}

/* Finds the sequence number of the last member named 'name' under 'oid'.
 * Returns 0 and sets '*seq' (and '*out' when non-NULL, borrowed), -ENOENT
 * or -errno. */
static int
name_find(struct index *ix, MDB_txn *txn, const uint8_t *oid, struct slice name, uint32_t *seq,
          struct index_member *out)
{
    uint8_t kb[MEMBER_NAME_KEY_LEN];
    MDB_cursor *cur = NULL;
    bool found = false;
    memcpy(kb, oid, MEMBER_OID_LEN);
    kb[MEMBER_OID_LEN] = MEMBER_TAG_NAME;
    index__put_be64(kb + MEMBER_OID_LEN + 1, name_hash(name));
    int rc = index__err(mdb_cursor_open(txn, ix->dbi_members, &cur));
    if (rc != 0)
        return rc;
    MDB_val k = {MEMBER_OID_LEN + 9, kb}, v;
    rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE));
    /* Same hash: candidates in sequence order; the last match wins. */
    while (rc == 0 && k.mv_size == MEMBER_NAME_KEY_LEN &&
           memcmp(k.mv_data, kb, MEMBER_OID_LEN + 9) == 0) {
        uint8_t ek[MEMBER_ENTRY_KEY_LEN];
        uint32_t s = index__get_be32((const uint8_t *)k.mv_data + MEMBER_OID_LEN + 9);
        struct index_member m;
        memcpy(ek, oid, MEMBER_OID_LEN);
        ek[MEMBER_OID_LEN] = MEMBER_TAG_ENTRY;
        index__put_be32(ek + MEMBER_OID_LEN + 1, s);
        MDB_val k2 = {sizeof(ek), ek}, v2;
        if ((rc = index__err(mdb_get(txn, ix->dbi_members, &k2, &v2))) != 0) {
            if (rc == -ENOENT)
                rc = CORRUPT_BKPT("member name without entry");
            break;
        }
        if ((rc = entry_parse(&v2, &m)) != 0)
            break;
        if (slice_eq(m.name, name)) {
            found = true;
            *seq = s;
            if (out)
                *out = m;
        }
        rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_NEXT));
    }
    mdb_cursor_close(cur);
    if (rc != 0 && rc != -ENOENT)
        return rc;
    return found ? 0 : -ENOENT;
}

int
index_member_get(struct index *ix, uint64_t bucket_id, struct slice key, const uint8_t etag[16],
                 struct slice name, struct arena *a, struct index_member *out)
{
    MDB_txn *txn = NULL;
    uint8_t oid[MEMBER_OID_LEN];
    uint32_t seq;
    member_oid(oid, bucket_id, key);
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = head_check(ix, txn, oid, etag);
    if (rc == 0)
        rc = name_find(ix, txn, oid, name, &seq, out);
    if (rc == 0)
        out->name = (struct slice){arena_strndup(a, out->name.ptr, out->name.len), out->name.len};
    index__read_end(ix, txn);
    return rc;
}

int
index_member_list(struct index *ix, uint64_t bucket_id, struct slice key, const uint8_t etag[16],
                  struct slice marker, uint32_t max, struct arena *a, struct index_member **out,
                  uint32_t *n_out, bool *is_truncated)
{
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    uint8_t oid[MEMBER_OID_LEN];
    uint8_t kb[MEMBER_ENTRY_KEY_LEN];
    uint32_t first = 0, n = 0;
    *out = NULL;
    *n_out = 0;
    *is_truncated = false;
    if (max == 0 || max > INDEX_MEMBERS_MAX)
        return -EINVAL;
    member_oid(oid, bucket_id, key);
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = head_check(ix, txn, oid, etag);
    if (rc == 0 && marker.len) {
        rc = name_find(ix, txn, oid, marker, &first, NULL);
        first++;
    }
    if (rc == 0)
        rc = index__err(mdb_cursor_open(txn, ix->dbi_members, &cur));
    if (rc != 0)
        goto fail;
    struct index_member *list = arena_calloc(a, max, sizeof(*list));
    memcpy(kb, oid, MEMBER_OID_LEN);
    kb[MEMBER_OID_LEN] = MEMBER_TAG_ENTRY;
    index__put_be32(kb + MEMBER_OID_LEN + 1, first);
    MDB_val k = {sizeof(kb), kb}, v;
    rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE));
    while (rc == 0 && k.mv_size == MEMBER_ENTRY_KEY_LEN &&
           memcmp(k.mv_data, kb, MEMBER_OID_LEN + 1) == 0) {
        if (n == max) {
            *is_truncated = true;
            break;
        }
        if ((rc = entry_parse(&v, &list[n])) != 0)
            goto fail;
        list[n].name =
            (struct slice){arena_strndup(a, list[n].name.ptr, list[n].name.len), list[n].name.len};
        n++;
        rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_NEXT));
    }
    if (rc != 0 && rc != -ENOENT)
        goto fail;
    rc = 0;
    *out = list;
    *n_out = n;

fail:
    if (cur)
        mdb_cursor_close(cur);
    index__read_end(ix, txn);
    return rc;
}

int
index_member_count(struct index *ix, uint64_t *n_indexes)
{
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    uint64_t n = 0;
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = index__err(mdb_cursor_open(txn, ix->dbi_members, &cur));
    MDB_val k, v;
    if (rc == 0)
        rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_FIRST));
    /* One seek per object: past the head, to the next object id. */
    while (rc == 0) {
        uint8_t next[MEMBER_OID_LEN + 1];
        if (k.mv_size < MEMBER_OID_LEN + 1) {
            rc = CORRUPT_BKPT("short member key");
            break;
        }
        if (((const uint8_t *)k.mv_data)[MEMBER_OID_LEN] == MEMBER_TAG_HEAD)
            n++;
        memcpy(next, k.mv_data, MEMBER_OID_LEN);
        next[MEMBER_OID_LEN] = 0xff;
        MDB_val nk = {sizeof(next), next};
        k = nk;
        rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE));
    }
    if (cur)
        mdb_cursor_close(cur);
    index__read_end(ix, txn);
    *n_indexes = n;
    return rc == -ENOENT ? 0 : rc;
}
