/*
 * test_set_extents.c: INDEX_OP_SET_EXTENTS (a tier move) and extent
 * flags. The extents and sums are replaced while size, ETag, mtime and
 * metadata stay, and the old extents are freed; a stale version (other
 * ETag or mtime: overwritten) or other extents (moved by someone else
 * meanwhile) change nothing; a copy sharing the old extents keeps them
 * (nothing freed) and a later delete of both frees the new ones once;
 * flags come back from lookups, listings, extrefs and the startup scan,
 * and a flagged extent at the same volume and offset as a hot one is a
 * different extent. In a versioned bucket the version named (or the
 * latest) moves, its "objects" copy with it when it is the latest, and a
 * delete of a moved version frees its new extent.
 */
#include "index/index.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>

static struct index *ix;
static uint64_t bid;

static const struct index_extent hot = {.volume = 0, .offset = 8192, .len = 100};
static const struct index_extent cold = {.volume = 0, .flags = 0x101, .offset = 8192, .len = 60};

static int
commit1(struct index_op *op)
{
    ASSERT_EQ(index_commit(ix, op, 1), 0);
    return op->result;
}

static void
put(struct arena *a, struct slice key, uint8_t tag, int64_t mtime_ns)
{
    static const uint8_t sums[8] = {1};
    struct index_object *o = arena_calloc(a, 1, sizeof(*o));
    o->size = 100;
    o->mtime_ns = mtime_ns;
    memset(o->etag, tag, 16);
    o->n_extents = 1;
    o->extents = &hot;
    o->sums = sums;
    o->sums_len = 8;
    o->meta = (const uint8_t *)"meta";
    o->meta_len = 4;
    struct index_op op = {
        .kind = INDEX_OP_PUT, .bucket_id = bid, .key = key, .object = o, .arena = a};
    ASSERT_EQ(commit1(&op), 0);
}

/* The move of 'key' (version 'tag'/'mtime_ns', extents 'expect') to 'to'. */
static struct index_op
move_op_to(struct arena *a, struct slice key, uint8_t tag, int64_t mtime_ns,
           const struct index_extent *expect, const struct index_extent *to)
{
    static const uint8_t sums[16] = {9};
    struct index_object *o = arena_calloc(a, 1, sizeof(*o));
    o->size = 100;
    o->mtime_ns = mtime_ns;
    memset(o->etag, tag, 16);
    o->n_extents = 1;
    o->extents = to;
    o->sums = sums;
    o->sums_len = 16;
    return (struct index_op){.kind = INDEX_OP_SET_EXTENTS,
                             .bucket_id = bid,
                             .key = key,
                             .object = o,
                             .expect_extents = expect,
                             .n_expect_extents = 1,
                             .arena = a};
}

/* The move of 'key' (version 'tag'/'mtime_ns', extents 'expect') to 'cold'. */
static struct index_op
move_op(struct arena *a, struct slice key, uint8_t tag, int64_t mtime_ns,
        const struct index_extent *expect)
{
    return move_op_to(a, key, tag, mtime_ns, expect, &cold);
}

struct scan_seen {
    int hot, cold;
};

static void
on_extent(void *ctx, const struct index_extent *e)
{
    struct scan_seen *s = ctx;
    if (e->flags == cold.flags && e->offset == cold.offset && e->len == cold.len)
        s->cold++;
    else if (e->flags == 0 && e->offset == hot.offset)
        s->hot++;
}

/* A PUT of 'key' in versioned bucket 'vbid' on extent 'e'; its version id
 * into 'vid'. */
static void
put_version(struct arena *a, uint64_t vbid, struct slice key, uint8_t tag,
            const struct index_extent *e, uint8_t vid[INDEX_VERSION_ID_LEN])
{
    struct index_object *o = arena_calloc(a, 1, sizeof(*o));
    o->size = 100;
    o->mtime_ns = tag;
    memset(o->etag, tag, 16);
    o->n_extents = 1;
    o->extents = e;
    struct index_op op = {
        .kind = INDEX_OP_PUT, .bucket_id = vbid, .key = key, .object = o, .arena = a};
    ASSERT_EQ(commit1(&op), 0);
    memcpy(vid, op.result_version_id, INDEX_VERSION_ID_LEN);
}

