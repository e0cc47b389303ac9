/*
 * upload.c: multipart uploads: the upload and part records (formats in
 * keys.h), the four multipart ops of the write batch, index_upload_get and
 * index_part_list. The listing of a bucket's uploads is in upload_list.c.
 *
 * Invariants: an upload is in "uploads" exactly when it is in
 * "bucketuploads" (both change in one txn); parts exist only under an
 * existing upload; a bucket with uploads cannot be deleted (bucket.c), so
 * an upload's bucket exists. A completed upload is published through the
 * object put path (index__object_write), so conditions, long keys and the
 * freeing of a replaced version behave exactly as for a PUT. Every extent
 * a part held ends up either in the completed object or in op->freed. A
 * completion also leaves a bounded record of itself ("uploadsdone") so a
 * repeated CompleteMultipartUpload can be answered as the first was.
 */
#include "index/index_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

/* ---- upload ids and records --------------------------------------------- */

/*
 * Decodes the API form of an upload id (exactly INDEX_UPLOAD_ID_LEN
 * lower-case hex chars, NUL-terminated) from 's' into 'raw'. Returns 0, or
 * -EINVAL for NULL, a wrong length, or any other character.
 */
static int
upload_id_decode(const char *s, uint8_t raw[INDEX_UPLOAD_RAW_LEN])
{
    if (!s || strnlen(s, INDEX_UPLOAD_ID_LEN + 1) != INDEX_UPLOAD_ID_LEN)
        return -EINVAL;
    for (size_t i = 0; i < INDEX_UPLOAD_ID_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return -EINVAL;
    return hex_decode(s, INDEX_UPLOAD_ID_LEN, raw) == 0 ? 0 : -EINVAL;
}

static size_t
upload_len(const struct index_upload *u)
{
    return INDEX_UPLOAD_HEAD_LEN + u->key.len + u->meta_len;
}

/* Formats 'u' into 'out' of exactly upload_len(u) bytes. */
static void
upload_format(uint8_t *out, const struct index_upload *u)
{
    out[0] = INDEX_UPLOAD_VERSION;
    out[1] = 0;
    index__put_le16(out + 2, (uint16_t)u->key.len);
    index__put_le64(out + 4, u->bucket_id);
    index__put_le64(out + 12, (uint64_t)u->initiated_ns);
    index__put_le32(out + 20, (uint32_t)u->meta_len);
    memcpy(out + INDEX_UPLOAD_HEAD_LEN, u->key.ptr, u->key.len);
    if (u->meta_len)
        memcpy(out + INDEX_UPLOAD_HEAD_LEN + u->key.len, u->meta, u->meta_len);
}

int
index__upload_parse(const uint8_t *p, size_t len, struct index__upload_rec *out)
{
    memset(out, 0, sizeof(*out));
    if (len < INDEX_UPLOAD_HEAD_LEN)
        return CORRUPT_BKPT("upload record shorter than its header");
    if (p[0] != INDEX_UPLOAD_VERSION)
        return CORRUPT_BKPT("upload record: unknown version");
    size_t key_len = index__get_le16(p + 2);
    out->bucket_id = index__get_le64(p + 4);
    out->initiated_ns = (int64_t)index__get_le64(p + 12);
    out->meta_len = index__get_le32(p + 20);
    if (key_len == 0 || key_len > INDEX_MAX_KEY)
        return CORRUPT_BKPT("upload record: key length");
    if (out->bucket_id == 0)
        return CORRUPT_BKPT("upload record: bucket id 0");
    if ((uint64_t)INDEX_UPLOAD_HEAD_LEN + key_len + out->meta_len != len)
        return CORRUPT_BKPT("upload record: lengths do not add up");
    out->key = (struct slice){(const char *)p + INDEX_UPLOAD_HEAD_LEN, key_len};
    out->meta = p + INDEX_UPLOAD_HEAD_LEN + key_len;
    return 0;
}

void
index__upload_copy(const struct index__upload_rec *r, const uint8_t *raw_id, struct arena *a,
                   struct index_upload *out)
{
    memset(out, 0, sizeof(*out));
    hex_encode(raw_id, INDEX_UPLOAD_RAW_LEN, out->upload_id);
    out->bucket_id = r->bucket_id;
    out->key = (struct slice){arena_memdup(a, r->key.ptr, r->key.len), r->key.len};
    out->initiated_ns = r->initiated_ns;
    out->meta = r->meta_len ? arena_memdup(a, r->meta, r->meta_len) : NULL;
    out->meta_len = r->meta_len;
}

/* Looks up upload 'raw' in 'txn'. Returns 0 (borrowing the txn's pages),
 * -ENOENT or -EIO. */
static int
upload_lookup(struct index *ix, MDB_txn *txn, const uint8_t *raw, struct index__upload_rec *out)
{
    MDB_val k = {INDEX_UPLOAD_RAW_LEN, (void *)raw}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_uploads, &k, &v));
    if (rc == 0)
        rc = index__upload_parse(v.mv_data, v.mv_size, out);
    return rc;
}

