/*
 * test_object.c: object records through index_commit and index_object_get:
 * put/get/replace (freed extents), delete, conditions, bucket gone,
 * inline data and opaque blobs, keys of 1, 480, 481 and 1024 bytes that
 * share prefixes, persistence across reopen, index_extents_scan, a full
 * map (-ENOSPC), the record parser's bounds checks, and readers running
 * on several threads while batches commit.
 */
#include "index/index.h"
#include "index/index_int.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

static struct index *ix;
static uint64_t bid;

/* Builds a key of 'len' bytes: 'fill' repeated, last byte 'last'. */
static struct slice
make_key(struct arena *a, size_t len, char fill, char last)
{
    char *k = arena_alloc(a, len);
    memset(k, fill, len);
    k[len - 1] = last;
    return (struct slice){k, len};
}

static int
put(struct slice key, const struct index_object *o, struct arena *a, struct index_op *op_out)
{
    struct index_op op = {
        .kind = INDEX_OP_PUT, .bucket_id = bid, .key = key, .object = o, .arena = a};
    ASSERT_EQ(index_commit(ix, &op, 1), 0);
    if (op_out)
        *op_out = op;
    return op.result;
}

static void
check_same(const struct index_object *got, const struct index_object *want)
{
    ASSERT_UEQ(got->size, want->size);
    ASSERT_EQ(got->mtime_ns, want->mtime_ns);
    ASSERT_MEM_EQ(got->etag, want->etag, 16);
    ASSERT_UEQ(got->parts_count, want->parts_count);
    ASSERT_UEQ(got->n_extents, want->n_extents);
    for (uint32_t i = 0; i < want->n_extents; i++) {
        ASSERT_UEQ(got->extents[i].volume, want->extents[i].volume);
        ASSERT_UEQ(got->extents[i].flags, want->extents[i].flags);
        ASSERT_UEQ(got->extents[i].offset, want->extents[i].offset);
        ASSERT_UEQ(got->extents[i].len, want->extents[i].len);
    }
    ASSERT_UEQ(got->sums_len, want->sums_len);
    ASSERT_UEQ(got->meta_len, want->meta_len);
    ASSERT_UEQ(got->inline_len, want->inline_len);
    if (want->sums_len)
        ASSERT_MEM_EQ(got->sums, want->sums, want->sums_len);
    if (want->meta_len)
        ASSERT_MEM_EQ(got->meta, want->meta, want->meta_len);
    if (want->inline_len)
        ASSERT_MEM_EQ(got->inline_data, want->inline_data, want->inline_len);
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

/* The conditions of conditional PUT and DeleteObjects entries: existence,
 * an etag that must not be current, the size and the mtime in seconds. */
static void
test_conditions(struct arena *a)
{
    struct index_object o = {.size = 3,
                             .mtime_ns = 5000000000ll + 7,
                             .inline_data = (const uint8_t *)"abc",
                             .inline_len = 3};
    memset(o.etag, 0x22, 16);
    struct index_op c = {.kind = INDEX_OP_PUT,
                         .bucket_id = bid,
                         .key = SLICE_LIT("cond"),
                         .object = &o,
                         .if_exists = true,
                         .arena = a};
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, -ENODATA); /* absent: If-Match: * fails as NoSuchKey */
    c.if_exists = false;
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, 0);
    c.if_exists = true;
    c.has_if_none_match_etag = true;
    memset(c.if_none_match_etag, 0x22, 16);
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, -EEXIST); /* the current etag */
    memset(c.if_none_match_etag, 0x33, 16);
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, 0);

    struct index_op d = {.kind = INDEX_OP_DELETE,
                         .bucket_id = bid,
                         .key = SLICE_LIT("cond"),
                         .if_exists = true,
                         .has_if_size = true,
                         .if_size = 4,
                         .arena = a};
    ASSERT_EQ(index_commit(ix, &d, 1), 0);
    ASSERT_EQ(d.result, -ESTALE);
    d.if_size = 3;
    d.has_if_mtime_s = true;
    d.if_mtime_s = 4;
    ASSERT_EQ(index_commit(ix, &d, 1), 0);
    ASSERT_EQ(d.result, -ESTALE);
    d.if_mtime_s = 5;
    ASSERT_EQ(index_commit(ix, &d, 1), 0);
    ASSERT_EQ(d.result, 0);
    ASSERT_EQ(index_commit(ix, &d, 1), 0);
    ASSERT_EQ(d.result, -ENODATA); /* gone now */
}

