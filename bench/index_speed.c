/*
 * index_speed.c: index throughput. Inserts 200,000 keys in batches of 256
 * ops per index_commit (durable commits unless SHARD_NOSYNC=1), then lists
 * them all in pages of 1000 keys, and prints keys/s for both. Prints,
 * asserts nothing but success. Usage: index_speed [DIR] (default: a temp
 * dir under $TMPDIR, removed afterwards).
 */
#include "index/index.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define N_KEYS 200000
#define BATCH 256
#define PAGE 1000

int
main(int argc, char **argv)
{
    char *tmp = argc > 1 ? NULL : test_tmpdir_create("index-speed");
    const char *dir = argc > 1 ? argv[1] : tmp;
    const char *nosync_env = getenv("SHARD_NOSYNC");
    bool is_nosync = nosync_env && *nosync_env == '1';
    struct index *ix = NULL;
    struct index_bucket b;
    struct arena *a = arena_create(1 << 20);
    struct index_op *ops = xcalloc(BATCH, sizeof(*ops));
    struct index_extent ext = {.volume = 1, .offset = 0, .len = 65536};
    struct index_object o = {.size = 65536, .n_extents = 1, .extents = &ext};
    int rc = 1;

    if (index_open(&ix, dir, 4ULL << 30, is_nosync) != 0 ||
        index_bucket_create(ix, SLICE_LIT("bench"), "", 0, &b) != 0) {
        fprintf(stderr, "cannot open the index in %s\n", dir);
        goto out;
    }

    int64_t t0 = clock_mono_ns();
    for (int i = 0; i < N_KEYS; i += BATCH) {
        arena_clear(a);
        int n = MIN(BATCH, N_KEYS - i);
        for (int j = 0; j < n; j++) {
            /* Keys shaped like dataset shards, inserted in a scattered order. */
            unsigned k = (unsigned)((uint64_t)(i + j) * 2654435761u % N_KEYS);
            char *key = arena_sprintf(a, "train/shard-%03u/sample-%08u.tar", k % 500, k);
            ops[j] = (struct index_op){.kind = INDEX_OP_PUT,
                                       .bucket_id = b.id,
                                       .key = slice_from_cstr(key),
                                       .object = &o,
                                       .arena = a};
        }
        if (index_commit(ix, ops, (size_t)n) != 0) {
            fprintf(stderr, "commit failed\n");
            goto out;
        }
    }
    double put_s = (double)(clock_mono_ns() - t0) / 1e9;
    printf("insert: %d keys in %d-op commits (%s): %.2f s, %.0f keys/s\n", N_KEYS, BATCH,
           is_nosync ? "nosync" : "durable", put_s, N_KEYS / put_s);

    t0 = clock_mono_ns();
    struct index_list_params p = {.bucket_id = b.id, .max_keys = PAGE};
    struct index_list_result r;
    char marker[INDEX_MAX_KEY];
    uint64_t listed = 0;
    do {
        arena_clear(a);
        if (index_object_list(ix, &p, a, &r) != 0) {
            fprintf(stderr, "list failed\n");
            goto out;
        }
        listed += r.n_entries;
        memcpy(marker, r.next_marker.ptr, r.next_marker.len);
        p.start_after = (struct slice){marker, r.next_marker.len};
    } while (r.is_truncated);
    double list_s = (double)(clock_mono_ns() - t0) / 1e9;
    printf("list: %llu keys in %d-key pages: %.3f s, %.0f keys/s\n", (unsigned long long)listed,
           PAGE, list_s, (double)listed / list_s);

    t0 = clock_mono_ns();
    p = (struct index_list_params){.bucket_id = b.id,
                                   .prefix = SLICE_LIT("train/"),
                                   .delimiter = SLICE_LIT("/"),
                                   .max_keys = PAGE};
    if (index_object_list(ix, &p, a, &r) != 0)
        goto out;
    printf("delimiter list of %u common prefixes over %d keys: %.3f ms\n", r.n_entries, N_KEYS,
           (double)(clock_mono_ns() - t0) / 1e6);

    t0 = clock_mono_ns();
    struct index_object got;
    for (int i = 0; i < N_KEYS; i += 7) {
        arena_clear(a);
        char *key =
            arena_sprintf(a, "train/shard-%03u/sample-%08u.tar", (unsigned)i % 500, (unsigned)i);
        if (index_object_get(ix, b.id, slice_from_cstr(key), a, &got) != 0) {
            fprintf(stderr, "get %s failed\n", key);
            goto out;
        }
    }
    double get_s = (double)(clock_mono_ns() - t0) / 1e9;
    printf("get: %.0f lookups/s\n", (N_KEYS / 7 + 1) / get_s);
    rc = (listed == N_KEYS) ? 0 : 1;

out:
    index_close(ix);
    free(ops);
    arena_destroy(a);
    test_tmpdir_remove(tmp);
    return rc;
}
