/*
 * test_upload.c: multipart uploads through index_commit and the upload
 * reads: create/get, part put/replace/list, abort, complete (success,
 * stale etags, missing upload, conditions, long keys, one batch), bucket
 * delete blocked by an upload and ops with a stale bucket id, parts in
 * index_extents_scan, ListMultipartUploads against a model (prefix,
 * delimiter, markers, max, paging) and its cost of O(page) reads over
 * thousands of uploads (also after the key tree is rebuilt), persistence
 * across reopen, the upload
 * record parser's bounds checks, a corrupt part record, and
 * index_object_scan (each object once, early stop, writes from the
 * callback).
 */
#include "index/index.h"
#include "index/index_int.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>
#include <inttypes.h>

static struct index *ix;
static uint64_t bid;
static char *dir;

/* An upload id: initiation time (16 hex) then 'n' (16 hex). */
static const char *
uid(struct arena *a, uint64_t n)
{
    return arena_sprintf(a, "%016" PRIx64 "%016" PRIx64, (uint64_t)1700000000000000000ull, n);
}

static int
commit1(struct index_op *op)
{
    ASSERT_EQ(index_commit(ix, op, 1), 0);
    return op->result;
}

static int
create(struct arena *a, uint64_t bucket_id, struct slice key, const char *id)
{
    struct index_upload *u = arena_calloc(a, 1, sizeof(*u));
    snprintf(u->upload_id, sizeof(u->upload_id), "%s", id);
    u->bucket_id = bucket_id;
    u->key = key;
    u->initiated_ns = 42;
    u->meta = (const uint8_t *)"ct\0text/x";
    u->meta_len = 9;
    struct index_op op = {.kind = INDEX_OP_UPLOAD_CREATE, .upload = u, .arena = a};
    return commit1(&op);
}

/* Puts part 'number' of 'id' with one extent at 'offset' ('len' bytes)
 * and every etag byte 'tag'; returns the op (result, freed). */
static struct index_op
part_put(struct arena *a, const char *id, uint32_t number, uint8_t tag, uint64_t offset,
         uint64_t len)
{
    struct index_part *p = arena_calloc(a, 1, sizeof(*p));
    struct index_extent *e = arena_calloc(a, 1, sizeof(*e));
    *e = (struct index_extent){.volume = 3, .offset = offset, .len = len};
    p->number = number;
    p->size = len;
    p->mtime_ns = (int64_t)number * 10;
    memset(p->etag, tag, 16);
    p->n_extents = 1;
    p->extents = e;
    p->sums = (const uint8_t *)"SUMS";
    p->sums_len = 4;
    p->meta = (const uint8_t *)"crc";
    p->meta_len = 3;
    struct index_op op = {.kind = INDEX_OP_PART_PUT, .upload_id = id, .part = p, .arena = a};
    ASSERT_EQ(index_commit(ix, &op, 1), 0);
    return op;
}

struct scan_totals {
    uint64_t n, bytes;
};

static void
scan_cb(void *ctx, const struct index_extent *e)
{
    struct scan_totals *t = ctx;
    t->n++;
    t->bytes += e->len;
}

static struct scan_totals
scan(void)
{
    struct scan_totals t = {0, 0};
    ASSERT_EQ(index_extents_scan(ix, scan_cb, &t), 0);
    return t;
}

static int
abort_upload(struct arena *a, const char *id, struct index_op *out)
{
    struct index_op op = {.kind = INDEX_OP_UPLOAD_ABORT, .upload_id = id, .arena = a};
    int rc = commit1(&op);
    if (out)
        *out = op;
    return rc;
}

/* ---- create / get ------------------------------------------------------- */

static void
test_create_get(struct arena *a)
{
    const char *id = uid(a, 1);
    struct index_upload u;

    ASSERT_EQ(index_upload_get(ix, id, a, &u), -ENOENT);
    ASSERT_EQ(create(a, bid, SLICE_LIT("photos/cat.jpg"), id), 0);
    ASSERT_EQ(index_upload_get(ix, id, a, &u), 0);
    ASSERT_STR_EQ(u.upload_id, id);
    ASSERT_UEQ(u.bucket_id, bid);
    ASSERT(slice_eq(u.key, SLICE_LIT("photos/cat.jpg")));
    ASSERT_EQ(u.initiated_ns, 42);
    ASSERT_UEQ(u.meta_len, 9);
    ASSERT_MEM_EQ(u.meta, "ct\0text/x", 9);
    ASSERT_EQ(create(a, bid, SLICE_LIT("other"), id), -EEXIST);
    ASSERT_EQ(create(a, bid + 1000, SLICE_LIT("k"), uid(a, 2)), -ENOENT);
    ASSERT_EQ(create(a, 0, SLICE_LIT("k"), uid(a, 2)), -ENOENT);
    ASSERT_EQ(create(a, bid, SLICE_NULL, uid(a, 2)), -EINVAL);

    /* Malformed ids: -EINVAL for ops, -ENOENT for reads. */
    static const char *const bad[] = {"",
                                      "0123",
                                      "0123456789abcdef0123456789abcdeF",
                                      "0123456789abcdef0123456789abcdefa",
                                      "0123456789abcdef0123456789abcdeg",
                                      "0123456789abcdef 123456789abcdef"};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        if (strlen(bad[i]) <= INDEX_UPLOAD_ID_LEN) /* else it would not fit upload_id[] */
            ASSERT_EQ(create(a, bid, SLICE_LIT("k"), bad[i]), -EINVAL);
        ASSERT_EQ(index_upload_get(ix, bad[i], a, &u), -ENOENT);
        struct index_op op = part_put(a, bad[i], 1, 1, 0, 1);
        ASSERT_EQ(op.result, -EINVAL);
        ASSERT_EQ(abort_upload(a, bad[i], NULL), -EINVAL);
        struct index_part *parts;
        uint32_t n;
        bool trunc;
        ASSERT_EQ(index_part_list(ix, bad[i], 0, 10, a, &parts, &n, &trunc), -ENOENT);
    }
    ASSERT_EQ(index_upload_get(ix, NULL, a, &u), -ENOENT);
    ASSERT_EQ(abort_upload(a, NULL, NULL), -EINVAL);

    /* op.bucket_id / op.key, when set, must be the upload's. */
    struct index_upload nu = {.bucket_id = bid, .key = SLICE_LIT("x")};
    snprintf(nu.upload_id, sizeof(nu.upload_id), "%s", uid(a, 3));
    struct index_op op = {.kind = INDEX_OP_UPLOAD_CREATE,
                          .upload = &nu,
                          .bucket_id = bid,
                          .key = SLICE_LIT("y"),
                          .arena = a};
    ASSERT_EQ(commit1(&op), -EINVAL);
    op.key = SLICE_LIT("x");
    op.bucket_id = bid + 1;
    ASSERT_EQ(commit1(&op), -EINVAL);
    op.bucket_id = bid;
    op.arena = NULL;
    ASSERT_EQ(commit1(&op), -EINVAL);
    op.arena = a;
    ASSERT_EQ(commit1(&op), 0);
    op = (struct index_op){.kind = INDEX_OP_UPLOAD_ABORT,
                           .upload_id = nu.upload_id,
                           .bucket_id = bid,
                           .key = SLICE_LIT("not x"),
                           .arena = a};
    ASSERT_EQ(commit1(&op), -EINVAL);
    op.key = SLICE_LIT("x");
    ASSERT_EQ(commit1(&op), 0);
    ASSERT_EQ(index_upload_get(ix, nu.upload_id, a, &u), -ENOENT);

    ASSERT_EQ(abort_upload(a, id, NULL), 0);
    ASSERT_EQ(abort_upload(a, id, NULL), -ENOENT);
}