/* ---- part records ------------------------------------------------------- */

/* Views part 'p' as the object record it is stored as (keys.h). */
static void
part_to_object(const struct index_part *p, struct index_object *o)
{
    memset(o, 0, sizeof(*o));
    o->size = p->size;
    o->mtime_ns = p->mtime_ns;
    memcpy(o->etag, p->etag, 16);
    o->parts_count = p->number;
    o->n_extents = p->n_extents;
    o->extents = p->extents;
    o->sums = p->sums;
    o->sums_len = p->sums_len;
    o->meta = p->meta;
    o->meta_len = p->meta_len;
}

static void
part_key(uint8_t out[INDEX_PART_KEY_LEN], const uint8_t *raw, uint32_t number)
{
    memcpy(out, raw, INDEX_UPLOAD_RAW_LEN);
    index__put_be32(out + INDEX_UPLOAD_RAW_LEN, number);
}

/*
 * Parses the part record 'v' stored under LMDB key 'k' into 'out' (whose
 * obj.parts_count is the part number). Returns 0 or -EIO when the key or
 * the record is malformed or they disagree.
 */
static int
part_parse(const MDB_val *k, const MDB_val *v, struct index__record *out)
{
    int rc;
    if (k->mv_size != INDEX_PART_KEY_LEN)
        return CORRUPT_BKPT("part key length");
    if ((rc = index__record_parse(v->mv_data, v->mv_size, out)) != 0)
        return rc;
    uint32_t number = index__get_be32((const uint8_t *)k->mv_data + INDEX_UPLOAD_RAW_LEN);
    if (out->full_key.len != 0 || out->obj.inline_len != 0 || number == 0 ||
        number > INDEX_MAX_PARTS || out->obj.parts_count != number)
        return CORRUPT_BKPT("part record does not match its key");
    return 0;
}

/* Copies a parsed part record into 'a' as an index_part. */
static void
part_copy(const struct index__record *r, struct arena *a, struct index_part *out)
{
    struct index_object o;
    index__record_copy(r, a, &o);
    memset(out, 0, sizeof(*out));
    out->number = o.parts_count;
    out->size = o.size;
    out->mtime_ns = o.mtime_ns;
    memcpy(out->etag, o.etag, 16);
    out->n_extents = o.n_extents;
    out->extents = o.extents;
    out->sums = o.sums;
    out->sums_len = o.sums_len;
    out->meta = o.meta;
    out->meta_len = o.meta_len;
}

/* ---- write-side helpers ------------------------------------------------- */

/* The bitmap of part numbers named by a CompleteMultipartUpload. */
#define USED_BYTES (INDEX_MAX_PARTS / 8 + 1)

static bool
used_has(const uint8_t *used, uint32_t n)
{
    return used[n / 8] & (1u << (n % 8));
}

/* Appends 'n' extents at 'add' to 'op->freed' (a fresh array in the arena). */
static void
freed_append(struct index_op *op, const struct index_extent *add, size_t n)
{
    if (n == 0)
        return;
    struct index_extent *all = arena_alloc(op->arena, (op->n_freed + n) * sizeof(*all));
    if (op->n_freed)
        memcpy(all, op->freed, op->n_freed * sizeof(*all));
    memcpy(all + op->n_freed, add, n * sizeof(*all));
    op->freed = all;
    op->n_freed += (uint32_t)n;
}

