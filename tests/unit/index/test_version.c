/*
 * test_version.c: versioned buckets in index/ (version.c). Enabling
 * versioning makes existing objects null versions; PUTs add versions in
 * commit order and the latest stays readable through index_object_get;
 * DELETE adds a marker that hides the key; removing a version frees its
 * extents and promotes the next one; suspended writes replace the null
 * version; Object Lock blocks removal; listing pages in (key, newest
 * first) order with IsLatest, delimiters and markers; extent scans count
 * each version's extents once; a bucket with versions cannot be deleted.
 */
#include "index/index.h"
#include "index/index_int.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>

static struct index *ix;
static uint64_t bid;
static uint64_t next_off = 4096;

static int
commit1(struct index_op *op)
{
    ASSERT_EQ(index_commit(ix, op, 1), 0);
    return op->result;
}

/* Puts a one-extent object of 'size' bytes with ETag byte 'tag' at 'key';
 * returns the op (result, version id, freed). */
static struct index_op
put(struct arena *a, const char *key, uint8_t tag)
{
    struct index_extent *ext = arena_calloc(a, 1, sizeof(*ext));
    ext->volume = 0;
    ext->offset = next_off;
    ext->len = 100;
    next_off += 4096;
    struct index_object *o = arena_calloc(a, 1, sizeof(*o));
    o->size = 100;
    o->mtime_ns = 1000;
    memset(o->etag, tag, 16);
    o->n_extents = 1;
    o->extents = ext;
    struct index_op op = {.kind = INDEX_OP_PUT,
                          .bucket_id = bid,
                          .key = slice_from_cstr(key),
                          .object = o,
                          .arena = a};
    ASSERT_EQ(commit1(&op), 0);
    return op;
}

static struct index_op
del(struct arena *a, const char *key, const uint8_t *vid)
{
    struct index_op op = {
        .kind = INDEX_OP_DELETE, .bucket_id = bid, .key = slice_from_cstr(key), .arena = a};
    if (vid) {
        op.has_version_id = true;
        memcpy(op.version_id, vid, INDEX_VERSION_ID_LEN);
    }
    commit1(&op);
    return op;
}

static uint8_t
latest_tag(struct arena *a, const char *key)
{
    struct index_object o;
    if (index_object_get(ix, bid, slice_from_cstr(key), a, &o) != 0)
        return 0;
    return o.etag[0];
}

static void
count_extent(void *ctx, const struct index_extent *e)
{
    (void)e;
    (*(int *)ctx)++;
}

static int
n_extents(void)
{
    int n = 0;
    ASSERT_EQ(index_extents_scan(ix, count_extent, &n), 0);
    return n;
}

static struct index_version_list_result
list(struct arena *a, const char *prefix, const char *delim, const char *km,
     const struct index_version_entry *after, uint32_t max)
{
    struct index_version_list_params p = {.bucket_id = bid,
                                          .prefix = slice_from_cstr(prefix),
                                          .delimiter = slice_from_cstr(delim),
                                          .key_marker = slice_from_cstr(km),
                                          .max_keys = max};
    if (after) {
        p.has_version_id_marker = true;
        if (!(after->version_flags & INDEX_VERSION_NULL))
            memcpy(p.version_id_marker, after->version_id, INDEX_VERSION_ID_LEN);
    }
    struct index_version_list_result r;
    ASSERT_EQ(index_version_list(ix, &p, a, &r), 0);
    return r;
}

