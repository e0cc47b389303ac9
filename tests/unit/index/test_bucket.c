/*
 * test_bucket.c: bucket create/get/list/delete, EEXIST, ENOTEMPTY, and
 * ids that are never reused, also across close/reopen.
 */
#include "index/index.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>

struct names {
    char buf[8][INDEX_MAX_BUCKET + 1];
    int n;
};

static int
collect(void *ctx, const struct index_bucket *b)
{
    struct names *n = ctx;
    if (n->n < 8)
        strcpy(n->buf[n->n++], b->name);
    return 0;
}

static int
stop_after_one(void *ctx, const struct index_bucket *b)
{
    (void)b;
    (*(int *)ctx)++;
    return 1;
}

static void
put_one(struct index *ix, uint64_t bid, const char *key)
{
    struct arena *a = arena_create(0);
    struct index_object o = {.size = 3, .inline_data = (const uint8_t *)"abc", .inline_len = 3};
    struct index_op op = {.kind = INDEX_OP_PUT,
                          .bucket_id = bid,
                          .key = slice_from_cstr(key),
                          .object = &o,
                          .arena = a};
    ASSERT_EQ(index_commit(ix, &op, 1), 0);
    ASSERT_EQ(op.result, 0);
    arena_destroy(a);
}

static void
delete_one(struct index *ix, uint64_t bid, const char *key)
{
    struct arena *a = arena_create(0);
    struct index_op op = {
        .kind = INDEX_OP_DELETE, .bucket_id = bid, .key = slice_from_cstr(key), .arena = a};
    ASSERT_EQ(index_commit(ix, &op, 1), 0);
    ASSERT_EQ(op.result, 0);
    arena_destroy(a);
}

int
main(void)
{
    char *dir = test_tmpdir_create("index-bucket");
    struct index *ix;
    struct index_bucket b, b2;

    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_EQ(index_bucket_get(ix, SLICE_LIT("alpha"), &b), -ENOENT);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("alpha"), "alice", 1000, &b), 0);
    ASSERT_STR_EQ(b.name, "alpha");
    ASSERT_STR_EQ(b.owner, "alice");
    ASSERT(b.id > 0);
    ASSERT_EQ(b.created_ns, 1000);
    uint64_t alpha_id = b.id;

    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("alpha"), "bob", 2000, &b2), -EEXIST);
    ASSERT_UEQ(b2.id, alpha_id);
    ASSERT_STR_EQ(b2.owner, "alice");
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("gamma"), NULL, 3000, NULL), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("beta"), "bob", 4000, &b2), 0);
    ASSERT(b2.id != alpha_id);
    ASSERT_EQ(index_bucket_get(ix, SLICE_LIT("gamma"), &b), 0);
    ASSERT_STR_EQ(b.owner, "");
    ASSERT_EQ(b.created_ns, 3000);
    ASSERT_EQ(index_bucket_create(ix, SLICE_NULL, "x", 0, NULL), -EINVAL);

    struct names names = {.n = 0};
    ASSERT_EQ(index_bucket_list(ix, collect, &names), 0);
    ASSERT_EQ(names.n, 3);
    ASSERT_STR_EQ(names.buf[0], "alpha");
    ASSERT_STR_EQ(names.buf[1], "beta");
    ASSERT_STR_EQ(names.buf[2], "gamma");
    int calls = 0;
    ASSERT_EQ(index_bucket_list(ix, stop_after_one, &calls), 0);
    ASSERT_EQ(calls, 1);

    /* Not empty while an object remains; the neighbour bucket's objects
     * must not count. */
    ASSERT_EQ(index_bucket_get(ix, SLICE_LIT("beta"), &b2), 0);
    put_one(ix, alpha_id, "k");
    put_one(ix, b2.id, "z");
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("alpha"), alpha_id), -ENOTEMPTY);
    uint64_t n_obj = 0, n_bytes = 0;
    ASSERT_EQ(index_bucket_count(ix, alpha_id, &n_obj, &n_bytes), 0);
    ASSERT_UEQ(n_obj, 1);
    ASSERT_UEQ(n_bytes, 3);
    /* The console's bounded count stops at its cap and says so. */
    put_one(ix, alpha_id, "k2");
    bool is_cut = false;
    ASSERT_EQ(index_bucket_usage(ix, alpha_id, 1, &n_obj, &n_bytes, &is_cut), 0);
    ASSERT_UEQ(n_obj, 1);
    ASSERT(is_cut);
    ASSERT_EQ(index_bucket_usage(ix, alpha_id, 2, &n_obj, &n_bytes, &is_cut), 0);
    ASSERT_UEQ(n_obj, 2);
    ASSERT(!is_cut);
    delete_one(ix, alpha_id, "k2");
    delete_one(ix, alpha_id, "k");
    ASSERT_EQ(index_bucket_count(ix, alpha_id, &n_obj, &n_bytes), 0);
    ASSERT_UEQ(n_obj, 0);
    /* Deleting by a stale id (another bucket's, or one never made) does
     * nothing: the name is acted on only with the id the caller holds. */
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("alpha"), b2.id), -ESTALE);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("alpha"), alpha_id + 1000), -ESTALE);
    ASSERT_EQ(index_bucket_get(ix, SLICE_LIT("alpha"), &b), 0);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("alpha"), alpha_id), 0);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("alpha"), alpha_id), -ENOENT);
    ASSERT_EQ(index_bucket_get(ix, SLICE_LIT("alpha"), &b), -ENOENT);

    /* A stale id cannot write into the bucket any more. */
    struct arena *a = arena_create(0);
    struct index_object o = {.size = 0};
    struct index_op op = {.kind = INDEX_OP_PUT,
                          .bucket_id = alpha_id,
                          .key = SLICE_LIT("k"),
                          .object = &o,
                          .arena = a};
    ASSERT_EQ(index_commit(ix, &op, 1), 0);
    ASSERT_EQ(op.result, -ENOENT);
    arena_destroy(a);

    /* Recreated: a new id, never a reused one, also after reopening. */
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("alpha"), "carol", 5000, &b), 0);
    ASSERT(b.id != alpha_id && b.id != b2.id);
    uint64_t max_id = b.id;
    /* The old id of a re-created name must not delete the new bucket
     * (a DeleteBucket authorized against the old one). */
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("alpha"), alpha_id), -ESTALE);
    ASSERT_EQ(index_bucket_get(ix, SLICE_LIT("alpha"), &b), 0);
    ASSERT_UEQ(b.id, max_id);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("alpha"), max_id), 0);
    index_close(ix);
    ASSERT_EQ(index_open(&ix, dir, 64 << 20, false), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("alpha"), "dave", 6000, &b), 0);
    ASSERT(b.id > max_id);
    ASSERT_EQ(index_bucket_get(ix, SLICE_LIT("beta"), &b), 0);
    ASSERT_STR_EQ(b.owner, "bob");

    index_close(ix);
    test_tmpdir_remove(dir);
    return 0;
}