/*
 * Deletes every part of upload 'raw' in write txn 'txn' and appends to
 * 'op->freed' the extents of those whose number is not set in 'used'
 * (NULL: of all of them). The parts are read in one pass and deleted in a
 * second, so no pointer into a page outlives a write. Returns 0 or -errno.
 */
static int
parts_drop(struct index *ix, MDB_txn *txn, const uint8_t *raw, const uint8_t *used,
           struct index_op *op)
{
    struct index__iter it = {0};
    struct index__record r;
    struct index_extent e;
    struct buf freed, numbers;
    uint8_t pkey[INDEX_PART_KEY_LEN];
    int rc;

    buf_init(&freed);
    buf_init(&numbers);
    if ((rc = index__iter_begin(&it, txn, ix->dbi_parts, raw, INDEX_UPLOAD_RAW_LEN)) != 0)
        goto fail;
    while ((rc = index__iter_next(&it)) == 1) {
        if ((rc = part_parse(&it.k, &it.v, &r)) != 0)
            goto fail;
        uint32_t number = r.obj.parts_count;
        buf_append(&numbers, &number, sizeof(number));
        if (used && used_has(used, number))
            continue;
        for (uint32_t i = 0; i < r.obj.n_extents; i++) {
            index__record_extent(&r, i, &e);
            buf_append(&freed, &e, sizeof(e));
        }
    }
    if (rc < 0)
        goto fail;
    index__iter_end(&it);

    for (size_t off = 0; off < numbers.len; off += sizeof(uint32_t)) {
        uint32_t number;
        memcpy(&number, numbers.ptr + off, sizeof(number));
        part_key(pkey, raw, number);
        MDB_val k = {sizeof(pkey), pkey};
        if ((rc = index__err(mdb_del(txn, ix->dbi_parts, &k, NULL))) != 0)
            goto fail;
    }
    /* buf holds whole index_extent values; copy them out by bytes. */
    size_t n = freed.len / sizeof(e);
    if (n) {
        struct index_extent *add = arena_memdup(op->arena, freed.ptr, freed.len);
        freed_append(op, add, n);
    }
    rc = 0;

fail:
    index__iter_end(&it);
    buf_cleanup(&freed);
    buf_cleanup(&numbers);
    return rc;
}

/* Deletes the "uploads", "bucketuploads" and key tree entries of upload
 * 'raw' of bucket 'bucket_id'. Returns 0 or -errno. */
static int
upload_records_del(struct index *ix, MDB_txn *txn, const uint8_t *raw, uint64_t bucket_id)
{
    struct index__upload_rec rec;
    uint8_t bkey[INDEX_BUCKETUPLOAD_KEY_LEN], str[INDEX_TREE_STR_MAX];
    index__put_be64(bkey, bucket_id);
    memcpy(bkey + INDEX_BID_LEN, raw, INDEX_UPLOAD_RAW_LEN);
    MDB_val uk = {INDEX_UPLOAD_RAW_LEN, (void *)raw}, bk = {sizeof(bkey), bkey};
    int rc = upload_lookup(ix, txn, raw, &rec);
    if (rc != 0)
        return rc;
    /* Built before the deletes move the pages 'rec' borrows. */
    struct slice s = {(const char *)str, index__upload_tree_str(str, rec.key, raw)};
    rc = index__err(mdb_del(txn, ix->dbi_uploads, &uk, NULL));
    if (rc == 0) {
        rc = index__err(mdb_del(txn, ix->dbi_bucketuploads, &bk, NULL));
        if (rc == -ENOENT)
            rc = CORRUPT_BKPT("upload without its bucketuploads entry");
    }
    if (rc == 0) {
        rc = index__tree_remove(ix, txn, INDEX_TREE_ROOT_UPLOADS(bucket_id), s);
        if (rc == -ENOENT) {
            log_error("index: an upload of bucket %" PRIu64 " was missing from the key tree",
                      bucket_id);
            rc = 0;
        }
    }
    return rc;
}

/*
 * Finds the upload named by 'op->upload_id' for PART_PUT, ABORT and
 * COMPLETE, decoding it into 'raw'. Returns 0 and fills 'rec', or sets
 * op->result (-EINVAL for a malformed id or a bucket/key that is not the
 * upload's; -ENOENT when there is no such upload) and returns 1, or
 * returns -errno when the txn failed. 'must_match': op->bucket_id and
 * op->key are required (COMPLETE); else they are checked only when set.
 */