/* ---- parts -------------------------------------------------------------- */

static void
test_parts(struct arena *a)
{
    const char *id = uid(a, 10);
    struct index_part *parts;
    uint32_t n;
    bool trunc;
    struct index_op op;

    ASSERT_EQ(part_put(a, id, 1, 1, 0, 100).result, -ENOENT); /* no such upload */
    ASSERT_EQ(create(a, bid, SLICE_LIT("big"), id), 0);
    ASSERT_EQ(index_part_list(ix, id, 0, 1000, a, &parts, &n, &trunc), 0);
    ASSERT_UEQ(n, 0);
    ASSERT(!trunc);

    for (uint32_t i = 1; i <= 5; i++) {
        op = part_put(a, id, i, (uint8_t)i, i * 1000, 100 + i);
        ASSERT_EQ(op.result, 0);
        ASSERT_UEQ(op.n_freed, 0);
    }
    ASSERT_EQ(part_put(a, id, 0, 1, 0, 1).result, -EINVAL);
    ASSERT_EQ(part_put(a, id, INDEX_MAX_PARTS + 1, 1, 0, 1).result, -EINVAL);
    op = (struct index_op){.kind = INDEX_OP_PART_PUT, .upload_id = id, .arena = a};
    ASSERT_EQ(commit1(&op), -EINVAL); /* no part */

    /* Replacing part 2 frees its old extent. */
    op = part_put(a, id, 2, 0x22, 99000, 7);
    ASSERT_EQ(op.result, 0);
    ASSERT_UEQ(op.n_freed, 1);
    ASSERT_UEQ(op.freed[0].offset, 2000);
    ASSERT_UEQ(op.freed[0].len, 102);

    ASSERT_EQ(index_part_list(ix, id, 0, 1000, a, &parts, &n, &trunc), 0);
    ASSERT_UEQ(n, 5);
    ASSERT(!trunc);
    for (uint32_t i = 0; i < n; i++) {
        ASSERT_UEQ(parts[i].number, i + 1);
        ASSERT_EQ(parts[i].mtime_ns, (int64_t)(i + 1) * 10);
        ASSERT_UEQ(parts[i].n_extents, 1);
        ASSERT_UEQ(parts[i].extents[0].volume, 3);
        ASSERT_UEQ(parts[i].sums_len, 4);
        ASSERT_MEM_EQ(parts[i].sums, "SUMS", 4);
        ASSERT_UEQ(parts[i].meta_len, 3);
        ASSERT_MEM_EQ(parts[i].meta, "crc", 3);
    }
    ASSERT_UEQ(parts[1].size, 7);
    ASSERT_EQ(parts[1].etag[15], 0x22);
    ASSERT_UEQ(parts[1].extents[0].offset, 99000);
    ASSERT_UEQ(parts[4].extents[0].offset, 5000);

    /* Paging by 'after' and 'max'. */
    ASSERT_EQ(index_part_list(ix, id, 1, 1, a, &parts, &n, &trunc), 0);
    ASSERT_UEQ(n, 1);
    ASSERT_UEQ(parts[0].number, 2);
    ASSERT(trunc);
    ASSERT_EQ(index_part_list(ix, id, 3, 2, a, &parts, &n, &trunc), 0);
    ASSERT_UEQ(n, 2);
    ASSERT_UEQ(parts[1].number, 5);
    ASSERT(!trunc);
    ASSERT_EQ(index_part_list(ix, id, 5, 2, a, &parts, &n, &trunc), 0);
    ASSERT_UEQ(n, 0);
    ASSERT(!trunc);
    ASSERT_EQ(index_part_list(ix, id, 0, 0, a, &parts, &n, &trunc), 0);
    ASSERT_UEQ(n, 0);
    ASSERT(!trunc);
    ASSERT_EQ(index_part_list(ix, id, UINT32_MAX, 10, a, &parts, &n, &trunc), 0);
    ASSERT_UEQ(n, 0);
    ASSERT_EQ(index_part_list(ix, uid(a, 11), 0, 10, a, &parts, &n, &trunc), -ENOENT);

    /* The extents scan sees the parts. */
    struct scan_totals t = scan();
    ASSERT_UEQ(t.n, 5);
    ASSERT_UEQ(t.bytes, 101 + 7 + 103 + 104 + 105);

    /* Abort frees every part's extents; the upload and its parts go. */
    ASSERT_EQ(abort_upload(a, id, &op), 0);
    ASSERT_UEQ(op.n_freed, 5);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < op.n_freed; i++)
        bytes += op.freed[i].len;
    ASSERT_UEQ(bytes, 101 + 7 + 103 + 104 + 105);
    ASSERT_EQ(index_part_list(ix, id, 0, 10, a, &parts, &n, &trunc), -ENOENT);
    ASSERT_EQ(part_put(a, id, 1, 1, 0, 1).result, -ENOENT);
    t = scan();
    ASSERT_UEQ(t.n, 0);
    /* Parts of another upload are untouched by it (none here) and a new
     * upload with the same id starts empty. */
    ASSERT_EQ(create(a, bid, SLICE_LIT("big"), id), 0);
    ASSERT_EQ(index_part_list(ix, id, 0, 10, a, &parts, &n, &trunc), 0);
    ASSERT_UEQ(n, 0);
    ASSERT_EQ(abort_upload(a, id, &op), 0);
    ASSERT_UEQ(op.n_freed, 0);
}

/* ---- complete ----------------------------------------------------------- */

static struct index_op
complete_op(struct arena *a, const char *id, struct slice key, const struct index_object *o,
            const struct index_part_ref *refs, uint32_t n)
{
    return (struct index_op){.kind = INDEX_OP_UPLOAD_COMPLETE,
                             .bucket_id = bid,
                             .key = key,
                             .upload_id = id,
                             .object = o,
                             .parts_used = refs,
                             .n_parts_used = n,
                             .arena = a};
}

