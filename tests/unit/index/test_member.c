/*
 * test_member.c: tar member indexes (index/member.c) through index_commit:
 * written with a PUT, looked up by name (the last of duplicates), listed
 * in pages with markers, replaced by MEMBERS_PUT only while the etag
 * matches, "not an archive" heads, and no record left after an overwrite
 * or a delete (index_member_count), also for keys longer than 480 bytes.
 */
#include "index/index.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>

static struct index *ix;
static uint64_t bid;

static int
commit_one(struct index_op *op)
{
    ASSERT_EQ(index_commit(ix, op, 1), 0);
    return op->result;
}

/* PUTs 'key' with etag byte 'tag' and member index 'm' (may be NULL). */
static void
put(struct arena *a, struct slice key, uint8_t tag, const struct index_members *m)
{
    struct index_object o;
    memset(&o, 0, sizeof(o));
    o.size = 1 << 20;
    memset(o.etag, tag, 16);
    struct index_op op = {
        .kind = INDEX_OP_PUT, .bucket_id = bid, .key = key, .object = &o, .members = m, .arena = a};
    ASSERT_EQ(commit_one(&op), 0);
}

static uint64_t
count(void)
{
    uint64_t n;
    ASSERT_EQ(index_member_count(ix, &n), 0);
    return n;
}

static void
test_members(struct arena *a, struct slice key)
{
    enum { N = 2500 };
    struct index_member *ms = arena_calloc(a, N, sizeof(*ms));
    for (int i = 0; i < N; i++) {
        ms[i].name = slice_from_cstr(arena_sprintf(a, "%06d.%s", i / 2, i % 2 ? "cls" : "jpg"));
        ms[i].offset = 512 + (uint64_t)i * 1024;
        ms[i].size = 100 + (uint64_t)i;
        ms[i].mode = 0644;
        ms[i].mtime_s = 1700000000 + i;
    }
    ms[N - 1].name = SLICE_LIT("000000.jpg"); /* a duplicate: the last wins */
    struct index_members m = {.is_archive = true, .members = ms, .n_members = N};
    uint8_t etag[16];
    memset(etag, 7, 16);
    uint64_t before = count();
    put(a, key, 7, &m);
    ASSERT_UEQ(count(), before + 1);

    struct index_member got;
    ASSERT_EQ(index_member_get(ix, bid, key, etag, SLICE_LIT("000100.cls"), a, &got), 0);
    ASSERT_UEQ(got.offset, 512 + 201 * 1024);
    ASSERT_UEQ(got.size, 301);
    ASSERT_EQ(got.mtime_s, 1700000201);
    ASSERT(slice_eq(got.name, SLICE_LIT("000100.cls")));
    ASSERT_EQ(index_member_get(ix, bid, key, etag, SLICE_LIT("000000.jpg"), a, &got), 0);
    ASSERT_UEQ(got.offset, 512 + (uint64_t)(N - 1) * 1024);
    ASSERT_EQ(index_member_get(ix, bid, key, etag, SLICE_LIT("nope"), a, &got), -ENOENT);
    uint8_t other[16];
    memset(other, 8, 16);
    ASSERT_EQ(index_member_get(ix, bid, key, other, SLICE_LIT("000000.cls"), a, &got), -ENODATA);

    /* Pages of 1000 from the start and after markers. */
    struct slice marker = SLICE_NULL;
    uint32_t seen = 0;
    for (;;) {
        struct index_member *page;
        uint32_t n;
        bool more;
        ASSERT_EQ(index_member_list(ix, bid, key, etag, marker, 1000, a, &page, &n, &more), 0);
        for (uint32_t i = 0; i < n; i++) {
            ASSERT_UEQ(page[i].offset, ms[seen + i].offset);
            ASSERT(slice_eq(page[i].name, ms[seen + i].name));
        }
        seen += n;
        if (!more)
            break;
        ASSERT_UEQ(n, 1000);
        marker = page[n - 1].name;
    }
    ASSERT_UEQ(seen, N);
    struct index_member *page;
    uint32_t n;
    bool more;
    ASSERT_EQ(index_member_list(ix, bid, key, etag, SLICE_LIT("nope"), 10, a, &page, &n, &more),
              -ENOENT);

    /* MEMBERS_PUT: only onto the version it was built from. */
    struct index_members not_tar = {.is_archive = false};
    struct index_op op = {.kind = INDEX_OP_MEMBERS_PUT,
                          .bucket_id = bid,
                          .key = key,
                          .members = &not_tar,
                          .arena = a};
    memcpy(op.if_match_etag, other, 16);
    ASSERT_EQ(commit_one(&op), -ESTALE);
    ASSERT_EQ(index_member_get(ix, bid, key, etag, SLICE_LIT("000100.cls"), a, &got), 0);
    memcpy(op.if_match_etag, etag, 16);
    ASSERT_EQ(commit_one(&op), 0);
    ASSERT_EQ(index_member_get(ix, bid, key, etag, SLICE_LIT("000100.cls"), a, &got), -EILSEQ);
    ASSERT_UEQ(count(), before + 1);

    /* An overwrite without an index drops the old one, entries and all. */
    put(a, key, 7, &m);
    put(a, key, 9, NULL);
    ASSERT_UEQ(count(), before);
    ASSERT_EQ(index_member_get(ix, bid, key, etag, SLICE_LIT("000100.cls"), a, &got), -ENODATA);
    ASSERT_EQ(index_member_list(ix, bid, key, etag, SLICE_NULL, 10, a, &page, &n, &more), -ENODATA);
    /* A delete drops it too. */
    put(a, key, 7, &m);
    ASSERT_UEQ(count(), before + 1);
    struct index_op del = {.kind = INDEX_OP_DELETE, .bucket_id = bid, .key = key, .arena = a};
    ASSERT_EQ(commit_one(&del), 0);
    ASSERT_UEQ(count(), before);
    ASSERT_EQ(index_member_get(ix, bid, key, etag, SLICE_LIT("000100.cls"), a, &got), -ENODATA);
    /* MEMBERS_PUT on an absent object writes nothing. */
    ASSERT_EQ(commit_one(&op), -ESTALE);
    ASSERT_UEQ(count(), before);
}

int
main(void)
{
    char *dir = test_tmpdir_create("member");
    struct arena *a = arena_create(1 << 16);
    struct index_bucket b;
    ASSERT_EQ(index_open(&ix, dir, 1ull << 30, true), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("bk"), "", 1, &b), 0);
    bid = b.id;
    /* A neighbour whose index must survive everything done to the others. */
    struct index_member one = {.name = SLICE_LIT("a"), .offset = 512, .size = 1};
    struct index_members m1 = {.is_archive = true, .members = &one, .n_members = 1};
    put(a, SLICE_LIT("shard-0.tar"), 3, &m1);
    test_members(a, SLICE_LIT("shard-1.tar"));
    char *long_key = arena_alloc(a, 900);
    memset(long_key, 'k', 900);
    test_members(a, (struct slice){long_key, 900});
    ASSERT_UEQ(count(), 1);
    uint8_t etag[16];
    memset(etag, 3, 16);
    struct index_member got;
    ASSERT_EQ(index_member_get(ix, bid, SLICE_LIT("shard-0.tar"), etag, SLICE_LIT("a"), a, &got),
              0);
    index_close(ix);
    arena_destroy(a);
    test_tmpdir_remove(dir);
    return 0;
}