static int
upload_find(struct index *ix, MDB_txn *txn, struct index_op *op, bool must_match, uint8_t *raw,
            struct index__upload_rec *rec)
{
    int rc;
    if (upload_id_decode(op->upload_id, raw) != 0) {
        op->result = -EINVAL;
        return 1;
    }
    rc = upload_lookup(ix, txn, raw, rec);
    if (rc == -ENOENT) {
        op->result = -ENOENT;
        return 1;
    }
    if (rc != 0)
        return rc;
    if ((must_match || op->bucket_id) && op->bucket_id != rec->bucket_id) {
        op->result = -EINVAL;
        return 1;
    }
    if ((must_match || op->key.len) && !slice_eq(op->key, rec->key)) {
        op->result = -EINVAL;
        return 1;
    }
    return 0;
}

/* ---- completed uploads ("uploadsdone", keys.h) -------------------------- */

#define DONE_HEAD_LEN 22
/* The optional tail: the version the completion wrote (flags, id). */
#define DONE_VERSION_LEN (4 + INDEX_VERSION_ID_LEN)

/* Drops up to two of the first records (earliest-initiated uploads) when
 * the database holds more than INDEX_UPLOADS_DONE_MAX or the first was
 * completed more than INDEX_UPLOADS_DONE_TTL_NS before 'now_ns'. */
static int
done_prune(struct index *ix, MDB_txn *txn, int64_t now_ns)
{
    MDB_cursor *cur = NULL;
    MDB_stat st;
    int rc;

    if ((rc = index__err(mdb_stat(txn, ix->dbi_uploadsdone, &st))) != 0)
        return rc;
    if ((rc = index__err(mdb_cursor_open(txn, ix->dbi_uploadsdone, &cur))) != 0)
        return rc;
    size_t n = st.ms_entries;
    for (int i = 0; i < 2; i++) {
        MDB_val k, v;
        rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_FIRST));
        if (rc == -ENOENT) {
            rc = 0;
            break;
        }
        if (rc != 0)
            break;
        bool is_old = v.mv_size >= DONE_HEAD_LEN &&
                      now_ns - (int64_t)index__get_le64((const uint8_t *)v.mv_data + 8) >
                          INDEX_UPLOADS_DONE_TTL_NS;
        if (n <= INDEX_UPLOADS_DONE_MAX && !is_old)
            break;
        if ((rc = index__err(mdb_cursor_del(cur, 0))) != 0)
            break;
        n--;
    }
    mdb_cursor_close(cur);
    return rc;
}

/* Records the completion of upload 'raw' (op: bucket, key, done_result). */
static int
done_put(struct index *ix, MDB_txn *txn, const uint8_t *raw, const struct index_op *op)
{
    size_t rl = MIN(op->done_result_len, (size_t)INDEX_UPLOAD_DONE_RESULT_MAX);
    int64_t now_ns = op->object->mtime_ns;
    bool has_version = (op->result_version_flags & INDEX_VERSION_HAS_ID) != 0;
    MDB_val k = {INDEX_UPLOAD_RAW_LEN, (void *)raw}, v;
    v.mv_size = DONE_HEAD_LEN + op->key.len + rl + (has_version ? DONE_VERSION_LEN : 0);
    v.mv_data = NULL;
    int rc = index__err(mdb_put(txn, ix->dbi_uploadsdone, &k, &v, MDB_RESERVE));
    if (rc != 0)
        return rc;
    uint8_t *p = v.mv_data;
    index__put_le64(p, op->bucket_id);
    index__put_le64(p + 8, (uint64_t)now_ns);
    index__put_le16(p + 16, (uint16_t)op->key.len);
    index__put_le32(p + 18, (uint32_t)rl);
    memcpy(p + DONE_HEAD_LEN, op->key.ptr, op->key.len);
    if (rl)
        memcpy(p + DONE_HEAD_LEN + op->key.len, op->done_result, rl);
    if (has_version) {
        uint8_t *t = p + DONE_HEAD_LEN + op->key.len + rl;
        index__put_le32(t, op->result_version_flags);
        memcpy(t + 4, op->result_version_id, INDEX_VERSION_ID_LEN);
    }
    return done_prune(ix, txn, now_ns);
}