static bool
freed_has(const struct index_op *op, uint64_t offset)
{
    for (uint32_t i = 0; i < op->n_freed; i++)
        if (op->freed[i].offset == offset)
            return true;
    return false;
}

/* Runs the whole complete story on 'key' (short or long). */
static void
test_complete_key(struct arena *a, struct slice key, uint64_t salt)
{
    const char *id = uid(a, 100 + salt);
    struct index_object got;
    struct index_upload u;
    struct index_part *parts;
    uint32_t n;
    bool trunc;
    uint64_t base = salt * 1000000;

    /* An old version of the key, to be replaced. */
    struct index_extent old_ext = {.volume = 9, .offset = base + 777, .len = 50};
    struct index_object old = {.size = 50, .n_extents = 1, .extents = &old_ext};
    memset(old.etag, 0x0E, 16);
    struct index_op op = {
        .kind = INDEX_OP_PUT, .bucket_id = bid, .key = key, .object = &old, .arena = a};
    ASSERT_EQ(commit1(&op), 0);

    ASSERT_EQ(create(a, bid, key, id), 0);
    for (uint32_t i = 1; i <= 4; i++)
        ASSERT_EQ(part_put(a, id, i, (uint8_t)(0x40 + i), base + i * 1000, 10 * i).result, 0);

    /* The object the caller joined from parts 1, 3 and 4. */
    struct index_extent ext[3] = {
        {3, 0, base + 1000, 10}, {3, 0, base + 3000, 30}, {3, 0, base + 4000, 40}};
    struct index_object o = {.size = 80,
                             .mtime_ns = 5,
                             .parts_count = 3,
                             .n_extents = 3,
                             .extents = ext,
                             .sums = (const uint8_t *)"SUMSSUMSSUMS",
                             .sums_len = 12};
    memset(o.etag, 0xEE, 16);
    struct index_part_ref refs[3] = {{1, {0}}, {3, {0}}, {4, {0}}};
    memset(refs[0].etag, 0x41, 16);
    memset(refs[1].etag, 0x43, 16);
    memset(refs[2].etag, 0x44, 16);

    /* Failures change nothing. */
    refs[1].etag[7] ^= 1;
    op = complete_op(a, id, key, &o, refs, 3);
    ASSERT_EQ(commit1(&op), -ESTALE);
    ASSERT_UEQ(op.n_freed, 0);
    refs[1].etag[7] ^= 1;
    struct index_part_ref missing[2] = {refs[0], {5, {0}}};
    op = complete_op(a, id, key, &o, missing, 2);
    ASSERT_EQ(commit1(&op), -ESTALE);
    struct index_part_ref dup[2] = {refs[0], refs[0]};
    op = complete_op(a, id, key, &o, dup, 2);
    ASSERT_EQ(commit1(&op), -EINVAL);
    struct index_part_ref zero[1] = {{0, {0}}};
    op = complete_op(a, id, key, &o, zero, 1);
    ASSERT_EQ(commit1(&op), -EINVAL);
    op = complete_op(a, id, key, &o, NULL, 1);
    ASSERT_EQ(commit1(&op), -EINVAL);
    op = complete_op(a, id, SLICE_LIT("another key"), &o, refs, 3);
    ASSERT_EQ(commit1(&op), -EINVAL);
    op = complete_op(a, id, key, &o, refs, 3);
    op.bucket_id = bid + 1;
    ASSERT_EQ(commit1(&op), -EINVAL);
    op = complete_op(a, uid(a, 999), key, &o, refs, 3);
    ASSERT_EQ(commit1(&op), -ENOENT);
    op = complete_op(a, "nothex", key, &o, refs, 3);
    ASSERT_EQ(commit1(&op), -EINVAL);
    op = complete_op(a, id, key, NULL, refs, 3);
    ASSERT_EQ(commit1(&op), -EINVAL);
    op = complete_op(a, id, key, &o, refs, 3);
    op.if_none_match = true;
    ASSERT_EQ(commit1(&op), -EEXIST);
    op = complete_op(a, id, key, &o, refs, 3);
    op.has_if_match = true;
    memset(op.if_match_etag, 0x0F, 16);
    ASSERT_EQ(commit1(&op), -ESTALE);

    ASSERT_EQ(index_upload_get(ix, id, a, &u), 0);
    ASSERT_EQ(index_part_list(ix, id, 0, 100, a, &parts, &n, &trunc), 0);
    ASSERT_UEQ(n, 4);
    ASSERT_EQ(index_object_get(ix, bid, key, a, &got), 0);
    ASSERT_UEQ(got.size, 50);
    struct scan_totals t = scan();
    ASSERT_UEQ(t.n, 5);
    ASSERT_UEQ(t.bytes, 50 + 10 + 20 + 30 + 40);

    /* Success (with a matching If-Match on the old version). */
    op = complete_op(a, id, key, &o, refs, 3);
    op.has_if_match = true;
    memset(op.if_match_etag, 0x0E, 16);
    ASSERT_EQ(commit1(&op), 0);
    /* freed = the replaced object's extent + unused part 2's. */
    ASSERT_UEQ(op.n_freed, 2);
    ASSERT(freed_has(&op, base + 777));
    ASSERT(freed_has(&op, base + 2000));
    ASSERT_EQ(index_object_get(ix, bid, key, a, &got), 0);
    ASSERT_UEQ(got.size, 80);
    ASSERT_UEQ(got.parts_count, 3);
    ASSERT_MEM_EQ(got.etag, o.etag, 16);
    ASSERT_UEQ(got.n_extents, 3);
    for (int i = 0; i < 3; i++) {
        ASSERT_UEQ(got.extents[i].offset, ext[i].offset);
        ASSERT_UEQ(got.extents[i].len, ext[i].len);
    }
    ASSERT_UEQ(got.sums_len, 12);
    ASSERT_EQ(index_upload_get(ix, id, a, &u), -ENOENT);
    ASSERT_EQ(index_part_list(ix, id, 0, 100, a, &parts, &n, &trunc), -ENOENT);
    t = scan();
    ASSERT_UEQ(t.n, 3); /* only the object's extents remain referenced */
    ASSERT_UEQ(t.bytes, 80);
    op = complete_op(a, id, key, &o, refs, 3);
    ASSERT_EQ(commit1(&op), -ENOENT);

    op = (struct index_op){.kind = INDEX_OP_DELETE, .bucket_id = bid, .key = key, .arena = a};
    ASSERT_EQ(commit1(&op), 0);
    ASSERT_UEQ(op.n_freed, 3);
}

