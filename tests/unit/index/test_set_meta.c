/*
 * test_set_meta.c: INDEX_OP_SET_META. The metadata blob is replaced while
 * size, ETag, mtime, extents, block sums and inline data stay; nothing is
 * freed; a stale identity (another ETag or mtime: the object was
 * overwritten meanwhile) and an absent key or bucket change nothing; long
 * keys (hashed LMDB keys) work; the op mixes with others in one batch.
 */
#include "index/index.h"
#include "index/index_int.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>

static struct index *ix;
static uint64_t bid;

/* Commits one op and returns its result. */
static int
commit1(struct index_op *op)
{
    ASSERT_EQ(index_commit(ix, op, 1), 0);
    return op->result;
}

/* Puts a one-extent object with metadata 'meta' at 'key' with ETag byte
 * 'tag' and mtime 'mtime_ns'. */
static void
put(struct arena *a, struct slice key, uint8_t tag, int64_t mtime_ns, const char *meta)
{
    static const struct index_extent ext = {.volume = 1, .offset = 8192, .len = 100};
    static const uint8_t sums[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct index_object *o = arena_calloc(a, 1, sizeof(*o));
    o->size = 100;
    o->mtime_ns = mtime_ns;
    memset(o->etag, tag, 16);
    o->n_extents = 1;
    o->extents = &ext;
    o->sums = sums;
    o->sums_len = sizeof(sums);
    o->meta = (const uint8_t *)meta;
    o->meta_len = strlen(meta);
    struct index_op op = {
        .kind = INDEX_OP_PUT, .bucket_id = bid, .key = key, .object = o, .arena = a};
    ASSERT_EQ(commit1(&op), 0);
}

/* An op that sets 'meta' on the version ('tag', 'mtime_ns') of 'key'. */
static struct index_op
set_meta_op(struct arena *a, struct slice key, uint8_t tag, int64_t mtime_ns, const char *meta)
{
    struct index_object *o = arena_calloc(a, 1, sizeof(*o));
    o->mtime_ns = mtime_ns;
    memset(o->etag, tag, 16);
    o->meta = (const uint8_t *)meta;
    o->meta_len = strlen(meta);
    return (struct index_op){
        .kind = INDEX_OP_SET_META, .bucket_id = bid, .key = key, .object = o, .arena = a};
}

/* Checks that 'key' holds the object put() made with 'tag'/'mtime_ns' and
 * metadata 'meta'. */
static void
check(struct arena *a, struct slice key, uint8_t tag, int64_t mtime_ns, const char *meta)
{
    struct index_object got;
    uint8_t etag[16];
    memset(etag, tag, 16);
    ASSERT_EQ(index_object_get(ix, bid, key, a, &got), 0);
    ASSERT_UEQ(got.size, 100);
    ASSERT_EQ(got.mtime_ns, mtime_ns);
    ASSERT_MEM_EQ(got.etag, etag, 16);
    ASSERT_UEQ(got.n_extents, 1);
    ASSERT_UEQ(got.extents[0].volume, 1);
    ASSERT_UEQ(got.extents[0].offset, 8192);
    ASSERT_UEQ(got.extents[0].len, 100);
    ASSERT_UEQ(got.sums_len, 8);
    ASSERT_UEQ(got.sums[7], 8);
    ASSERT_UEQ(got.meta_len, strlen(meta));
    if (got.meta_len)
        ASSERT_MEM_EQ(got.meta, meta, got.meta_len);
}

static void
test_key(struct arena *a, struct slice key)
{
    put(a, key, 0xaa, 1000, "old-meta");

    /* Replaced; nothing freed; the rest of the record unchanged. */
    struct index_op op = set_meta_op(a, key, 0xaa, 1000, "new-meta-longer-than-before");
    ASSERT_EQ(commit1(&op), 0);
    ASSERT_UEQ(op.n_freed, 0);
    check(a, key, 0xaa, 1000, "new-meta-longer-than-before");

    /* Shrinking to nothing works too. */
    op = set_meta_op(a, key, 0xaa, 1000, "");
    ASSERT_EQ(commit1(&op), 0);
    check(a, key, 0xaa, 1000, "");

    /* Another ETag, or the same ETag with another mtime (the same bytes
     * written again): stale, nothing changes. */
    op = set_meta_op(a, key, 0xbb, 1000, "x");
    ASSERT_EQ(commit1(&op), -ESTALE);
    op = set_meta_op(a, key, 0xaa, 1001, "x");
    ASSERT_EQ(commit1(&op), -ESTALE);
    check(a, key, 0xaa, 1000, "");

    /* The object overwritten meanwhile: the old identity no longer fits. */
    put(a, key, 0xaa, 2000, "overwritten");
    op = set_meta_op(a, key, 0xaa, 1000, "late");
    ASSERT_EQ(commit1(&op), -ESTALE);
    check(a, key, 0xaa, 2000, "overwritten");

    struct index_op del = {.kind = INDEX_OP_DELETE, .bucket_id = bid, .key = key, .arena = a};
    ASSERT_EQ(commit1(&del), 0);
    op = set_meta_op(a, key, 0xaa, 2000, "gone");
    ASSERT_EQ(commit1(&op), -ENOENT);
}

int
main(void)
{
    char *dir = test_tmpdir_create("index-set-meta");
    struct arena *a = arena_create(1 << 16);
    struct index_bucket b;

    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("b"), "o", 1, &b), 0);
    bid = b.id;

    test_key(a, SLICE_LIT("k"));
    char *long_key = arena_alloc(a, INDEX_MAX_KEY);
    memset(long_key, 'L', INDEX_MAX_KEY);
    test_key(a, (struct slice){long_key, INDEX_MAX_KEY});

    /* A batch: a put and a set-meta on another key both apply. */
    put(a, SLICE_LIT("m"), 0x11, 5, "m0");
    struct index_object o2 = {.size = 0, .mtime_ns = 7};
    struct index_op ops[2] = {
        {.kind = INDEX_OP_PUT, .bucket_id = bid, .key = SLICE_LIT("n"), .object = &o2, .arena = a},
        set_meta_op(a, SLICE_LIT("m"), 0x11, 5, "m1"),
    };
    ASSERT_EQ(index_commit(ix, ops, 2), 0);
    ASSERT_EQ(ops[0].result, 0);
    ASSERT_EQ(ops[1].result, 0);
    check(a, SLICE_LIT("m"), 0x11, 5, "m1");

    /* Bad arguments: no object, an unknown bucket. */
    struct index_op bad = {
        .kind = INDEX_OP_SET_META, .bucket_id = bid, .key = SLICE_LIT("m"), .arena = a};
    ASSERT_EQ(commit1(&bad), -EINVAL);
    bad = set_meta_op(a, SLICE_LIT("m"), 0x11, 5, "x");
    bad.bucket_id = bid + 100;
    ASSERT_EQ(commit1(&bad), -ENOENT);
    check(a, SLICE_LIT("m"), 0x11, 5, "m1");

    index_close(ix);
    arena_destroy(a);
    test_tmpdir_remove(dir);
    return 0;
}