int
index_upload_done_get(struct index *ix, const char *upload_id, struct arena *a,
                      struct index_upload_done *out)
{
    MDB_txn *txn = NULL;
    uint8_t raw[INDEX_UPLOAD_RAW_LEN];
    int rc;

    if (upload_id_decode(upload_id, raw) != 0)
        return -ENOENT;
    if ((rc = index__read_begin(ix, &txn)) != 0)
        return rc;
    MDB_val k = {sizeof(raw), raw}, v;
    if ((rc = index__err(mdb_get(txn, ix->dbi_uploadsdone, &k, &v))) != 0)
        goto fail;
    const uint8_t *p = v.mv_data;
    size_t key_len = v.mv_size >= DONE_HEAD_LEN ? index__get_le16(p + 16) : 0;
    size_t rl = v.mv_size >= DONE_HEAD_LEN ? index__get_le32(p + 18) : 0;
    size_t body = DONE_HEAD_LEN + key_len + rl;
    if (v.mv_size < DONE_HEAD_LEN || key_len == 0 ||
        (body != v.mv_size && body + DONE_VERSION_LEN != v.mv_size)) {
        rc = CORRUPT_BKPT("completed upload record: lengths do not add up");
        goto fail;
    }
    memset(out, 0, sizeof(*out));
    if (body + DONE_VERSION_LEN == v.mv_size) {
        out->version_flags = index__get_le32(p + body);
        memcpy(out->version_id, p + body + 4, INDEX_VERSION_ID_LEN);
    }
    out->bucket_id = index__get_le64(p);
    out->completed_ns = (int64_t)index__get_le64(p + 8);
    out->key.ptr = arena_memdup(a, p + DONE_HEAD_LEN, key_len);
    out->key.len = key_len;
    out->result = rl ? arena_memdup(a, p + DONE_HEAD_LEN + key_len, rl) : NULL;
    out->result_len = rl;

fail:
    index__read_end(ix, txn);
    return rc;
}

/* ---- the four ops ------------------------------------------------------- */

static int
apply_create(struct index *ix, MDB_txn *txn, struct index_op *op, uint64_t *checked_bid)
{
    const struct index_upload *u = op->upload;
    uint8_t raw[INDEX_UPLOAD_RAW_LEN];
    int rc;

    if (!u || upload_id_decode(u->upload_id, raw) != 0 || !index__key_is_valid(u->key) ||
        (u->meta_len && !u->meta) || u->meta_len > UINT32_MAX ||
        (op->bucket_id && op->bucket_id != u->bucket_id) ||
        (op->key.len && !slice_eq(op->key, u->key)) ||
        (op->upload_id && strcmp(op->upload_id, u->upload_id) != 0)) {
        op->result = -EINVAL;
        return 0;
    }
    rc = index__bucket_check(ix, txn, u->bucket_id, checked_bid);
    if (rc == -ENOENT) {
        op->result = -ENOENT;
        return 0;
    }
    if (rc != 0)
        return rc;

    MDB_val k = {sizeof(raw), raw}, v = {upload_len(u), NULL};
    rc = index__err(mdb_put(txn, ix->dbi_uploads, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE));
    if (rc == -EEXIST) {
        op->result = -EEXIST;
        return 0;
    }
    if (rc != 0)
        return rc;
    upload_format(v.mv_data, u);

    uint8_t bkey[INDEX_BUCKETUPLOAD_KEY_LEN];
    index__put_be64(bkey, u->bucket_id);
    memcpy(bkey + INDEX_BID_LEN, raw, sizeof(raw));
    MDB_val bk = {sizeof(bkey), bkey}, bv = {0, NULL};
    if ((rc = index__err(mdb_put(txn, ix->dbi_bucketuploads, &bk, &bv, 0))) != 0)
        return rc;
    uint8_t str[INDEX_TREE_STR_MAX];
    struct slice s = {(const char *)str, index__upload_tree_str(str, u->key, raw)};
    return index__tree_insert(ix, txn, INDEX_TREE_ROOT_UPLOADS(u->bucket_id), s);
}