static void
test_basic(struct arena *a)
{
    struct index_extent ext1[2] = {{1, 0, 4096, 1000}, {2, 0, 8192, 24}};
    uint8_t sums[40];
    for (size_t i = 0; i < sizeof(sums); i++)
        sums[i] = (uint8_t)(i * 7);
    static const char meta[] = "content-type\0text/plain\0x-amz-meta-a\0b";
    struct index_object o1 = {.size = 1024,
                              .mtime_ns = -5,
                              .parts_count = 0,
                              .n_extents = 2,
                              .extents = ext1,
                              .sums = sums,
                              .sums_len = sizeof(sums),
                              .meta = (const uint8_t *)meta,
                              .meta_len = sizeof(meta)};
    memset(o1.etag, 0xAB, 16);
    struct index_object got;
    struct index_op op;

    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("obj"), a, &got), -ENOENT);
    ASSERT_EQ(put(SLICE_LIT("obj"), &o1, a, &op), 0);
    ASSERT_UEQ(op.n_freed, 0);
    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("obj"), a, &got), 0);
    check_same(&got, &o1);
    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("ob"), a, &got), -ENOENT);
    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("obj2"), a, &got), -ENOENT);
    ASSERT_EQ(index_object_get(ix, bid + 1, SLICE_LIT("obj"), a, &got), -ENOENT);

    /* Replace with an inline object: the old extents come back. */
    struct index_object o2 = {.size = 5,
                              .mtime_ns = 77,
                              .parts_count = 3,
                              .inline_data = (const uint8_t *)"hello",
                              .inline_len = 5};
    memset(o2.etag, 0x11, 16);
    ASSERT_EQ(put(SLICE_LIT("obj"), &o2, a, &op), 0);
    ASSERT_UEQ(op.n_freed, 2);
    ASSERT_UEQ(op.freed[0].volume, 1);
    ASSERT_UEQ(op.freed[0].offset, 4096);
    ASSERT_UEQ(op.freed[1].len, 24);
    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("obj"), a, &got), 0);
    check_same(&got, &o2);

    /* Conditions. */
    struct index_op c = {.kind = INDEX_OP_PUT,
                         .bucket_id = bid,
                         .key = SLICE_LIT("obj"),
                         .object = &o1,
                         .if_none_match = true,
                         .arena = a};
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, -EEXIST);
    c.key = SLICE_LIT("fresh");
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, 0);
    c = (struct index_op){.kind = INDEX_OP_PUT,
                          .bucket_id = bid,
                          .key = SLICE_LIT("obj"),
                          .object = &o1,
                          .has_if_match = true,
                          .arena = a};
    memset(c.if_match_etag, 0xAB, 16); /* o1's etag, but o2 is current */
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, -ESTALE);
    memset(c.if_match_etag, 0x11, 16);
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, 0);
    ASSERT_UEQ(c.n_freed, 0); /* o2 was inline */
    c.key = SLICE_LIT("absent");
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, -ESTALE);
    c = (struct index_op){.kind = INDEX_OP_DELETE,
                          .bucket_id = bid,
                          .key = SLICE_LIT("obj"),
                          .has_if_match = true,
                          .arena = a};
    memset(c.if_match_etag, 0x11, 16);
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, -ESTALE);

    /* A batch: ops see the effects of earlier ops in the same batch, and
     * one failing condition does not stop the others. */
    struct index_op batch[4] = {
        {.kind = INDEX_OP_DELETE, .bucket_id = bid, .key = SLICE_LIT("obj"), .arena = a},
        {.kind = INDEX_OP_DELETE, .bucket_id = bid, .key = SLICE_LIT("obj"), .arena = a},
        {.kind = INDEX_OP_PUT,
         .bucket_id = bid,
         .key = SLICE_LIT("fresh"),
         .object = &o2,
         .if_none_match = true,
         .arena = a},
        {.kind = INDEX_OP_PUT,
         .bucket_id = 999999,
         .key = SLICE_LIT("x"),
         .object = &o2,
         .arena = a},
    };
    ASSERT_EQ(index_commit(ix, batch, 4), 0);
    ASSERT_EQ(batch[0].result, 0);
    ASSERT_UEQ(batch[0].n_freed, 2);
    ASSERT_UEQ(batch[0].freed[1].offset, 8192);
    ASSERT_EQ(batch[1].result, 0);
    ASSERT_UEQ(batch[1].n_freed, 0);
    ASSERT_EQ(batch[2].result, -EEXIST);
    ASSERT_EQ(batch[3].result, -ENOENT);
    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("obj"), a, &got), -ENOENT);

    /* Invalid keys. */
    struct index_op bad = {
        .kind = INDEX_OP_PUT, .bucket_id = bid, .key = SLICE_NULL, .object = &o2, .arena = a};
    ASSERT_EQ(index_commit(ix, &bad, 1), 0);
    ASSERT_EQ(bad.result, -EINVAL);
    ASSERT_EQ(index_object_get(ix, bid, SLICE_NULL, a, &got), -ENOENT);

    /* Delete "fresh" again to leave the bucket clean. */
    c = (struct index_op){
        .kind = INDEX_OP_DELETE, .bucket_id = bid, .key = SLICE_LIT("fresh"), .arena = a};
    ASSERT_EQ(index_commit(ix, &c, 1), 0);
    ASSERT_EQ(c.result, 0);
    ASSERT_UEQ(c.n_freed, 2);
}

