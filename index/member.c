/*
 * member.c: tar member indexes ("members" database; layout in keys.h).
 *
 * An object's member index is a head record, pages of MEMBER_PAGE entries
 * in archive order (a listing reads O(page) records), and buckets of name
 * hashes (a lookup is one bucket and one page): about n / 50 records for n
 * members, so writing the index of a 20,000-member shard costs a few
 * hundred puts inside the PUT's commit. All records of one object share a 16-byte prefix,
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
#include <stdlib.h>
#include <xxhash.h>

#define MEMBER_HEAD_VERSION 1
#define MEMBER_HEAD_LEN 28
#define MEMBER_ENTRY_HEAD_LEN 30
#define MEMBER_OID_LEN 16
#define MEMBER_TAG_HEAD 0
#define MEMBER_TAG_PAGE 1
#define MEMBER_TAG_BUCKET 2
#define MEMBER_KEY_LEN (MEMBER_OID_LEN + 1 + 4)
/* Members per page record, and the most names hashed to one bucket on
 * average: an index of n members is about n / 256 + n / 64 records. */
#define MEMBER_PAGE 256
#define MEMBER_BUCKET_FILL 64
#define MEMBER_SLOT_LEN 12

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

/* The bucket of name hash 'h' in an index of 2^'bits' buckets. */
static uint32_t
bucket_of(uint64_t h, unsigned bits)
{
    return bits ? (uint32_t)(h >> (64 - bits)) : 0;
}

static void
member_key(uint8_t *kb, const uint8_t *oid, uint8_t tag, uint32_t n)
{
    memcpy(kb, oid, MEMBER_OID_LEN);
    kb[MEMBER_OID_LEN] = tag;
    index__put_be32(kb + MEMBER_OID_LEN + 1, n);
}

/* Appends the entry of 'e' to 'p' and returns the end. */
static uint8_t *
entry_format(uint8_t *p, const struct index_member *e)
{
    index__put_le64(p, e->offset);
    index__put_le64(p + 8, e->size);
    index__put_le32(p + 16, e->mode);
    index__put_le64(p + 20, (uint64_t)e->mtime_s);
    index__put_le16(p + 28, (uint16_t)e->name.len);
    memcpy(p + MEMBER_ENTRY_HEAD_LEN, e->name.ptr, e->name.len);
    return p + MEMBER_ENTRY_HEAD_LEN + e->name.len;
}

/* Writes the pages of 'm' (MEMBER_PAGE entries each). Returns 0 or -errno. */
static int
pages_write(struct index *ix, MDB_txn *txn, const uint8_t *oid, const struct index_members *m)
{
    uint8_t kb[MEMBER_KEY_LEN];
    for (uint32_t first = 0; first < m->n_members; first += MEMBER_PAGE) {
        uint32_t last = MIN(first + MEMBER_PAGE, m->n_members);
        size_t len = 0;
        for (uint32_t i = first; i < last; i++)
            len += MEMBER_ENTRY_HEAD_LEN + m->members[i].name.len;
        member_key(kb, oid, MEMBER_TAG_PAGE, first / MEMBER_PAGE);
        MDB_val k = {sizeof(kb), kb}, v = {len, NULL};
        int rc = index__err(mdb_put(txn, ix->dbi_members, &k, &v, MDB_RESERVE));
        if (rc != 0)
            return rc;
        uint8_t *p = v.mv_data;
        for (uint32_t i = first; i < last; i++)
            p = entry_format(p, &m->members[i]);
    }
    return 0;
}

/* Writes the name buckets of 'm': bucket b holds (XXH3-64 of the name,
 * sequence number) of every member whose hash falls in b, in sequence
 * order. Returns 0 or -errno. */