static int
apply_part_put(struct index *ix, MDB_txn *txn, struct index_op *op)
{
    const struct index_part *p = op->part;
    struct index__upload_rec rec;
    struct index__record old;
    struct index_object o;
    uint8_t raw[INDEX_UPLOAD_RAW_LEN], pkey[INDEX_PART_KEY_LEN];
    int rc;

    if (p)
        part_to_object(p, &o);
    if (!p || p->number == 0 || p->number > INDEX_MAX_PARTS || !index__object_is_valid(&o)) {
        op->result = -EINVAL;
        return 0;
    }
    if ((rc = upload_find(ix, txn, op, false, raw, &rec)) != 0)
        return rc < 0 ? rc : 0;

    part_key(pkey, raw, p->number);
    MDB_val k = {sizeof(pkey), pkey}, v;
    rc = index__err(mdb_get(txn, ix->dbi_parts, &k, &v));
    if (rc == 0) {
        /* Copy the replaced part's extents out before the put. */
        if ((rc = part_parse(&k, &v, &old)) != 0)
            return rc;
        op->freed = index__record_extents(&old, op->arena);
        op->n_freed = old.obj.n_extents;
    } else if (rc != -ENOENT) {
        return rc;
    }
    v.mv_size = index__record_len(&o, 0);
    v.mv_data = NULL;
    if ((rc = index__err(mdb_put(txn, ix->dbi_parts, &k, &v, MDB_RESERVE))) != 0)
        return rc;
    index__record_format(v.mv_data, &o, NULL, 0);
    return 0;
}

static int
apply_abort(struct index *ix, MDB_txn *txn, struct index_op *op)
{
    struct index__upload_rec rec;
    uint8_t raw[INDEX_UPLOAD_RAW_LEN];
    int rc;

    if ((rc = upload_find(ix, txn, op, false, raw, &rec)) != 0)
        return rc < 0 ? rc : 0;
    uint64_t bucket_id = rec.bucket_id; /* 'rec' borrows pages the writes may move */
    if ((rc = parts_drop(ix, txn, raw, NULL, op)) != 0)
        return rc;
    return upload_records_del(ix, txn, raw, bucket_id);
}

/*
 * Checks 'op->parts_used': at most INDEX_MAX_PARTS entries, numbers in
 * 1..INDEX_MAX_PARTS and no number twice (two references to one part's
 * extents would free them twice later). Marks them in 'used'.
 */
static bool
parts_used_mark(const struct index_op *op, uint8_t *used)
{
    memset(used, 0, USED_BYTES);
    if (op->n_parts_used > INDEX_MAX_PARTS || (op->n_parts_used && !op->parts_used))
        return false;
    for (uint32_t i = 0; i < op->n_parts_used; i++) {
        uint32_t n = op->parts_used[i].number;
        if (n == 0 || n > INDEX_MAX_PARTS || used_has(used, n))
            return false;
        used[n / 8] |= (uint8_t)(1u << (n % 8));
    }
    return true;
}

static int
apply_complete(struct index *ix, MDB_txn *txn, struct index_op *op, uint64_t *checked_bid)
{
    struct index__upload_rec rec;
    struct index__record r;
    uint8_t raw[INDEX_UPLOAD_RAW_LEN], pkey[INDEX_PART_KEY_LEN], used[USED_BYTES];
    int rc;

    if (!index__key_is_valid(op->key) || !index__object_is_valid(op->object) ||
        !parts_used_mark(op, used)) {
        op->result = -EINVAL;
        return 0;
    }
    if ((rc = upload_find(ix, txn, op, true, raw, &rec)) != 0)
        return rc < 0 ? rc : 0;
    /* The upload pins its bucket (bucket.c), so this only guards the
     * invariant and fills the cache. */
    rc = index__bucket_check(ix, txn, op->bucket_id, checked_bid);
    if (rc == -ENOENT) {
        op->result = -ENOENT;
        return 0;
    }
    if (rc != 0)
        return rc;

    for (uint32_t i = 0; i < op->n_parts_used; i++) {
        part_key(pkey, raw, op->parts_used[i].number);
        MDB_val k = {sizeof(pkey), pkey}, v;
        rc = index__err(mdb_get(txn, ix->dbi_parts, &k, &v));
        if (rc == -ENOENT) {
            op->result = -ESTALE;
            return 0;
        }
        if (rc != 0 || (rc = part_parse(&k, &v, &r)) != 0)
            return rc;
        if (memcmp(r.obj.etag, op->parts_used[i].etag, 16) != 0) {
            op->result = -ESTALE;
            return 0;
        }
    }

    /* The put evaluates the conditions and writes nothing when they fail. */
    if ((rc = index__object_write(ix, txn, op, false)) != 0 || op->result != 0)
        return rc;
    if ((rc = parts_drop(ix, txn, raw, used, op)) != 0)
        return rc;
    if ((rc = done_put(ix, txn, raw, op)) != 0)
        return rc;
    return upload_records_del(ix, txn, raw, op->bucket_id);
}

