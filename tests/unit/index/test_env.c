/*
 * test_env.c: data.mdb is kept written with zeros past LMDB's last page
 * (index__file_reserve, env.c), so that commits overwrite blocks instead
 * of appending: after a commit the file reaches at least half a step past
 * the used size, the zeros never reach past the map size, an index that
 * grows through several steps reads every record back after a reopen (LMDB
 * takes a file longer than its pages), and a full map still reports
 * -ENOSPC.
 */
#include "index/index.h"
#include "index/index_int.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>
#include <sys/stat.h>

#define N_OBJECTS 6000
#define N_BATCH 20

static uint8_t blob[1000];

static uint64_t
file_size(const char *dir)
{
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/data.mdb", dir);
    ASSERT_EQ(stat(path, &sb), 0);
    return (uint64_t)sb.st_size;
}

static uint64_t
used_size(struct index *ix)
{
    struct index_stats st;
    ASSERT_EQ(index_stats_get(ix, &st), 0);
    return st.used_bytes;
}

/* Commits, in one transaction, PUTs of keys 'first' to 'first' + 'n' - 1
 * ("k%06d"), objects of 'blob' with ETag bytes i & 0xff. Returns the
 * commit's return code or the first op's result. */
static int
put(struct index *ix, uint64_t bid, struct arena *a, int first, int n)
{
    struct index_object *o = arena_calloc(a, (size_t)n, sizeof(*o));
    struct index_op *ops = arena_calloc(a, (size_t)n, sizeof(*ops));
    for (int i = 0; i < n; i++) {
        o[i] = (struct index_object){
            .size = sizeof(blob), .inline_data = blob, .inline_len = sizeof(blob)};
        memset(o[i].etag, (first + i) & 0xff, 16);
        ops[i] = (struct index_op){.kind = INDEX_OP_PUT,
                                   .bucket_id = bid,
                                   .key = slice_from_cstr(arena_sprintf(a, "k%06d", first + i)),
                                   .object = &o[i],
                                   .arena = a};
    }
    int rc = index_commit(ix, ops, (size_t)n);
    for (int i = 0; i < n && rc == 0; i++)
        rc = ops[i].result;
    return rc;
}

/* A growing index: zeros past the last page after each commit, several
 * steps taken, every record back after a reopen in durable mode. */
static void
test_grow(struct arena *a)
{
    char *dir = test_tmpdir_create("index-env");
    struct index *ix;
    struct index_bucket b;
    uint64_t map = 64 << 20, first_end = 0;

    ASSERT_EQ(index_open(&ix, dir, map, false), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("b"), "", 1, &b), 0);
    for (int i = 0; i < N_OBJECTS; i += N_BATCH) {
        uint64_t used_before = used_size(ix);
        ASSERT_EQ(put(ix, b.id, a, i, N_BATCH), 0);
        uint64_t end = file_size(dir);
        /* The zeros were written before this commit's pages. */
        ASSERT(end >= used_before + INDEX_RESERVE_MIN / 2);
        ASSERT(end >= used_size(ix));
        ASSERT(end <= map);
        if (i == 0)
            first_end = end;
        arena_clear(a);
    }
    /* ~6 MB of records: the file went through more than one step. */
    ASSERT(used_size(ix) > 4u * INDEX_RESERVE_MIN);
    ASSERT(file_size(dir) > first_end);
    index_close(ix);

    ASSERT_EQ(index_open(&ix, dir, map, false), 0);
    for (int i = 0; i < N_OBJECTS; i++) {
        struct index_object got;
        ASSERT_EQ(
            index_object_get(ix, b.id, slice_from_cstr(arena_sprintf(a, "k%06d", i)), a, &got), 0);
        ASSERT_UEQ(got.inline_len, sizeof(blob));
        ASSERT_UEQ(got.etag[0], (uint8_t)(i & 0xff));
        arena_clear(a);
    }
    ASSERT_EQ(put(ix, b.id, a, N_OBJECTS, 1), 0);
    index_close(ix);
    test_tmpdir_remove(dir);
}

/* A map smaller than a step: the zeros stop at the map size, and filling
 * the map still ends in -ENOSPC. */
static void
test_small_map(struct arena *a)
{
    char *dir = test_tmpdir_create("index-env-small");
    struct index *ix;
    struct index_bucket b;
    uint64_t map = 256 << 10;
    int rc = 0, i;

    ASSERT_EQ(index_open(&ix, dir, map, true), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("b"), "", 1, &b), 0);
    for (i = 0; i < 10000 && rc == 0; i++) {
        rc = put(ix, b.id, a, i, 1);
        ASSERT(file_size(dir) <= map);
        arena_clear(a);
    }
    ASSERT_EQ(rc, -ENOSPC);
    ASSERT(i > 1);
    ASSERT_UEQ(file_size(dir), map);
    index_close(ix);
    test_tmpdir_remove(dir);
}

int
main(void)
{
    struct arena *a = arena_create(1 << 16);
    memset(blob, 'x', sizeof(blob));
    test_grow(a);
    test_small_map(a);
    arena_destroy(a);
    return 0;
}
