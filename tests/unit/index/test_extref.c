/*
 * test_extref.c: objects that share extents (CopyObject). A copy adds a
 * holder to each extent; deleting or overwriting any holder frees only
 * the extents nobody else holds; the extent scan reports a shared extent
 * once; a copy whose source changed meanwhile is refused (-ESTALE) and
 * changes nothing; the counts survive a reopen.
 */
#include "index/index.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>

static struct index *ix;
static uint64_t bid;

static const struct index_extent ext_a[2] = {
    {.volume = 0, .offset = 0, .len = 1 << 20},
    {.volume = 1, .offset = 8192, .len = 5000},
};
static const struct index_extent ext_b[1] = {{.volume = 0, .offset = 4 << 20, .len = 4096}};

static struct index_object
object(const struct index_extent *e, uint32_t n, uint8_t tag)
{
    struct index_object o = {.size = 0, .mtime_ns = 1, .n_extents = n, .extents = e};
    for (uint32_t i = 0; i < n; i++)
        o.size += e[i].len;
    memset(o.etag, tag, sizeof(o.etag));
    return o;
}

/* Commits one op and returns its result; '*freed'/'*n_freed' get the extents to free. */
static int
commit(struct index_op op, struct arena *a, uint32_t *n_freed, uint64_t *freed_bytes)
{
    op.bucket_id = bid;
    op.arena = a;
    ASSERT_EQ(index_commit(ix, &op, 1), 0);
    *n_freed = op.n_freed;
    *freed_bytes = 0;
    for (uint32_t i = 0; i < op.n_freed; i++)
        *freed_bytes += op.freed[i].len;
    return op.result;
}

static int
share(const char *dst, const char *src, const struct index_object *o, struct arena *a,
      uint32_t *n_freed, uint64_t *freed_bytes)
{
    struct index_op op = {.kind = INDEX_OP_PUT,
                          .key = slice_from_cstr(dst),
                          .object = o,
                          .share_bucket_id = bid,
                          .share_key = slice_from_cstr(src)};
    return commit(op, a, n_freed, freed_bytes);
}

static int
del(const char *key, struct arena *a, uint32_t *n_freed, uint64_t *freed_bytes)
{
    struct index_op op = {.kind = INDEX_OP_DELETE, .key = slice_from_cstr(key)};
    return commit(op, a, n_freed, freed_bytes);
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

static void
expect_scan(uint64_t n, uint64_t bytes)
{
    struct scan_totals t = {0, 0};
    ASSERT_EQ(index_extents_scan(ix, scan_cb, &t), 0);
    ASSERT_UEQ(t.n, n);
    ASSERT_UEQ(t.bytes, bytes);
}

int
main(void)
{
    char *dir = test_tmpdir_create("index-extref");
    struct arena *a = arena_create(1 << 16);
    struct index_bucket b;
    uint32_t nf;
    uint64_t fb;
    const uint64_t a_bytes = (1 << 20) + 5000;

    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("b"), "o", 1, &b), 0);
    bid = b.id;

    struct index_object oa = object(ext_a, 2, 0xa), ob = object(ext_b, 1, 0xb);
    struct index_op put = {.kind = INDEX_OP_PUT, .key = SLICE_LIT("a"), .object = &oa};
    ASSERT_EQ(commit(put, a, &nf, &fb), 0);
    expect_scan(2, a_bytes);
    ASSERT_UEQ(index_shared_extents(ix), 0);

    /* Refused copies change nothing: source absent, other extents, other etag. */
    ASSERT_EQ(share("x", "missing", &oa, a, &nf, &fb), -ESTALE);
    ASSERT_EQ(share("x", "a", &ob, a, &nf, &fb), -ESTALE);
    struct index_object oa_other_etag = object(ext_a, 2, 0xc);
    ASSERT_EQ(share("x", "a", &oa_other_etag, a, &nf, &fb), -ESTALE);
    struct index_object got;
    ASSERT_EQ(index_object_get(ix, bid, SLICE_LIT("x"), a, &got), -ENOENT);
    ASSERT_UEQ(index_shared_extents(ix), 0);

    /* Two copies: three holders, the scan still reports each extent once. */
    ASSERT_EQ(share("c1", "a", &oa, a, &nf, &fb), 0);
    ASSERT_UEQ(nf, 0);
    ASSERT_EQ(share("c2", "c1", &oa, a, &nf, &fb), 0);
    ASSERT_UEQ(index_shared_extents(ix), 2);
    expect_scan(2, a_bytes);

    /* The counts are durable. */
    index_close(ix);
    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_UEQ(index_shared_extents(ix), 2);
    expect_scan(2, a_bytes);

    /* Dropping holders frees nothing until the last one goes. */
    ASSERT_EQ(del("a", a, &nf, &fb), 0);
    ASSERT_UEQ(nf, 0);
    ASSERT_UEQ(index_shared_extents(ix), 2);
    put.key = SLICE_LIT("c1");
    put.object = &ob;
    ASSERT_EQ(commit(put, a, &nf, &fb), 0); /* overwrite a holder */
    ASSERT_UEQ(nf, 0);
    ASSERT_UEQ(index_shared_extents(ix), 0); /* c2 alone holds them now */
    expect_scan(3, a_bytes + 4096);

    /* A copy onto itself (metadata replace) frees nothing and shares nothing. */
    ASSERT_EQ(share("c2", "c2", &oa, a, &nf, &fb), 0);
    ASSERT_UEQ(nf, 0);
    ASSERT_UEQ(index_shared_extents(ix), 0);

    ASSERT_EQ(del("c2", a, &nf, &fb), 0);
    ASSERT_UEQ(nf, 2);
    ASSERT_UEQ(fb, a_bytes);
    ASSERT_EQ(del("c1", a, &nf, &fb), 0);
    ASSERT_UEQ(nf, 1);
    expect_scan(0, 0);

    index_close(ix);
    arena_destroy(a);
    test_tmpdir_remove(dir);
    return 0;
}