/* Keys of length 1, 480, 481 and 1024 with shared prefixes, each with its
 * own record: all distinct, all exact. */
#define N_LONG 10
static struct slice long_keys[N_LONG];
static struct index_extent long_ext[N_LONG];

static void
test_long_keys_put(struct arena *a)
{
    long_keys[0] = make_key(a, 1, 'k', 'k');
    long_keys[1] = make_key(a, 480, 'k', 'k');
    long_keys[2] = make_key(a, 481, 'k', 'k');
    long_keys[3] = make_key(a, 481, 'k', 'a');
    long_keys[4] = make_key(a, 1024, 'k', 'k');
    long_keys[5] = make_key(a, 1024, 'k', 'z');
    long_keys[6] = make_key(a, 600, 'k', '/');
    long_keys[7] = make_key(a, 479, 'k', 'k');
    long_keys[8] = make_key(a, 1024, 'l', 'k');
    long_keys[9] = make_key(a, 480, 'k', 'z');
    for (int i = 0; i < N_LONG; i++) {
        long_ext[i] = (struct index_extent){
            .volume = 7, .offset = (uint64_t)i * 4096, .len = 100 + (uint64_t)i};
        struct index_object o = {
            .size = 100 + (uint64_t)i, .mtime_ns = i, .n_extents = 1, .extents = &long_ext[i]};
        o.etag[0] = (uint8_t)i;
        ASSERT_EQ(put(long_keys[i], &o, a, NULL), 0);
    }
}

static void
test_long_keys_get(struct arena *a)
{
    struct index_object got;
    for (int i = 0; i < N_LONG; i++) {
        ASSERT_EQ(index_object_get(ix, bid, long_keys[i], a, &got), 0);
        ASSERT_UEQ(got.size, 100 + (uint64_t)i);
        ASSERT_EQ(got.etag[0], i);
        ASSERT_UEQ(got.n_extents, 1);
        ASSERT_UEQ(got.extents[0].offset, (uint64_t)i * 4096);
    }
    /* Same 480-byte prefix, different tail: absent. */
    ASSERT_EQ(index_object_get(ix, bid, make_key(a, 1024, 'k', 'q'), a, &got), -ENOENT);
    ASSERT_EQ(index_object_get(ix, bid, make_key(a, 482, 'k', 'k'), a, &got), -ENOENT);

    /* The listing sees them in byte order of the full keys. */
    struct index_list_params p = {.bucket_id = bid, .max_keys = 1000};
    struct index_list_result r;
    ASSERT_EQ(index_object_list(ix, &p, a, &r), 0);
    ASSERT_UEQ(r.n_entries, N_LONG);
    ASSERT(!r.is_truncated);
    for (uint32_t i = 1; i < r.n_entries; i++)
        ASSERT(slice_cmp(r.entries[i - 1].key, r.entries[i].key) < 0);
}