/* Create, parts and complete in one batch; a later op sees earlier ones. */
static void
test_complete_batch(struct arena *a)
{
    const char *id = uid(a, 200);
    struct index_upload u = {.bucket_id = bid, .key = SLICE_LIT("batched"), .initiated_ns = 1};
    snprintf(u.upload_id, sizeof(u.upload_id), "%s", id);
    struct index_extent e1 = {1, 0, 10, 5}, e2 = {1, 0, 20, 6};
    struct index_part p1 = {.number = 1, .size = 5, .n_extents = 1, .extents = &e1};
    struct index_part p2 = {.number = 2, .size = 6, .n_extents = 1, .extents = &e2};
    memset(p1.etag, 1, 16);
    memset(p2.etag, 2, 16);
    struct index_part_ref refs[1] = {{1, {0}}};
    memset(refs[0].etag, 1, 16);
    struct index_object o = {.size = 5, .n_extents = 1, .extents = &e1, .parts_count = 1};
    struct index_op ops[5] = {
        {.kind = INDEX_OP_UPLOAD_CREATE, .upload = &u, .arena = a},
        {.kind = INDEX_OP_PART_PUT, .upload_id = id, .part = &p1, .arena = a},
        {.kind = INDEX_OP_PART_PUT, .upload_id = id, .part = &p2, .arena = a},
        complete_op(a, id, SLICE_LIT("batched"), &o, refs, 1),
        {.kind = INDEX_OP_UPLOAD_ABORT, .upload_id = id, .arena = a},
    };
    ASSERT_EQ(index_commit(ix, ops, 5), 0);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(ops[i].result, 0);
    ASSERT_EQ(ops[4].result, -ENOENT);
    ASSERT_UEQ(ops[3].n_freed, 1);
    ASSERT_UEQ(ops[3].freed[0].offset, 20);
    struct index_object got;
    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("batched"), a, &got), 0);
    ASSERT_UEQ(got.extents[0].offset, 10);
    struct index_op d = {
        .kind = INDEX_OP_DELETE, .bucket_id = bid, .key = SLICE_LIT("batched"), .arena = a};
    ASSERT_EQ(commit1(&d), 0);
}

/* ---- buckets ------------------------------------------------------------ */

static void
test_bucket_delete(struct arena *a)
{
    struct index_bucket b;
    const char *id = uid(a, 300);
    struct index_op op;

    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("tmp"), "", 1, &b), 0);
    ASSERT_EQ(create(a, b.id, SLICE_LIT("k"), id), 0);
    /* Uploads only: -EBUSY (the server aborts them), not -ENOTEMPTY. */
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("tmp"), b.id), -EBUSY);
    ASSERT_EQ(part_put(a, id, 1, 1, 5, 5).result, 0);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("tmp"), b.id), -EBUSY);
    ASSERT_EQ(abort_upload(a, id, &op), 0);
    ASSERT_UEQ(op.n_freed, 1);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("tmp"), b.id), 0);

    /* Ops carrying the deleted bucket's id. */
    ASSERT_EQ(create(a, b.id, SLICE_LIT("k"), id), -ENOENT);
    ASSERT_EQ(part_put(a, id, 1, 1, 5, 5).result, -ENOENT);
    ASSERT_EQ(abort_upload(a, id, NULL), -ENOENT);
    struct index_object o = {.size = 0};
    op = complete_op(a, id, SLICE_LIT("k"), &o, NULL, 0);
    op.bucket_id = b.id;
    ASSERT_EQ(commit1(&op), -ENOENT);
    struct index_upload_list_params p = {.bucket_id = b.id, .max_uploads = 10};
    struct index_upload_list_result r;
    ASSERT_EQ(index_upload_list(ix, &p, a, &r), 0);
    ASSERT_UEQ(r.n_uploads, 0);

    /* A bucket recreated under the same name gets a new id; an upload of
     * the old id cannot be completed into it. */
    struct index_bucket b2;
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("tmp"), "", 2, &b2), 0);
    ASSERT(b2.id != b.id);
    ASSERT_EQ(create(a, b2.id, SLICE_LIT("k"), id), 0);
    op = complete_op(a, id, SLICE_LIT("k"), &o, NULL, 0);
    op.bucket_id = b.id;
    ASSERT_EQ(commit1(&op), -EINVAL);
    op.bucket_id = b2.id;
    op.done_result = (const uint8_t *)"result";
    op.done_result_len = 6;
    ASSERT_EQ(commit1(&op), 0); /* an empty object from zero parts */
    /* The completion is remembered under the upload id. */
    struct index_upload_done done;
    ASSERT_EQ(index_upload_done_get(ix, id, a, &done), 0);
    ASSERT_UEQ(done.bucket_id, b2.id);
    ASSERT(slice_eq(done.key, SLICE_LIT("k")));
    ASSERT(done.result_len == 6 && memcmp(done.result, "result", 6) == 0);
    ASSERT_EQ(index_upload_done_get(ix, uid(a, 301), a, &done), -ENOENT);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("tmp"), b2.id), -ENOTEMPTY);
    op = (struct index_op){
        .kind = INDEX_OP_DELETE, .bucket_id = b2.id, .key = SLICE_LIT("k"), .arena = a};
    ASSERT_EQ(commit1(&op), 0);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("tmp"), b2.id), 0);
}

/* ---- ListMultipartUploads against a model ------------------------------- */

#define N_MODEL 60

struct mup {
    char key[16];
    char id[INDEX_UPLOAD_ID_LEN + 1];
};
static struct mup model[N_MODEL];
static size_t n_model;

static int
mup_cmp(const void *pa, const void *pb)
{
    const struct mup *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    return c ? c : strcmp(a->id, b->id);
}

/* One item of a listing: a common prefix (id "") or an upload. */
struct item {
    char key[16];
    char id[INDEX_UPLOAD_ID_LEN + 1];
};

static bool
starts_with(const char *s, size_t len, struct slice p)
{
    return len >= p.len && memcmp(s, p.ptr, p.len) == 0;
}

static int
slcmp(const char *s, struct slice t)
{
    return slice_cmp(slice_from_cstr(s), t);
}

/* The model: every item in order, then markers, then max. Keys here have
 * no NUL bytes, so C strings suffice. */
static size_t
model_list(const struct index_upload_list_params *p, struct item *out, bool *trunc)
{
    struct item all[N_MODEL];
    size_t n_all = 0, n = 0;
    for (size_t i = 0; i < n_model; i++) {
        const char *k = model[i].key;
        size_t len = strlen(k);
        if (!starts_with(k, len, p->prefix))
            continue;
        struct item it = {{0}, {0}};
        const char *rest = k + p->prefix.len;
        const char *d = NULL;
        if (p->delimiter.len)
            for (const char *q = rest; q + p->delimiter.len <= k + len && !d; q++)
                if (memcmp(q, p->delimiter.ptr, p->delimiter.len) == 0)
                    d = q;
        if (d) {
            memcpy(it.key, k, (size_t)(d - k) + p->delimiter.len);
            if (n_all && strcmp(all[n_all - 1].key, it.key) == 0 && !all[n_all - 1].id[0])
                continue;
        } else {
            strcpy(it.key, k);
            strcpy(it.id, model[i].id);
        }
        all[n_all++] = it;
    }
    *trunc = false;
    if (p->max_uploads == 0)
        return 0; /* nothing, and not truncated (index.h) */
    for (size_t i = 0; i < n_all; i++) {
        const struct item *it = &all[i];
        if (p->key_marker.len) {
            if (!it->id[0]) {
                /* A prefix: after the marker and not containing it. */
                if (slcmp(it->key, p->key_marker) <= 0 ||
                    starts_with(p->key_marker.ptr, p->key_marker.len, slice_from_cstr(it->key)))
                    continue;
            } else {
                int c = slcmp(it->key, p->key_marker);
                if (c < 0 || (c == 0 && (p->upload_id_marker.len == 0 ||
                                         slcmp(it->id, p->upload_id_marker) <= 0)))
                    continue;
            }
        }
        if (n == p->max_uploads) {
            *trunc = true;
            break;
        }
        out[n++] = *it;
    }
    return n;
}