static void
test_versioned(struct arena *a)
{
    static const struct index_extent v1_hot = {.volume = 0, .offset = 16384, .len = 100};
    static const struct index_extent v2_hot = {.volume = 0, .offset = 32768, .len = 100};
    static const struct index_extent v1_cold = {
        .volume = 0, .flags = 0x101, .offset = 100, .len = 60};
    static const struct index_extent v2_cold = {
        .volume = 0, .flags = 0x101, .offset = 200, .len = 60};
    uint8_t v1[INDEX_VERSION_ID_LEN], v2[INDEX_VERSION_ID_LEN];
    struct index_bucket vb;
    struct index_object got;
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("vb"), "o", 1, &vb), 0);
    ASSERT_EQ(index_versioning_put(ix, vb.id, INDEX_VERSIONING_ENABLED, false), 0);
    put_version(a, vb.id, SLICE_LIT("vk"), 0x31, &v1_hot, v1);
    put_version(a, vb.id, SLICE_LIT("vk"), 0x32, &v2_hot, v2);

    /* The noncurrent version, by id: it moves, the latest stays. */
    struct index_op op = move_op_to(a, SLICE_LIT("vk"), 0x31, 0x31, &v1_hot, &v1_cold);
    op.bucket_id = vb.id;
    op.has_version_id = true;
    memcpy(op.version_id, v1, INDEX_VERSION_ID_LEN);
    ASSERT_EQ(commit1(&op), 0);
    ASSERT_UEQ(op.n_freed, 1);
    ASSERT_UEQ(op.freed[0].offset, v1_hot.offset);
    ASSERT_EQ(index_object_version_get(ix, vb.id, SLICE_LIT("vk"), v1, a, &got), 0);
    ASSERT_UEQ(got.extents[0].flags, v1_cold.flags);
    ASSERT_UEQ(got.extents[0].offset, v1_cold.offset);
    ASSERT_UEQ(got.sums_len, 16);
    ASSERT_EQ(index_object_get(ix, vb.id, SLICE_LIT("vk"), a, &got), 0);
    ASSERT_UEQ(got.extents[0].offset, v2_hot.offset);
    ASSERT_UEQ(got.extents[0].flags, 0);
    /* Again from the same read: stale. The latest's ETag on the old
     * version's id: stale too. */
    ASSERT_EQ(commit1(&op), -ESTALE);
    op = move_op(a, SLICE_LIT("vk"), 0x32, 0x32, &v2_hot);
    op.bucket_id = vb.id;
    op.has_version_id = true;
    memcpy(op.version_id, v1, INDEX_VERSION_ID_LEN);
    ASSERT_EQ(commit1(&op), -ESTALE);

    /* The latest, without an id: the version and its "objects" copy. */
    op = move_op_to(a, SLICE_LIT("vk"), 0x32, 0x32, &v2_hot, &v2_cold);
    op.bucket_id = vb.id;
    ASSERT_EQ(commit1(&op), 0);
    ASSERT_UEQ(op.n_freed, 1);
    ASSERT_UEQ(op.freed[0].offset, v2_hot.offset);
    ASSERT_EQ(memcmp(op.result_version_id, v2, INDEX_VERSION_ID_LEN), 0);
    ASSERT_EQ(index_object_get(ix, vb.id, SLICE_LIT("vk"), a, &got), 0);
    ASSERT_UEQ(got.extents[0].flags, v2_cold.flags);
    ASSERT_UEQ(got.extents[0].offset, v2_cold.offset);
    ASSERT_EQ(index_object_version_get(ix, vb.id, SLICE_LIT("vk"), v2, a, &got), 0);
    ASSERT_UEQ(got.extents[0].offset, v2_cold.offset);

    /* Listings of versions carry the flags; the scan sees both. */
    struct index_version_list_params lp = {.bucket_id = vb.id, .max_keys = 10};
    struct index_version_list_result lr;
    ASSERT_EQ(index_version_list(ix, &lp, a, &lr), 0);
    ASSERT_UEQ(lr.n_entries, 2);
    ASSERT_UEQ(lr.entries[0].flags, v2_cold.flags);
    ASSERT_UEQ(lr.entries[1].flags, v1_cold.flags);

    /* Behind a delete marker the latest is absent; a version by id is
     * still there. Deleting it frees its cold extent. */
    struct index_op del = {
        .kind = INDEX_OP_DELETE, .bucket_id = vb.id, .key = SLICE_LIT("vk"), .arena = a};
    ASSERT_EQ(commit1(&del), 0);
    op = move_op(a, SLICE_LIT("vk"), 0x32, 0x32, &v2_cold);
    op.bucket_id = vb.id;
    ASSERT_EQ(commit1(&op), -ENOENT);
    del.has_version_id = true;
    memcpy(del.version_id, v1, INDEX_VERSION_ID_LEN);
    ASSERT_EQ(commit1(&del), 0);
    ASSERT_UEQ(del.n_freed, 1);
    ASSERT_UEQ(del.freed[0].flags, v1_cold.flags);
    ASSERT_UEQ(del.freed[0].offset, v1_cold.offset);
}