/* Fills a tiny map until commit reports -ENOSPC; the index stays usable. */
static void
test_full(struct arena *a)
{
    char *dir = test_tmpdir_create("index-full");
    struct index *small;
    struct index_bucket b;
    static uint8_t blob[3000];
    struct index_object o = {.size = sizeof(blob), .inline_data = blob, .inline_len = sizeof(blob)};
    int rc = 0, i;

    ASSERT_EQ(index_open(&small, dir, 256 << 10, true), 0);
    ASSERT_EQ(index_bucket_create(small, SLICE_LIT("b"), "", 1, &b), 0);
    for (i = 0; i < 10000 && rc == 0; i++) {
        struct index_op ops[4];
        for (int j = 0; j < 4; j++)
            ops[j] = (struct index_op){.kind = INDEX_OP_PUT,
                                       .bucket_id = b.id,
                                       .key = {arena_sprintf(a, "k%06d", i * 4 + j), 7},
                                       .object = &o,
                                       .arena = a};
        rc = index_commit(small, ops, 4);
        if (rc)
            ASSERT_EQ(ops[0].result, -ENOSPC);
    }
    ASSERT_EQ(rc, -ENOSPC);
    ASSERT(i > 1);
    struct index_object got;
    ASSERT_EQ(index_object_get(small, b.id, SLICE_LIT("k000000"), a, &got), 0);
    ASSERT_UEQ(got.inline_len, sizeof(blob));
    struct index_op del = {
        .kind = INDEX_OP_DELETE, .bucket_id = b.id, .key = SLICE_LIT("k000000"), .arena = a};
    ASSERT_EQ(index_commit(small, &del, 1), 0);
    ASSERT_EQ(del.result, 0);
    index_close(small);
    test_tmpdir_remove(dir);
}

/* Truncated, padded or inconsistent records are corruption, never a crash. */
static void
test_record_parse(void)
{
    struct index_extent e = {1, 0, 2, 3};
    struct index_object o = {
        .size = 1, .n_extents = 1, .extents = &e, .meta = (const uint8_t *)"mm", .meta_len = 2};
    uint8_t buf[256];
    struct index__record r;
    size_t len = index__record_len(&o, 3);
    ASSERT(len < sizeof(buf));
    index__record_format(buf, &o, "key", 3);
    ASSERT_EQ(index__record_parse(buf, len, &r), 0);
    ASSERT_UEQ(r.full_key.len, 3);
    ASSERT_UEQ(r.obj.meta_len, 2);
    fprintf(stderr, "(the corruption reports below are expected)\n");
    for (size_t cut = 0; cut < len; cut++)
        ASSERT_EQ(index__record_parse(buf, cut, &r), -EIO);
    ASSERT_EQ(index__record_parse(buf, len + 1, &r), -EIO);
    buf[0] = 9;
    ASSERT_EQ(index__record_parse(buf, len, &r), -EIO);
    buf[0] = INDEX_RECORD_VERSION;
    buf[40] = 0xFF; /* n_extents huge */
    buf[43] = 0xFF;
    ASSERT_EQ(index__record_parse(buf, len, &r), -EIO);
}

/* ---- readers on several threads while a writer commits ----------------- */

static atomic_bool writer_done;

static void *
reader_main(void *arg)
{
    struct arena *a = arena_create(1 << 16);
    unsigned seed = (unsigned)(uintptr_t)arg;
    long n = 0;
    while (!atomic_load(&writer_done) || n < 200) {
        arena_clear(a);
        seed = seed * 1103515245u + 12345u;
        char key[16];
        snprintf(key, sizeof(key), "c%04u", (seed >> 8) % 2000);
        struct index_object got;
        int rc = index_object_get(ix, bid, slice_from_cstr(key), a, &got);
        if (rc != 0 && rc != -ENOENT)
            TEST_FAIL("get: %d", rc);
        if (rc == 0 && (got.inline_len != 5 || memcmp(got.inline_data, key + 1, 4) != 0))
            TEST_FAIL("torn record for %s", key);
        struct index_list_params p = {.bucket_id = bid,
                                      .prefix = SLICE_LIT("c"),
                                      .start_after = slice_from_cstr(key),
                                      .max_keys = 50};
        struct index_list_result r;
        if ((rc = index_object_list(ix, &p, a, &r)) != 0)
            TEST_FAIL("list: %d", rc);
        for (uint32_t i = 1; i < r.n_entries; i++)
            if (slice_cmp(r.entries[i - 1].key, r.entries[i].key) >= 0)
                TEST_FAIL("list out of order");
        n++;
    }
    arena_destroy(a);
    return NULL;
}