/* Merges a result back into item order (uploads and prefixes interleave
 * by key; they never tie). */
static size_t
result_items(const struct index_upload_list_result *r, struct item *out)
{
    size_t iu = 0, ip = 0, n = 0;
    while (iu < r->n_uploads || ip < r->n_prefixes) {
        bool take_prefix =
            iu == r->n_uploads ||
            (ip < r->n_prefixes && slice_cmp(r->prefixes[ip], r->uploads[iu].key) < 0);
        struct item it = {{0}, {0}};
        if (take_prefix) {
            ASSERT(r->prefixes[ip].len < sizeof(it.key));
            memcpy(it.key, r->prefixes[ip].ptr, r->prefixes[ip].len);
            ip++;
        } else {
            ASSERT(r->uploads[iu].key.len < sizeof(it.key));
            memcpy(it.key, r->uploads[iu].key.ptr, r->uploads[iu].key.len);
            strcpy(it.id, r->uploads[iu].upload_id);
            ASSERT_UEQ(r->uploads[iu].bucket_id, bid);
            iu++;
        }
        out[n++] = it;
    }
    return n;
}

static void
check_items(const struct item *got, size_t n_got, const struct item *want, size_t n_want)
{
    if (n_got != n_want)
        TEST_FAIL("listing has %zu items, model %zu", n_got, n_want);
    for (size_t i = 0; i < n_got; i++)
        if (strcmp(got[i].key, want[i].key) != 0 || strcmp(got[i].id, want[i].id) != 0)
            TEST_FAIL("item %zu: \"%s\"/%s, model \"%s\"/%s", i, got[i].key, got[i].id, want[i].key,
                      want[i].id);
}

static void
test_upload_list(struct arena *a)
{
    static const char *const keys[] = {"a",     "a/b",   "a/b/c",  "a/c",   "a/c/", "ab",
                                       "b",     "b//x",  "b/x",    "b/y/z", "c",    "c-d-e",
                                       "c-d/f", "d\xff", "d\xff/", "e/e/e", "zz",   "a/bb"};
    unsigned seed = 7;
    n_model = 0;
    for (size_t i = 0; i < N_MODEL; i++) {
        seed = seed * 1103515245u + 12345u;
        struct mup *m = &model[n_model++];
        snprintf(m->key, sizeof(m->key), "%s", keys[(seed >> 8) % ARRAY_LEN(keys)]);
        /* Unique ids in random order (i in the low bits). */
        snprintf(m->id, sizeof(m->id), "%016x%08x%08x", (unsigned)(seed >> 3) % 3,
                 (unsigned)(seed >> 5), (unsigned)i);
        ASSERT_EQ(create(a, bid, slice_from_cstr(m->key), m->id), 0);
    }
    qsort(model, n_model, sizeof(model[0]), mup_cmp);

    static const char *const prefixes[] = {"", "a", "a/", "b/", "c-", "d", "q"};
    static const char *const delims[] = {"", "/", "//", "-d", "\xff", "c"};
    struct item want[N_MODEL], got[N_MODEL];
    long n_checks = 0;
    for (size_t ip = 0; ip < ARRAY_LEN(prefixes); ip++) {
        for (size_t id = 0; id < ARRAY_LEN(delims); id++) {
            struct index_upload_list_params p = {.bucket_id = bid,
                                                 .prefix = slice_from_cstr(prefixes[ip]),
                                                 .delimiter = slice_from_cstr(delims[id]),
                                                 .max_uploads = 1000};
            struct index_upload_list_result r;
            bool trunc;

            /* Every marker: each model key (with and without each id),
             * and a few between them. */
            for (size_t im = 0; im <= n_model + 3; im++) {
                for (int use_id = 0; use_id < 3; use_id++) {
                    for (uint32_t max = 0; max <= 7; max += (max < 3 ? 1 : 4)) {
                        const char *km = im == 0             ? ""
                                         : im <= n_model     ? model[im - 1].key
                                         : im == n_model + 1 ? "a/b/"
                                         : im == n_model + 2 ? "b/"
                                                             : "a0";
                        p.key_marker = slice_from_cstr(km);
                        p.upload_id_marker = SLICE_NULL;
                        if (use_id == 1 && im >= 1 && im <= n_model)
                            p.upload_id_marker = slice_from_cstr(model[im - 1].id);
                        if (use_id == 2)
                            p.upload_id_marker = SLICE_LIT("7");
                        p.max_uploads = max;
                        arena_clear(a);
                        ASSERT_EQ(index_upload_list(ix, &p, a, &r), 0);
                        size_t nw = model_list(&p, want, &trunc);
                        check_items(got, result_items(&r, got), want, nw);
                        ASSERT_EQ(r.is_truncated, trunc);
                        if (r.is_truncated) {
                            const struct item *last = &want[nw - 1];
                            ASSERT(slcmp(last->key, r.next_key_marker) == 0);
                            ASSERT(slcmp(last->id, r.next_upload_id_marker) == 0);
                        } else {
                            ASSERT_UEQ(r.next_key_marker.len, 0);
                            ASSERT_UEQ(r.next_upload_id_marker.len, 0);
                        }
                        n_checks++;
                    }
                }
            }

            /* Paging with the next markers yields the whole listing. */
            for (uint32_t max = 1; max <= 4; max++) {
                p.key_marker = SLICE_NULL;
                p.upload_id_marker = SLICE_NULL;
                p.max_uploads = 1000;
                arena_clear(a);
                ASSERT_EQ(index_upload_list(ix, &p, a, &r), 0);
                size_t n_all = result_items(&r, want);
                ASSERT(!r.is_truncated);
                size_t n_paged = 0;
                p.max_uploads = max;
                for (int page = 0;; page++) {
                    ASSERT(page <= N_MODEL);
                    ASSERT_EQ(index_upload_list(ix, &p, a, &r), 0);
                    size_t k = result_items(&r, got + n_paged);
                    ASSERT(k <= max);
                    n_paged += k;
                    if (!r.is_truncated)
                        break;
                    p.key_marker = r.next_key_marker;
                    p.upload_id_marker = r.next_upload_id_marker;
                }
                check_items(got, n_paged, want, n_all);
            }
        }
    }
    fprintf(stderr, "upload list: %ld model comparisons\n", n_checks);

    /* Other buckets and a prefix longer than any key list nothing. */
    struct index_upload_list_params q = {.bucket_id = bid + 77, .max_uploads = 10};
    struct index_upload_list_result r;
    ASSERT_EQ(index_upload_list(ix, &q, a, &r), 0);
    ASSERT_UEQ(r.n_uploads + r.n_prefixes, 0);
    ASSERT(!r.is_truncated);
    /* More than 1000 is clamped. */
    q = (struct index_upload_list_params){.bucket_id = bid, .max_uploads = 5000};
    ASSERT_EQ(index_upload_list(ix, &q, a, &r), 0);
    ASSERT_UEQ(r.n_uploads, n_model);
    ASSERT_STR_EQ(r.uploads[0].upload_id, model[0].id);
    ASSERT_UEQ(r.uploads[0].meta_len, 9);
    ASSERT_EQ(r.uploads[0].initiated_ns, 42);
}