static int
buckets_write(struct index *ix, MDB_txn *txn, const uint8_t *oid, const struct index_members *m,
              unsigned bits)
{
    uint32_t n_buckets = 1u << bits;
    uint32_t *start = xcalloc(n_buckets + 1, sizeof(*start));
    uint8_t *slots = xmalloc((size_t)m->n_members * MEMBER_SLOT_LEN + 1);
    uint64_t *hashes = xmalloc((size_t)m->n_members * sizeof(*hashes) + 1);
    uint8_t kb[MEMBER_KEY_LEN];
    int rc = 0;
    /* A counting sort by bucket keeps each bucket in sequence order. */
    for (uint32_t i = 0; i < m->n_members; i++) {
        hashes[i] = name_hash(m->members[i].name);
        start[bucket_of(hashes[i], bits) + 1]++;
    }
    for (uint32_t b = 0; b < n_buckets; b++)
        start[b + 1] += start[b];
    uint32_t *fill = xmalloc(n_buckets * sizeof(*fill));
    memcpy(fill, start, n_buckets * sizeof(*fill));
    for (uint32_t i = 0; i < m->n_members; i++) {
        uint8_t *slot = slots + (size_t)fill[bucket_of(hashes[i], bits)]++ * MEMBER_SLOT_LEN;
        index__put_le64(slot, hashes[i]);
        index__put_le32(slot + 8, i);
    }
    for (uint32_t b = 0; b < n_buckets && rc == 0; b++) {
        if (start[b + 1] == start[b])
            continue;
        member_key(kb, oid, MEMBER_TAG_BUCKET, b);
        MDB_val k = {sizeof(kb), kb};
        MDB_val v = {(size_t)(start[b + 1] - start[b]) * MEMBER_SLOT_LEN,
                     slots + (size_t)start[b] * MEMBER_SLOT_LEN};
        rc = index__err(mdb_put(txn, ix->dbi_members, &k, &v, 0));
    }
    free(fill);
    free(hashes);
    free(slots);
    free(start);
    return rc;
}

int
index__members_write(struct index *ix, MDB_txn *txn, uint64_t bucket_id, struct slice key,
                     const uint8_t etag[16], const struct index_members *m)
{
    uint8_t oid[MEMBER_OID_LEN];
    uint8_t kb[MEMBER_OID_LEN + 1];
    uint8_t head[MEMBER_HEAD_LEN];
    int rc;
    uint32_t n = m->is_archive ? m->n_members : 0;
    if (n > INDEX_MEMBERS_MAX || (n && !m->members))
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (m->members[i].name.len == 0 || m->members[i].name.len > INDEX_MEMBER_NAME_MAX)
            return -EINVAL;
    unsigned bits = 0;
    while (bits < 24 && ((uint64_t)n >> bits) > MEMBER_BUCKET_FILL)
        bits++;
    member_oid(oid, bucket_id, key);
    memcpy(kb, oid, MEMBER_OID_LEN);
    kb[MEMBER_OID_LEN] = MEMBER_TAG_HEAD;
    memset(head, 0, sizeof(head));
    head[0] = MEMBER_HEAD_VERSION;
    head[1] = m->is_archive ? 1 : 0;
    head[2] = (uint8_t)bits;
    memcpy(head + 4, etag, 16);
    index__put_le32(head + 20, n);
    index__put_le32(head + 24, MEMBER_PAGE);
    MDB_val k = {sizeof(kb), kb}, v = {sizeof(head), head};
    if ((rc = index__err(mdb_put(txn, ix->dbi_members, &k, &v, 0))) != 0)
        return rc;
    if (n == 0)
        return 0;
    struct index_members all = {.is_archive = true, .members = m->members, .n_members = n};
    if ((rc = pages_write(ix, txn, oid, &all)) != 0)
        return rc;
    return buckets_write(ix, txn, oid, &all, bits);
}

/* Parses the entry at 'p' of the 'len' bytes left in a page into 'out'
 * (name borrowed). Returns its length, or 0 when malformed (corruption). */
