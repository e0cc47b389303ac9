/*
 * test_bucket_config.c: the per-bucket configuration store: put, get,
 * replace, delete, the kinds kept apart, list by kind, a missing bucket
 * refused, and every configuration gone with its bucket (a re-created
 * bucket starts bare), also across close/reopen.
 */
#include "index/index.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>

struct seen {
    uint64_t ids[8];
    size_t lens[8];
    int n;
};

static int
collect(void *ctx, uint64_t bucket_id, const void *val, size_t len)
{
    struct seen *s = ctx;
    (void)val;
    if (s->n < 8) {
        s->ids[s->n] = bucket_id;
        s->lens[s->n++] = len;
    }
    return 0;
}

int
main(void)
{
    char *dir = test_tmpdir_create("index-bucket-config");
    struct index *ix;
    struct index_bucket a, b;
    struct arena *ar = arena_create(0);
    const void *val;
    size_t len;

    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("alpha"), "", 1, &a), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("beta"), "", 2, &b), 0);

    ASSERT_EQ(index_bucket_config_get(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, ar, &val, &len),
              -ENOENT);
    ASSERT_EQ(index_bucket_config_put(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, "one", 3), 0);
    ASSERT_EQ(index_bucket_config_put(ix, a.id, INDEX_BUCKET_CONFIG_TAGGING, "tags", 4), 0);
    ASSERT_EQ(index_bucket_config_put(ix, b.id, INDEX_BUCKET_CONFIG_TAGGING, "bt", 2), 0);
    ASSERT_EQ(index_bucket_config_get(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, ar, &val, &len), 0);
    ASSERT_UEQ(len, 3);
    ASSERT(memcmp(val, "one", 3) == 0);
    /* Replace. */
    ASSERT_EQ(index_bucket_config_put(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, "second", 6), 0);
    ASSERT_EQ(index_bucket_config_get(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, ar, &val, &len), 0);
    ASSERT_UEQ(len, 6);
    ASSERT(memcmp(val, "second", 6) == 0);

    /* Bad arguments and a bucket that does not exist. */
    ASSERT_EQ(index_bucket_config_put(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, "", 0), -EINVAL);
    ASSERT_EQ(index_bucket_config_put(ix, a.id, 0, "x", 1), -EINVAL);
    ASSERT_EQ(index_bucket_config_put(ix, 9999, INDEX_BUCKET_CONFIG_LIFECYCLE, "x", 1), -ENOENT);
    ASSERT_EQ(index_bucket_config_put(ix, 0, INDEX_BUCKET_CONFIG_LIFECYCLE, "x", 1), -ENOENT);

    /* List by kind: only the buckets with that kind, in id order. */
    struct seen s = {.n = 0};
    ASSERT_EQ(index_bucket_config_list(ix, INDEX_BUCKET_CONFIG_TAGGING, collect, &s), 0);
    ASSERT_EQ(s.n, 2);
    ASSERT_UEQ(s.ids[0], a.id);
    ASSERT_UEQ(s.lens[0], 4);
    ASSERT_UEQ(s.ids[1], b.id);
    s.n = 0;
    ASSERT_EQ(index_bucket_config_list(ix, INDEX_BUCKET_CONFIG_LIFECYCLE, collect, &s), 0);
    ASSERT_EQ(s.n, 1);
    ASSERT_UEQ(s.ids[0], a.id);

    /* Delete one kind; the other stays. */
    ASSERT_EQ(index_bucket_config_delete(ix, a.id, INDEX_BUCKET_CONFIG_TAGGING), 0);
    ASSERT_EQ(index_bucket_config_delete(ix, a.id, INDEX_BUCKET_CONFIG_TAGGING), -ENOENT);
    ASSERT_EQ(index_bucket_config_get(ix, a.id, INDEX_BUCKET_CONFIG_TAGGING, ar, &val, &len),
              -ENOENT);
    ASSERT_EQ(index_bucket_config_get(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, ar, &val, &len), 0);

    /* Survives a reopen. */
    index_close(ix);
    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_EQ(index_bucket_config_get(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, ar, &val, &len), 0);
    ASSERT_UEQ(len, 6);

    /* Deleting the bucket deletes its configurations; the neighbour's stay. */
    ASSERT_EQ(index_bucket_config_put(ix, a.id, INDEX_BUCKET_CONFIG_TAGGING, "tags", 4), 0);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("alpha"), a.id), 0);
    ASSERT_EQ(index_bucket_config_get(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, ar, &val, &len),
              -ENOENT);
    ASSERT_EQ(index_bucket_config_get(ix, a.id, INDEX_BUCKET_CONFIG_TAGGING, ar, &val, &len),
              -ENOENT);
    ASSERT_EQ(index_bucket_config_get(ix, b.id, INDEX_BUCKET_CONFIG_TAGGING, ar, &val, &len), 0);
    ASSERT_EQ(index_bucket_config_put(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, "x", 1), -ENOENT);
    /* Re-created under the same name: a new id, no configuration. */
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("alpha"), "", 3, &a), 0);
    ASSERT_EQ(index_bucket_config_get(ix, a.id, INDEX_BUCKET_CONFIG_LIFECYCLE, ar, &val, &len),
              -ENOENT);
    s.n = 0;
    ASSERT_EQ(index_bucket_config_list(ix, INDEX_BUCKET_CONFIG_LIFECYCLE, collect, &s), 0);
    ASSERT_EQ(s.n, 0);

    index_close(ix);
    arena_destroy(ar);
    test_tmpdir_remove(dir);
    return 0;
}