static void
upload_list_cleanup(struct arena *a)
{
    for (size_t i = 0; i < n_model; i++)
        ASSERT_EQ(abort_upload(a, model[i].id, NULL), 0);
    n_model = 0;
}

/* ---- ListMultipartUploads in O(page) -------------------------------------- */

#define N_MANY 3000

struct many {
    struct slice key;
    const char *id;
};

static int
many_cmp(const void *pa, const void *pb)
{
    const struct many *a = pa, *b = pb;
    int c = slice_cmp(a->key, b->key);
    return c ? c : strcmp(a->id, b->id);
}

/* Pages through every upload of 'bucket_id' 'page' at a time (no
 * delimiter) and checks the order against 'want' and each page's cost. */
static void
walk_upload_pages(uint64_t bucket_id, const struct many *want, size_t n_want, uint32_t page,
                  struct arena *a)
{
    struct index_upload_list_params p = {.bucket_id = bucket_id, .max_uploads = page};
    struct index_upload_list_result r;
    char key_marker[INDEX_MAX_KEY], id_marker[INDEX_UPLOAD_ID_LEN];
    size_t at = 0;
    uint64_t worst = 0;
    do {
        arena_clear(a);
        uint64_t ops0 = index__reads();
        ASSERT_EQ(index_upload_list(ix, &p, a, &r), 0);
        uint64_t cost = index__reads() - ops0;
        worst = MAX(worst, cost);
        /* One or two tree steps and one record fetch per upload, plus the
         * seek to the markers. */
        ASSERT(cost <= 6 * (uint64_t)page + 30);
        ASSERT_UEQ(r.n_prefixes, 0);
        for (uint32_t i = 0; i < r.n_uploads; i++, at++) {
            ASSERT(at < n_want);
            ASSERT(slice_eq(r.uploads[i].key, want[at].key));
            ASSERT_STR_EQ(r.uploads[i].upload_id, want[at].id);
        }
        /* The markers outlive the arena, cleared for the next page. */
        if (r.is_truncated) {
            memcpy(key_marker, r.next_key_marker.ptr, r.next_key_marker.len);
            memcpy(id_marker, r.next_upload_id_marker.ptr, r.next_upload_id_marker.len);
        }
        p.key_marker = (struct slice){key_marker, r.next_key_marker.len};
        p.upload_id_marker = (struct slice){id_marker, r.next_upload_id_marker.len};
    } while (r.is_truncated);
    ASSERT_UEQ(at, n_want);
    fprintf(stderr, "%zu uploads in pages of %u: at most %" PRIu64 " reads a page\n", n_want, page,
            worst);
}

static void
test_upload_list_cost(struct arena *a)
{
    struct index_bucket b;
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("many"), "o", 1, &b), 0);
    /* Two uploads for most keys, a block under "dir/" that rolls up, keys
     * with NUL and control bytes (stored before keys were checked), and
     * long keys. */
    struct many *m = xcalloc(N_MANY + 8, sizeof(*m));
    size_t n = 0;
    arena_clear(a);
    for (size_t i = 0; i < N_MANY; i++) {
        size_t j = (i * 7919) % N_MANY;
        char *k;
        if (j % 6 == 0)
            k = arena_sprintf(a, "dir/%05zu", j);
        else
            k = arena_sprintf(a, "u/%05zu", j / 2);
        m[n++] = (struct many){slice_from_cstr(k), uid(a, 1000000 + j)};
    }
    static const struct slice odd[] = {{"n", 1},       {"n\0", 2},   {"n\0a", 3},
                                       {"n\0\xff", 3}, {"n\x01", 2}, {"n\xff", 2}};
    for (size_t i = 0; i < ARRAY_LEN(odd); i++)
        m[n++] = (struct many){odd[i], uid(a, 5000000 + i)};
    char *lk = arena_alloc(a, INDEX_MAX_KEY);
    memset(lk, 'L', INDEX_MAX_KEY);
    m[n++] = (struct many){{lk, INDEX_MAX_KEY}, uid(a, 6000000)};
    m[n++] = (struct many){{lk, 700}, uid(a, 6000001)};
    for (size_t i = 0; i < n; i++)
        ASSERT_EQ(create(a, b.id, m[i].key, m[i].id), 0);
    /* 'm' borrows the arena: copy it before pages clear it. */
    for (size_t i = 0; i < n; i++) {
        char *k = xmalloc(m[i].key.len + 1);
        memcpy(k, m[i].key.ptr, m[i].key.len);
        m[i].key.ptr = k;
        m[i].id = strdup(m[i].id);
    }
    qsort(m, n, sizeof(*m), many_cmp);

    walk_upload_pages(b.id, m, n, 10, a);
    walk_upload_pages(b.id, m, n, 1000, a);

    /* A delimiter: "dir/" is one common prefix, skipped with one seek, and
     * a marker inside it resumes after it. */
    struct index_upload_list_params p = {
        .bucket_id = b.id, .delimiter = SLICE_LIT("/"), .max_uploads = 3};
    struct index_upload_list_result r;
    arena_clear(a);
    uint64_t ops0 = index__reads();
    ASSERT_EQ(index_upload_list(ix, &p, a, &r), 0);
    ASSERT(index__reads() - ops0 <= 6 * 3 + 30);
    ASSERT_UEQ(r.n_prefixes, 1);
    ASSERT(slice_eq(r.prefixes[0], SLICE_LIT("dir/")));
    ASSERT_UEQ(r.n_uploads, 2);
    ASSERT_UEQ(r.uploads[0].key.len, 700); /* "L..." sorts before "dir/" */
    ASSERT_UEQ(r.uploads[1].key.len, INDEX_MAX_KEY);
    p.key_marker = SLICE_LIT("dir/00012");
    ASSERT_EQ(index_upload_list(ix, &p, a, &r), 0);
    ASSERT_UEQ(r.n_prefixes, 0);
    ASSERT(slice_eq(r.uploads[0].key, SLICE_LIT("n")));

    /* A marker in the middle of the bucket: O(page) too. */
    p = (struct index_upload_list_params){.bucket_id = b.id,
                                          .key_marker = m[n / 2].key,
                                          .upload_id_marker = slice_from_cstr(m[n / 2].id),
                                          .max_uploads = 10};
    ops0 = index__reads();
    ASSERT_EQ(index_upload_list(ix, &p, a, &r), 0);
    ASSERT(index__reads() - ops0 <= 6 * 10 + 30);
    ASSERT_UEQ(r.n_uploads, 10);
    ASSERT(slice_eq(r.uploads[0].key, m[n / 2 + 1].key));
    ASSERT_STR_EQ(r.uploads[0].upload_id, m[n / 2 + 1].id);

    /* Rebuilt from "uploads" when the key tree is missing. */
    MDB_txn *txn;
    ASSERT_EQ(mdb_txn_begin(ix->env, NULL, 0, &txn), 0);
    ASSERT_EQ(mdb_drop(txn, ix->dbi_tree, 1), 0);
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    index_close(ix);
    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    walk_upload_pages(b.id, m, n, 100, a);

    /* Aborting them all empties the bucket's set; the bucket can go. */
    for (size_t i = 0; i < n; i++)
        ASSERT_EQ(abort_upload(a, m[i].id, NULL), 0);
    ASSERT_EQ(mdb_txn_begin(ix->env, NULL, MDB_RDONLY, &txn), 0);
    struct index__tree_iter t;
    struct slice s;
    ASSERT_EQ(index__tree_iter_begin(&t, ix, txn, INDEX_TREE_ROOT_UPLOADS(b.id)), 0);
    ASSERT_EQ(index__tree_iter_seek(&t, SLICE_NULL), 0);
    ASSERT_EQ(index__tree_iter_next(&t, &s), 0);
    index__tree_iter_end(&t);
    mdb_txn_abort(txn);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("many"), b.id), 0);
    for (size_t i = 0; i < n; i++) {
        free((char *)m[i].key.ptr);
        free((char *)m[i].id);
    }
    free(m);
}