int
main(void)
{
    char *dir = test_tmpdir_create("index-set-extents");
    struct arena *a = arena_create(1 << 16);
    struct index_bucket b;
    struct index_object got;
    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("b"), "o", 1, &b), 0);
    bid = b.id;

    /* Stale version or other extents: -ESTALE, nothing changes. */
    put(a, SLICE_LIT("k"), 0x11, 5);
    struct index_op op = move_op(a, SLICE_LIT("k"), 0x12, 5, &hot);
    ASSERT_EQ(commit1(&op), -ESTALE);
    op = move_op(a, SLICE_LIT("k"), 0x11, 6, &hot);
    ASSERT_EQ(commit1(&op), -ESTALE);
    op = move_op(a, SLICE_LIT("k"), 0x11, 5, &cold);
    ASSERT_EQ(commit1(&op), -ESTALE);
    ASSERT_UEQ(op.n_freed, 0);
    op = move_op(a, SLICE_LIT("absent"), 0x11, 5, &hot);
    ASSERT_EQ(commit1(&op), -ENOENT);
    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("k"), a, &got), 0);
    ASSERT_UEQ(got.extents[0].flags, 0);

    /* The move: new extents and sums, the rest kept, the old freed. */
    op = move_op(a, SLICE_LIT("k"), 0x11, 5, &hot);
    ASSERT_EQ(commit1(&op), 0);
    ASSERT_UEQ(op.n_freed, 1);
    ASSERT_UEQ(op.freed[0].offset, hot.offset);
    ASSERT_UEQ(op.freed[0].flags, 0);
    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("k"), a, &got), 0);
    ASSERT_UEQ(got.size, 100);
    ASSERT_EQ(got.mtime_ns, 5);
    ASSERT_UEQ(got.meta_len, 4);
    ASSERT_UEQ(got.sums_len, 16);
    ASSERT_UEQ(got.extents[0].flags, cold.flags);
    ASSERT_UEQ(got.extents[0].len, cold.len);
    /* Moved again from the same read: the extents differ now. */
    op = move_op(a, SLICE_LIT("k"), 0x11, 5, &hot);
    ASSERT_EQ(commit1(&op), -ESTALE);

    /* Listings carry the flags. */
    struct index_list_params lp = {.bucket_id = bid, .max_keys = 10};
    struct index_list_result lr;
    ASSERT_EQ(index_object_list(ix, &lp, a, &lr), 0);
    ASSERT_UEQ(lr.n_entries, 1);
    ASSERT_UEQ(lr.entries[0].flags, cold.flags);

    /* A hot object at the same volume and offset is another extent. */
    put(a, SLICE_LIT("h"), 0x22, 7);
    struct scan_seen seen = {0};
    ASSERT_EQ(index_extents_scan(ix, on_extent, &seen), 0);
    ASSERT_EQ(seen.hot, 1);
    ASSERT_EQ(seen.cold, 1);

    /* A copy shares the cold extent (flags in the extref key): moving
     * the hot one frees nothing the copy holds; deleting both cold
     * holders frees the cold extent once. */
    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("k"), a, &got), 0);
    struct index_op cp = {.kind = INDEX_OP_PUT,
                          .bucket_id = bid,
                          .key = SLICE_LIT("k2"),
                          .object = &got,
                          .share_bucket_id = bid,
                          .share_key = SLICE_LIT("k"),
                          .arena = a};
    ASSERT_EQ(commit1(&cp), 0);
    seen = (struct scan_seen){0};
    ASSERT_EQ(index_extents_scan(ix, on_extent, &seen), 0);
    ASSERT_EQ(seen.cold, 1); /* reported once, from the extrefs */
    struct index_op del = {
        .kind = INDEX_OP_DELETE, .bucket_id = bid, .key = SLICE_LIT("k"), .arena = a};
    ASSERT_EQ(commit1(&del), 0);
    ASSERT_UEQ(del.n_freed, 0);
    /* Deleting the hot object frees the hot extent only. */
    del.key = SLICE_LIT("h");
    ASSERT_EQ(commit1(&del), 0);
    ASSERT_UEQ(del.n_freed, 1);
    ASSERT_UEQ(del.freed[0].flags, 0);
    del.key = SLICE_LIT("k2");
    ASSERT_EQ(commit1(&del), 0);
    ASSERT_UEQ(del.n_freed, 1);
    ASSERT_UEQ(del.freed[0].flags, cold.flags);

    test_versioned(a);

    index_close(ix);
    arena_destroy(a);
    test_tmpdir_remove(dir);
    return 0;
}