static size_t
entry_parse(const uint8_t *p, size_t len, struct index_member *out)
{
    if (len < MEMBER_ENTRY_HEAD_LEN)
        return 0;
    size_t name_len = index__get_le16(p + 28);
    if (name_len == 0 || len - MEMBER_ENTRY_HEAD_LEN < name_len)
        return 0;
    out->offset = index__get_le64(p);
    out->size = index__get_le64(p + 8);
    out->mode = index__get_le32(p + 16);
    out->mtime_s = (int64_t)index__get_le64(p + 20);
    out->name = (struct slice){(const char *)p + MEMBER_ENTRY_HEAD_LEN, name_len};
    return MEMBER_ENTRY_HEAD_LEN + name_len;
}

struct member_head {
    unsigned bits;
    uint32_t n_members;
};

/* Checks the head of the index at 'oid' against 'etag' inside 'txn' and
 * fills 'out'. Returns 0 (an archive), -ENODATA, -EILSEQ or -errno. */
static int
head_check(struct index *ix, MDB_txn *txn, const uint8_t *oid, const uint8_t etag[16],
           struct member_head *out)
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
    if (v.mv_size != MEMBER_HEAD_LEN || p[0] != MEMBER_HEAD_VERSION || p[2] > 24 ||
        index__get_le32(p + 24) != MEMBER_PAGE)
        return CORRUPT_BKPT("member index head");
    if (memcmp(p + 4, etag, 16) != 0)
        return -ENODATA; /* another version's: never expected, see above */
    out->bits = p[2];
    out->n_members = index__get_le32(p + 20);
    return (p[1] & 1) ? 0 : -EILSEQ;
}

/* Reads member 'seq' into 'out' (name borrowed from the txn). Returns 0 or
 * -EIO (a member the head promises is missing or malformed). */
static int
member_read(struct index *ix, MDB_txn *txn, const uint8_t *oid, uint32_t seq,
            struct index_member *out)
{
    uint8_t kb[MEMBER_KEY_LEN];
    member_key(kb, oid, MEMBER_TAG_PAGE, seq / MEMBER_PAGE);
    MDB_val k = {sizeof(kb), kb}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_members, &k, &v));
    if (rc == -ENOENT)
        return CORRUPT_BKPT("member page missing");
    if (rc != 0)
        return rc;
    const uint8_t *p = v.mv_data;
    size_t left = v.mv_size;
    /* The entries before 'seq' are skipped by their name lengths alone: a
     * lookup would otherwise decode half a page of entries. */
    for (uint32_t i = 0; i < seq % MEMBER_PAGE; i++) {
        size_t name_len = left < MEMBER_ENTRY_HEAD_LEN ? 0 : index__get_le16(p + 28);
        if (name_len == 0 || left - MEMBER_ENTRY_HEAD_LEN < name_len)
            return CORRUPT_BKPT("member entry");
        p += MEMBER_ENTRY_HEAD_LEN + name_len;
        left -= MEMBER_ENTRY_HEAD_LEN + name_len;
    }
    if (entry_parse(p, left, out) == 0)
        return CORRUPT_BKPT("member entry");
    return 0;
}

/* Finds the sequence number of the last member named 'name' under 'oid'.
 * Returns 0 and sets '*seq' (and '*out' when non-NULL, borrowed), -ENOENT
 * or -errno. */