/* ---- persistence, record parsing ---------------------------------------- */

static void
test_reopen(struct arena *a)
{
    const char *id = uid(a, 500);
    ASSERT_EQ(create(a, bid, SLICE_LIT("durable"), id), 0);
    ASSERT_EQ(part_put(a, id, 3, 3, 3000, 33).result, 0);
    ASSERT_EQ(part_put(a, id, 9, 9, 9000, 99).result, 0);

    index_close(ix);
    ASSERT_EQ(index_open(&ix, dir, 64 << 20, false), 0);

    struct index_upload u;
    struct index_part *parts;
    uint32_t n;
    bool trunc;
    ASSERT_EQ(index_upload_get(ix, id, a, &u), 0);
    ASSERT(slice_eq(u.key, SLICE_LIT("durable")));
    ASSERT_EQ(index_part_list(ix, id, 0, 100, a, &parts, &n, &trunc), 0);
    ASSERT_UEQ(n, 2);
    ASSERT_UEQ(parts[0].number, 3);
    ASSERT_UEQ(parts[1].number, 9);
    ASSERT_UEQ(parts[1].extents[0].offset, 9000);
    struct index_upload_list_params p = {.bucket_id = bid, .max_uploads = 10};
    struct index_upload_list_result r;
    ASSERT_EQ(index_upload_list(ix, &p, a, &r), 0);
    ASSERT_UEQ(r.n_uploads, 1);
    struct scan_totals t = scan();
    ASSERT_UEQ(t.n, 2);
    ASSERT_UEQ(t.bytes, 132);
    struct index_op op;
    ASSERT_EQ(abort_upload(a, id, &op), 0);
    ASSERT_UEQ(op.n_freed, 2);

    /* Back to no-sync for the rest (speed). */
    index_close(ix);
    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_EQ(index_upload_get(ix, id, a, &u), -ENOENT);
}

static void
test_upload_parse(void)
{
    struct index__upload_rec rec;
    uint8_t buf[64] = {INDEX_UPLOAD_VERSION, 0, 3, 0};
    index__put_le64(buf + 4, 5);
    index__put_le64(buf + 12, 6);
    index__put_le32(buf + 20, 2);
    memcpy(buf + INDEX_UPLOAD_HEAD_LEN, "keyMM", 5);
    size_t len = INDEX_UPLOAD_HEAD_LEN + 5;
    ASSERT_EQ(index__upload_parse(buf, len, &rec), 0);
    ASSERT(slice_eq(rec.key, SLICE_LIT("key")));
    ASSERT_UEQ(rec.meta_len, 2);
    ASSERT_UEQ(rec.bucket_id, 5);
    fprintf(stderr, "(the corruption reports below are expected)\n");
    for (size_t cut = 0; cut < len; cut++)
        ASSERT_EQ(index__upload_parse(buf, cut, &rec), -EIO);
    ASSERT_EQ(index__upload_parse(buf, len + 1, &rec), -EIO);
    buf[20] = 0xFF; /* meta_len past the end */
    ASSERT_EQ(index__upload_parse(buf, len, &rec), -EIO);
    buf[20] = 2;
    buf[2] = 0; /* empty key */
    ASSERT_EQ(index__upload_parse(buf, len, &rec), -EIO);
    buf[2] = 3;
    buf[0] = 2;
    ASSERT_EQ(index__upload_parse(buf, len, &rec), -EIO);
}

/* A part record whose number disagrees with its key is corruption: reads
 * and the abort that would drop it fail with -EIO, nothing crashes. */