static void
test_concurrent(struct arena *a)
{
    pthread_t th[4];
    atomic_store(&writer_done, false);
    for (uintptr_t i = 0; i < 4; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, reader_main, (void *)(i + 1)), 0);
    for (int round = 0; round < 200; round++) {
        struct index_op ops[16];
        struct index_object objs[16];
        arena_clear(a);
        for (int j = 0; j < 16; j++) {
            char *key = arena_sprintf(a, "c%04d", (round * 16 + j) * 7 % 2000);
            objs[j] = (struct index_object){
                .size = 5, .inline_data = (const uint8_t *)key + 1, .inline_len = 5};
            objs[j].inline_len = 5; /* 4 digits and the NUL */
            ops[j] = (struct index_op){.kind = (round % 3 == 2) ? INDEX_OP_DELETE : INDEX_OP_PUT,
                                       .bucket_id = bid,
                                       .key = slice_from_cstr(key),
                                       .object = &objs[j],
                                       .arena = a};
        }
        ASSERT_EQ(index_commit(ix, ops, 16), 0);
    }
    atomic_store(&writer_done, true);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(pthread_join(th[i], NULL), 0);
}

int
main(void)
{
    char *dir = test_tmpdir_create("index-object");
    struct arena *a = arena_create(1 << 16);
    struct index_bucket b;

    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("b"), "o", 1, &b), 0);
    bid = b.id;
    test_basic(a);
    test_conditions(a);
    test_concurrent(a);
    {
        /* Leave the bucket as test_basic found it: empty. */
        struct index_list_params p = {.bucket_id = bid, .max_keys = 1000};
        struct index_list_result r;
        do {
            ASSERT_EQ(index_object_list(ix, &p, a, &r), 0);
            for (uint32_t i = 0; i < r.n_entries; i++) {
                struct index_op d = {
                    .kind = INDEX_OP_DELETE, .bucket_id = bid, .key = r.entries[i].key, .arena = a};
                ASSERT_EQ(index_commit(ix, &d, 1), 0);
            }
        } while (r.n_entries);
    }
    test_long_keys_put(a);
    test_long_keys_get(a);

    /* Persistence across close and reopen (durable mode this time). */
    index_close(ix);
    ASSERT_EQ(index_open(&ix, dir, 64 << 20, false), 0);
    test_long_keys_get(a);

    /* The extents scan sees every extent of every record exactly once. */
    struct scan_totals t = {0, 0};
    ASSERT_EQ(index_extents_scan(ix, scan_cb, &t), 0);
    ASSERT_UEQ(t.n, N_LONG);
    uint64_t want = 0;
    for (int i = 0; i < N_LONG; i++)
        want += 100 + (uint64_t)i;
    ASSERT_UEQ(t.bytes, want);
    uint64_t n_obj, n_bytes;
    ASSERT_EQ(index_bucket_count(ix, bid, &n_obj, &n_bytes), 0);
    ASSERT_UEQ(n_obj, N_LONG);
    ASSERT_UEQ(n_bytes, want);

    /* Delete the long keys: each returns its extent. */
    for (int i = 0; i < N_LONG; i++) {
        struct index_op op = {
            .kind = INDEX_OP_DELETE, .bucket_id = bid, .key = long_keys[i], .arena = a};
        ASSERT_EQ(index_commit(ix, &op, 1), 0);
        ASSERT_EQ(op.result, 0);
        ASSERT_UEQ(op.n_freed, 1);
        ASSERT_UEQ(op.freed[0].offset, (uint64_t)i * 4096);
    }
    t = (struct scan_totals){0, 0};
    ASSERT_EQ(index_extents_scan(ix, scan_cb, &t), 0);
    ASSERT_UEQ(t.n, 0);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("b"), bid), 0);

    index_close(ix);
    test_full(a);
    test_record_parse();
    arena_destroy(a);
    test_tmpdir_remove(dir);
    return 0;
}