static int
name_find(struct index *ix, MDB_txn *txn, const uint8_t *oid, const struct member_head *head,
          struct slice name, uint32_t *seq, struct index_member *out)
{
    uint8_t kb[MEMBER_KEY_LEN];
    uint64_t h = name_hash(name);
    bool found = false;
    member_key(kb, oid, MEMBER_TAG_BUCKET, bucket_of(h, head->bits));
    MDB_val k = {sizeof(kb), kb}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_members, &k, &v));
    if (rc != 0)
        return rc;
    if (v.mv_size % MEMBER_SLOT_LEN)
        return CORRUPT_BKPT("member bucket length");
    const uint8_t *slots = v.mv_data;
    /* In sequence order: the last match wins. */
    for (size_t i = 0; i < v.mv_size / MEMBER_SLOT_LEN; i++) {
        const uint8_t *slot = slots + i * MEMBER_SLOT_LEN;
        if (index__get_le64(slot) != h)
            continue;
        uint32_t s = index__get_le32(slot + 8);
        struct index_member m;
        if (s >= head->n_members)
            return CORRUPT_BKPT("member bucket points past the members");
        if ((rc = member_read(ix, txn, oid, s, &m)) != 0)
            return rc;
        if (slice_eq(m.name, name)) {
            found = true;
            *seq = s;
            if (out)
                *out = m;
        }
    }
    return found ? 0 : -ENOENT;
}

int
index_member_get(struct index *ix, uint64_t bucket_id, struct slice key, const uint8_t etag[16],
                 struct slice name, struct arena *a, struct index_member *out)
{
    MDB_txn *txn = NULL;
    uint8_t oid[MEMBER_OID_LEN];
    struct member_head head;
    uint32_t seq;
    member_oid(oid, bucket_id, key);
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = head_check(ix, txn, oid, etag, &head);
    if (rc == 0)
        rc = name_find(ix, txn, oid, &head, name, &seq, out);
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
    uint8_t kb[MEMBER_KEY_LEN];
    struct member_head head;
    uint32_t first = 0, n = 0;
    *out = NULL;
    *n_out = 0;
    *is_truncated = false;
    if (max == 0 || max > INDEX_MEMBERS_MAX)
        return -EINVAL;
    member_oid(oid, bucket_id, key);
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = head_check(ix, txn, oid, etag, &head);
    if (rc == 0 && marker.len) {
        rc = name_find(ix, txn, oid, &head, marker, &first, NULL);
        first++;
    }
    if (rc == 0)
        rc = index__err(mdb_cursor_open(txn, ix->dbi_members, &cur));
    if (rc != 0)
        goto fail;
    uint32_t want =
        (uint32_t)MIN((uint64_t)max, (uint64_t)head.n_members - MIN(first, head.n_members));
    struct index_member *list = arena_calloc(a, want + 1, sizeof(*list));
    /* Pages in order from the one holding 'first'; entries before it are
     * skipped in that page only. */
    member_key(kb, oid, MEMBER_TAG_PAGE, first / MEMBER_PAGE);
    MDB_val k = {sizeof(kb), kb}, v;
    uint32_t seq = first - first % MEMBER_PAGE;
    rc = want ? index__err(mdb_cursor_get(cur, &k, &v, MDB_SET_KEY)) : 0;
    while (rc == 0 && n < want) {
        if (k.mv_size != MEMBER_KEY_LEN || memcmp(k.mv_data, kb, MEMBER_OID_LEN + 1) != 0 ||
            index__get_be32((const uint8_t *)k.mv_data + MEMBER_OID_LEN + 1) * MEMBER_PAGE != seq) {
            rc = CORRUPT_BKPT("member pages not contiguous");
            goto fail;
        }
        const uint8_t *p = v.mv_data;
        size_t left = v.mv_size;
        while (left && n < want) {
            struct index_member m;
            size_t len = entry_parse(p, left, &m);
            if (len == 0) {
                rc = CORRUPT_BKPT("member entry");
                goto fail;
            }
            if (seq >= first) {
                m.name = (struct slice){arena_strndup(a, m.name.ptr, m.name.len), m.name.len};
                list[n++] = m;
            }
            seq++;
            p += len;
            left -= len;
        }
        if (n < want)
            rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_NEXT));
    }
    if (rc == -ENOENT) {
        rc = CORRUPT_BKPT("member page missing");
        goto fail;
    }
    if (rc != 0)
        goto fail;
    *out = list;
    *n_out = n;
    *is_truncated = first + n < head.n_members;

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