static void
test_part_corrupt(struct arena *a)
{
    const char *id = uid(a, 600);
    uint8_t raw[INDEX_UPLOAD_RAW_LEN], pkey[INDEX_PART_KEY_LEN];
    struct index_part *parts;
    uint32_t n;
    bool trunc;
    MDB_txn *txn;

    ASSERT_EQ(create(a, bid, SLICE_LIT("corrupt"), id), 0);
    ASSERT_EQ(part_put(a, id, 1, 1, 10, 10).result, 0);
    ASSERT_EQ(hex_decode(id, INDEX_UPLOAD_ID_LEN, raw), 0);
    memcpy(pkey, raw, sizeof(raw));
    index__put_be32(pkey + INDEX_UPLOAD_RAW_LEN, 1);
    MDB_val k = {sizeof(pkey), pkey}, v;

    /* Rewrite part 1's record to claim number 2. */
    ASSERT_EQ(mdb_txn_begin(ix->env, NULL, 0, &txn), 0);
    ASSERT_EQ(mdb_get(txn, ix->dbi_parts, &k, &v), 0);
    uint8_t *copy = arena_memdup(a, v.mv_data, v.mv_size);
    index__put_le32(copy + 36, 2); /* parts_count */
    MDB_val nv = {v.mv_size, copy};
    ASSERT_EQ(mdb_put(txn, ix->dbi_parts, &k, &nv, 0), 0);
    ASSERT_EQ(mdb_txn_commit(txn), 0);

    fprintf(stderr, "(the corruption reports below are expected)\n");
    ASSERT_EQ(index_part_list(ix, id, 0, 10, a, &parts, &n, &trunc), -EIO);
    struct index_op op = {.kind = INDEX_OP_UPLOAD_ABORT, .upload_id = id, .arena = a};
    ASSERT_EQ(index_commit(ix, &op, 1), -EIO);
    ASSERT_EQ(op.result, -EIO);
    ASSERT_UEQ(op.n_freed, 0);

    /* Repair by hand, then the upload aborts normally. */
    ASSERT_EQ(mdb_txn_begin(ix->env, NULL, 0, &txn), 0);
    ASSERT_EQ(mdb_del(txn, ix->dbi_parts, &k, NULL), 0);
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    ASSERT_EQ(abort_upload(a, id, &op), 0);
    ASSERT_UEQ(op.n_freed, 0);
}

/* ---- index_object_scan -------------------------------------------------- */

#define N_SCAN 300

struct scan_ctx {
    uint64_t bids[2];
    struct slice keys[N_SCAN];
    int seen[2][N_SCAN];
    long calls;
    long stop_after;
    bool delete_visited;
    struct arena *a;
};

static int
object_cb(void *ctx, uint64_t bucket_id, struct slice key, const struct index_object *obj)
{
    struct scan_ctx *c = ctx;
    int b = bucket_id == c->bids[0] ? 0 : bucket_id == c->bids[1] ? 1 : -1;
    ASSERT(b >= 0);
    uint64_t i = obj->size;
    ASSERT(i < N_SCAN);
    ASSERT(slice_eq(key, c->keys[i]));
    ASSERT_UEQ(obj->n_extents, 1);
    ASSERT_UEQ(obj->extents[0].offset, i * 10 + (uint64_t)b);
    ASSERT_UEQ(obj->meta_len, key.len);
    ASSERT_MEM_EQ(obj->meta, key.ptr, key.len);
    c->seen[b][i]++;
    c->calls++;
    if (c->delete_visited) {
        /* Writes from the callback: allowed, no transaction is held. */
        struct index_op d = {
            .kind = INDEX_OP_DELETE, .bucket_id = bucket_id, .key = key, .arena = c->a};
        ASSERT_EQ(commit1(&d), 0);
        ASSERT_UEQ(d.n_freed, 1);
    }
    return c->stop_after && c->calls == c->stop_after;
}

static void
test_object_scan(struct arena *a)
{
    static struct scan_ctx c;
    struct index_bucket b2;
    memset(&c, 0, sizeof(c));
    c.a = a;
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("scan2"), "", 3, &b2), 0);
    c.bids[0] = bid;
    c.bids[1] = b2.id;

    /* Empty index: no calls. */
    ASSERT_EQ(index_object_scan(ix, object_cb, &c), 0);
    ASSERT_EQ(c.calls, 0);

    /* Short keys, and long keys sharing a 480-byte prefix (one run). */
    for (int i = 0; i < N_SCAN; i++) {
        if (i % 3 == 0) {
            char *k = arena_alloc(a, 606);
            memset(k, 'p', 600);
            memcpy(k + 600, arena_sprintf(a, "%06d", i), 6);
            c.keys[i] = (struct slice){k, 606};
        } else {
            c.keys[i] = slice_from_cstr(arena_sprintf(a, "k%d", i));
        }
    }
    for (int b = 0; b < 2; b++) {
        for (int i = 0; i < N_SCAN; i++) {
            struct index_extent *e = arena_calloc(a, 1, sizeof(*e));
            e->offset = (uint64_t)i * 10 + (uint64_t)b;
            e->len = 1;
            struct index_object *o = arena_calloc(a, 1, sizeof(*o));
            o->size = (uint64_t)i;
            o->n_extents = 1;
            o->extents = e;
            o->meta = (const uint8_t *)c.keys[i].ptr;
            o->meta_len = c.keys[i].len;
            struct index_op op = {.kind = INDEX_OP_PUT,
                                  .bucket_id = c.bids[b],
                                  .key = c.keys[i],
                                  .object = o,
                                  .arena = a};
            ASSERT_EQ(commit1(&op), 0);
        }
    }

    ASSERT_EQ(index_object_scan(ix, object_cb, &c), 0);
    ASSERT_EQ(c.calls, 2 * N_SCAN);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < N_SCAN; i++)
            ASSERT_EQ(c.seen[b][i], 1);

    /* Early stop. */
    memset(c.seen, 0, sizeof(c.seen));
    c.calls = 0;
    c.stop_after = 17;
    ASSERT_EQ(index_object_scan(ix, object_cb, &c), 0);
    ASSERT_EQ(c.calls, 17);

    /* Deleting each object as it is visited still visits each once. */
    memset(c.seen, 0, sizeof(c.seen));
    c.calls = 0;
    c.stop_after = 0;
    c.delete_visited = true;
    ASSERT_EQ(index_object_scan(ix, object_cb, &c), 0);
    ASSERT_EQ(c.calls, 2 * N_SCAN);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < N_SCAN; i++)
            ASSERT_EQ(c.seen[b][i], 1);
    ASSERT_UEQ(scan().n, 0);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("scan2"), b2.id), 0);
}

int
main(void)
{
    dir = test_tmpdir_create("index-upload");
    struct arena *a = arena_create(1 << 16);
    struct index_bucket b;

    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("mp"), "o", 1, &b), 0);
    bid = b.id;

    test_create_get(a);
    test_parts(a);
    test_complete_key(a, SLICE_LIT("dir/final.bin"), 1);
    {
        size_t len = 900;
        char *k = arena_alloc(a, len);
        memset(k, 'L', len);
        test_complete_key(a, (struct slice){k, len}, 2);
    }
    test_complete_batch(a);
    test_bucket_delete(a);
    test_upload_list(a);
    upload_list_cleanup(a);
    test_upload_list_cost(a);
    arena_clear(a);
    test_reopen(a);
    test_upload_parse();
    test_part_corrupt(a);
    test_object_scan(a);

    /* Everything was cleaned up: the bucket can go. */
    ASSERT_UEQ(scan().n, 0);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("mp"), bid), 0);
    index_close(ix);
    arena_destroy(a);
    test_tmpdir_remove(dir);
    return 0;
}