int
main(void)
{
    char *dir = test_tmpdir_create("index-version");
    struct arena *a = arena_create(1 << 16);
    struct index_bucket b;
    enum index_versioning st;
    bool has_lock;
    static const uint8_t null_id[INDEX_VERSION_ID_LEN];

    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("b"), "o", 1, &b), 0);
    bid = b.id;
    ASSERT_EQ(index_versioning_get(ix, bid, &st, &has_lock), 0);
    ASSERT_EQ(st, INDEX_VERSIONING_OFF);

    /* An object from before versioning becomes the null version. */
    struct index_op p0 = put(a, "k", 1);
    ASSERT_UEQ(p0.result_version_flags, 0);
    ASSERT_EQ(index_versioning_put(ix, bid, INDEX_VERSIONING_ENABLED, false), 0);
    ASSERT_EQ(index_versioning_get(ix, bid, &st, &has_lock), 0);
    ASSERT_EQ(st, INDEX_VERSIONING_ENABLED);
    ASSERT_EQ(n_extents(), 1);
    struct index_object o;
    ASSERT_EQ(index_object_version_get(ix, bid, SLICE_LIT("k"), null_id, a, &o), 0);
    ASSERT_UEQ(o.etag[0], 1);
    ASSERT(o.version_flags & INDEX_VERSION_NULL);

    /* New versions, in order; the latest is what GET reads. */
    struct index_op p1 = put(a, "k", 2);
    struct index_op p2 = put(a, "k", 3);
    ASSERT(p1.result_version_flags & INDEX_VERSION_HAS_ID);
    ASSERT(memcmp(p1.result_version_id, p2.result_version_id, 16) < 0);
    ASSERT_UEQ(p2.n_freed, 0);
    ASSERT_UEQ(latest_tag(a, "k"), 3);
    ASSERT_EQ(n_extents(), 3);
    ASSERT_EQ(index_object_version_get(ix, bid, SLICE_LIT("k"), p1.result_version_id, a, &o), 0);
    ASSERT_UEQ(o.etag[0], 2);

    /* A delete marker hides the key; GET of the newest says marker. */
    struct index_op d1 = del(a, "k", NULL);
    ASSERT(d1.result_version_flags & INDEX_VERSION_MARKER);
    ASSERT_UEQ(latest_tag(a, "k"), 0);
    ASSERT_EQ(index_object_version_get(ix, bid, SLICE_LIT("k"), NULL, a, &o), 0);
    ASSERT(o.version_flags & INDEX_VERSION_MARKER);
    /* Removing the marker brings the last version back. */
    struct index_op d2 = del(a, "k", d1.result_version_id);
    ASSERT(d2.result_version_flags & INDEX_VERSION_MARKER);
    ASSERT_UEQ(latest_tag(a, "k"), 3);
    /* Removing the latest version frees its extent, promotes the next. */
    struct index_op d3 = del(a, "k", p2.result_version_id);
    ASSERT_UEQ(d3.n_freed, 1);
    ASSERT_UEQ(latest_tag(a, "k"), 2);
    ASSERT_EQ(n_extents(), 2);
    /* An absent version: nothing happens. */
    struct index_op d4 = del(a, "k", p2.result_version_id);
    ASSERT_UEQ(d4.result_version_flags, 0);
    ASSERT_UEQ(latest_tag(a, "k"), 2);

    /* Suspended: writes replace the null version. */
    ASSERT_EQ(index_versioning_put(ix, bid, INDEX_VERSIONING_SUSPENDED, false), 0);
    struct index_op s1 = put(a, "k", 4);
    ASSERT(s1.result_version_flags & INDEX_VERSION_NULL);
    ASSERT_UEQ(s1.n_freed, 1); /* the old null version's extent */
    struct index_op s2 = put(a, "k", 5);
    ASSERT_UEQ(s2.n_freed, 1);
    ASSERT_UEQ(latest_tag(a, "k"), 5);
    ASSERT_EQ(n_extents(), 2); /* p1's and the null version's */
    ASSERT_EQ(index_versioning_put(ix, bid, INDEX_VERSIONING_ENABLED, false), 0);

    /* Listing: key order, newest first, IsLatest, paging by markers. */
    put(a, "a/1", 6);
    put(a, "a/2", 7);
    put(a, "z", 8);
    put(a, "z", 9);
    del(a, "z", NULL);
    struct index_version_list_result r = list(a, "", "", "", NULL, 1000);
    ASSERT_UEQ(r.n_entries, 7);
    ASSERT(!r.is_truncated);
    ASSERT(slice_eq(r.entries[0].key, SLICE_LIT("a/1")) && r.entries[0].is_latest);
    ASSERT(slice_eq(r.entries[2].key, SLICE_LIT("k")) && r.entries[2].is_latest);
    ASSERT(r.entries[2].version_flags & INDEX_VERSION_NULL);
    ASSERT(slice_eq(r.entries[3].key, SLICE_LIT("k")) && !r.entries[3].is_latest);
    ASSERT(r.entries[4].version_flags & INDEX_VERSION_MARKER);
    ASSERT(r.entries[4].is_latest && !r.entries[5].is_latest && !r.entries[6].is_latest);
    ASSERT_UEQ(r.entries[5].etag[0], 9);
    /* Pages of 2 give the same sequence. */
    struct index_version_entry all[7];
    memcpy(all, r.entries, sizeof(all));
    const char *km = "";
    const struct index_version_entry *after = NULL;
    struct index_version_entry last;
    char kbuf[64];
    for (int i = 0; i < 7; i += 2) {
        r = list(a, "", "", km, after, 2);
        ASSERT_UEQ(r.n_entries, i + 2 <= 7 ? 2 : 1);
        for (uint32_t j = 0; j < r.n_entries; j++) {
            ASSERT(slice_eq(r.entries[j].key, all[i + j].key));
            ASSERT_MEM_EQ(r.entries[j].version_id, all[i + j].version_id, 16);
            ASSERT_EQ(r.entries[j].is_latest, all[i + j].is_latest);
        }
        ASSERT_EQ(r.is_truncated, i + 2 < 7);
        if (!r.is_truncated)
            break;
        last = r.entries[r.n_entries - 1];
        snprintf(kbuf, sizeof(kbuf), "%.*s", (int)last.key.len, last.key.ptr);
        km = kbuf;
        after = &last;
    }
    /* Delimiter: a/ rolls up into one common prefix. */
    r = list(a, "", "/", "", NULL, 1000);
    ASSERT_UEQ(r.n_entries, 6);
    ASSERT(r.entries[0].is_prefix && slice_eq(r.entries[0].key, SLICE_LIT("a/")));
    r = list(a, "a/", "", "", NULL, 1000);
    ASSERT_UEQ(r.n_entries, 2);
    /* A page of one prefix is truncated and resumes after it. */
    r = list(a, "", "/", "", NULL, 1);
    ASSERT(r.is_truncated && r.entries[0].is_prefix);
    r = list(a, "", "/", "a/", NULL, 1000);
    ASSERT_UEQ(r.n_entries, 5);

    /* A page costs O(page): many versions under a common prefix are
     * skipped with one seek, from the start and from a marker inside it. */
    for (int i = 0; i < 300; i++) {
        char k[32];
        snprintf(k, sizeof(k), "m/%04d", i);
        put(a, k, 11);
        put(a, k, 12);
    }
    uint64_t r0 = index__reads();
    r = list(a, "", "/", "k", NULL, 2);
    ASSERT(r.entries[0].is_prefix && slice_eq(r.entries[0].key, SLICE_LIT("m/")));
    ASSERT(slice_eq(r.entries[1].key, SLICE_LIT("z")));
    ASSERT(index__reads() - r0 < 40);
    r0 = index__reads();
    r = list(a, "", "/", "m/0150", NULL, 2);
    ASSERT(slice_eq(r.entries[0].key, SLICE_LIT("z")));
    ASSERT(index__reads() - r0 < 40);
    r0 = index__reads();
    r = list(a, "m/", "", "m/0200", NULL, 10);
    ASSERT_UEQ(r.n_entries, 10);
    ASSERT(slice_eq(r.entries[0].key, SLICE_LIT("m/0201")) && r.entries[0].is_latest);
    ASSERT(index__reads() - r0 < 40);

    /* Object Lock: a version under retention cannot be removed. */
    struct index_op l1 = put(a, "locked", 10);
    struct index_object *lk = arena_calloc(a, 1, sizeof(*lk));
    memset(lk->etag, 10, 16);
    lk->lock_mode = INDEX_LOCK_COMPLIANCE;
    lk->retain_until_ns = 5000;
    struct index_op sl = {.kind = INDEX_OP_SET_LOCK,
                          .bucket_id = bid,
                          .key = SLICE_LIT("locked"),
                          .object = lk,
                          .lock_what = INDEX_SET_RETENTION,
                          .now_ns = 100,
                          .arena = a};
    ASSERT_EQ(commit1(&sl), 0);
    struct index_op dl = {.kind = INDEX_OP_DELETE,
                          .bucket_id = bid,
                          .key = SLICE_LIT("locked"),
                          .has_version_id = true,
                          .now_ns = 200,
                          .bypass_governance = true,
                          .arena = a};
    memcpy(dl.version_id, l1.result_version_id, 16);
    ASSERT_EQ(commit1(&dl), -EACCES);
    /* COMPLIANCE cannot be shortened. */
    lk->retain_until_ns = 4000;
    sl.bypass_governance = true;
    ASSERT_EQ(commit1(&sl), -EACCES);
    lk->retain_until_ns = 6000;
    ASSERT_EQ(commit1(&sl), 0);
    /* Past the date it can go. */
    dl.now_ns = 7000;
    ASSERT_EQ(commit1(&dl), 0);
    ASSERT_UEQ(dl.n_freed, 1);

    /* A bucket with versions (even only markers) is not empty. */
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("b"), bid), -ENOTEMPTY);

    index_close(ix);
    arena_destroy(a);
    test_tmpdir_remove(dir);
    return 0;
}