int
index__upload_apply(struct index *ix, MDB_txn *txn, struct index_op *op, uint64_t *checked_bid)
{
    switch (op->kind) {
    case INDEX_OP_UPLOAD_CREATE:
        return apply_create(ix, txn, op, checked_bid);
    case INDEX_OP_PART_PUT:
        return apply_part_put(ix, txn, op);
    case INDEX_OP_UPLOAD_ABORT:
        return apply_abort(ix, txn, op);
    case INDEX_OP_UPLOAD_COMPLETE:
        return apply_complete(ix, txn, op, checked_bid);
    default:
        op->result = -EINVAL;
        return 0;
    }
}

/* ---- reads -------------------------------------------------------------- */

int
index_upload_get(struct index *ix, const char *upload_id, struct arena *a, struct index_upload *out)
{
    MDB_txn *txn = NULL;
    struct index__upload_rec rec;
    uint8_t raw[INDEX_UPLOAD_RAW_LEN];

    if (upload_id_decode(upload_id, raw) != 0)
        return -ENOENT;
    int rc = index__read_begin(ix, &txn);
    if (rc == 0)
        rc = upload_lookup(ix, txn, raw, &rec);
    if (rc == 0)
        index__upload_copy(&rec, raw, a, out);
    index__read_end(ix, txn);
    return rc;
}

int
index_part_list(struct index *ix, const char *upload_id, uint32_t after, uint32_t max,
                struct arena *a, struct index_part **parts, uint32_t *n_parts, bool *is_truncated)
{
    MDB_txn *txn = NULL;
    struct index__iter it = {0};
    struct index__upload_rec rec;
    struct index__record r;
    struct index_part part;
    uint8_t raw[INDEX_UPLOAD_RAW_LEN], pkey[INDEX_PART_KEY_LEN];
    /* Gathered on the heap, then copied to 'a' at their real count:
     * callers often ask for INDEX_MAX_PARTS. */
    struct buf got;
    int rc;

    buf_init(&got);
    *parts = NULL;
    *n_parts = 0;
    *is_truncated = false;
    max = MIN(max, INDEX_MAX_PARTS);
    if (upload_id_decode(upload_id, raw) != 0)
        return -ENOENT;
    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = upload_lookup(ix, txn, raw, &rec)) != 0)
        goto fail;
    if (max == 0 || after >= INDEX_MAX_PARTS)
        goto fail; /* rc == 0: nothing to list */

    uint32_t n = 0;
    part_key(pkey, raw, after + 1);
    if ((rc = index__iter_begin(&it, txn, ix->dbi_parts, raw, INDEX_UPLOAD_RAW_LEN)) != 0)
        goto fail;
    for (rc = index__iter_seek(&it, pkey, sizeof(pkey)); rc == 1; rc = index__iter_next(&it)) {
        if (n == max) {
            *is_truncated = true;
            break;
        }
        if ((rc = part_parse(&it.k, &it.v, &r)) != 0)
            goto fail;
        part_copy(&r, a, &part);
        buf_append(&got, &part, sizeof(part));
        n++;
    }
    if (rc < 0)
        goto fail;
    rc = 0;
    *parts = n ? arena_memdup(a, got.ptr, got.len) : NULL;
    *n_parts = n;

fail:
    if (rc != 0)
        *is_truncated = false;
    buf_cleanup(&got);
    index__iter_end(&it);
    index__read_end(ix, txn);
    return rc;
}
