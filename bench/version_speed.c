/*
 * version_speed.c: builds a versioned bucket straight through the index
 * API and times ListObjectVersions in the index. Usage:
 *   version_speed DIR [KEYS [VERSIONS [RUNS]]]   (100000 keys x 10, 5 runs)
 * creates the index in DIR (a shardstore data dir: DIR/index) with bucket
 * "versions", versioning Enabled, KEYS keys of VERSIONS 0-byte versions
 * each (every 7th key's newest version a delete marker), committed in
 * batches of 1000 ops without fsync, then lists every version in pages of
 * 1000 RUNS times and prints one line per run:
 *   RESULT op=list_versions entries=N secs=S entries_per_s=X
 * Before the listing it times the index's share of a PUT, in a second
 * index (DIR/put-index): RUNS rounds of 50,000 overwrites of 5000 keys
 * (batches of 16) in an unversioned and a versioned bucket, the 16 keys of
 * a batch consecutive or scattered over the 5000 (as concurrent clients
 * make them): RESULT op=index_put bucket=... keys=... ops_per_s=X
 * bytes_per_put=B, B being what LMDB wrote (dirty pages, /proc/self/io).
 * With VERSION_SPEED_SYNC=1 in the environment that index is durable (an
 * fdatasync per commit, as in shardstore) and a round is 5000 PUTs; the
 * lines add sync=1 and commit_ms, the mean time of one commit of 16.
 * A shardstore started on DIR serves the same bucket (bench/versioning.sh).
 */
#include "index/index.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Bytes this process has written so far (wchar of /proc/self/io), or 0. */
static long long
written_bytes(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    long long v = 0;
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "wchar:", 6) == 0)
            v = atoll(line + 6);
    fclose(f);
    return v;
}

#define BATCH 1000
#define PAGE 1000

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: version_speed DIR [KEYS [VERSIONS [RUNS]]]\n");
        return 2;
    }
    uint64_t n_keys = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
    uint64_t n_versions = argc > 3 ? strtoull(argv[3], NULL, 10) : 10;
    int runs = argc > 4 ? atoi(argv[4]) : 5;
    char *dir = arena_sprintf(arena_create(4096), "%s/index", argv[1]);
    struct index *ix = NULL;
    struct index_bucket b;
    struct arena *a = arena_create(1 << 20);
    struct index_op *ops = xcalloc(BATCH, sizeof(*ops));
    struct index_object o = {.size = 0};
    int rc = 1;

    mkdir(argv[1], 0755);
    mkdir(dir, 0755);
    if (index_open(&ix, dir, 8ULL << 30, true) != 0 ||
        index_bucket_create(ix, SLICE_LIT("versions"), "", 0, &b) != 0 ||
        index_versioning_put(ix, b.id, INDEX_VERSIONING_ENABLED, false) != 0) {
        fprintf(stderr, "cannot create the bucket in %s\n", dir);
        goto out;
    }
    int64_t t0 = clock_mono_ns();
    uint64_t total = n_keys * n_versions, done = 0;
    while (done < total) {
        arena_clear(a);
        size_t n = 0;
        for (; n < BATCH && done < total; n++, done++) {
            /* Version v of every key, then version v + 1: each commit
             * touches 1000 keys, as concurrent checkpoint writers would. */
            uint64_t k = done % n_keys, v = done / n_keys;
            char *key =
                arena_sprintf(a, "ckpt/run-%03u/step-%08u.pt", (unsigned)(k % 100), (unsigned)k);
            bool is_marker = v == n_versions - 1 && k % 7 == 0;
            ops[n] = (struct index_op){.kind = is_marker ? INDEX_OP_DELETE : INDEX_OP_PUT,
                                       .bucket_id = b.id,
                                       .key = slice_from_cstr(key),
                                       .object = is_marker ? NULL : &o,
                                       .arena = a};
        }
        if (index_commit(ix, ops, n) != 0) {
            fprintf(stderr, "commit failed\n");
            goto out;
        }
    }
    printf("LOAD versions=%" PRIu64 " keys=%" PRIu64 " secs=%.2f\n", total, n_keys,
           (double)(clock_mono_ns() - t0) / 1e9);

    /* The index's share of a PUT: batches of 16 overwrites of 5000 keys
     * (as group commit makes them), unversioned and versioned buckets
     * alternated, without fsync. */
    /* In an index of its own (DIR/put-index): its made-up extents must not
     * reach the data dir's index, which a shardstore opens afterwards. */
    struct index_bucket bu[2], bv[2];
    struct index_extent ext = {.volume = 0, .offset = 0, .len = 4096};
    struct index_object po = {.size = 4096, .n_extents = 1, .extents = &ext};
    struct index *pix = NULL;
    char *pdir = arena_sprintf(arena_create(4096), "%s/put-index", argv[1]);
    bool is_sync = getenv("VERSION_SPEED_SYNC") != NULL;
    int n_put = is_sync ? 5000 : 50000;
    mkdir(pdir, 0755);
    if (index_open(&pix, pdir, 1ULL << 30, !is_sync) != 0 ||
        index_bucket_create(pix, SLICE_LIT("put-unver"), "", 0, &bu[0]) != 0 ||
        index_bucket_create(pix, SLICE_LIT("put-ver"), "", 0, &bv[0]) != 0 ||
        index_bucket_create(pix, SLICE_LIT("put-unver-scattered"), "", 0, &bu[1]) != 0 ||
        index_bucket_create(pix, SLICE_LIT("put-ver-scattered"), "", 0, &bv[1]) != 0 ||
        index_versioning_put(pix, bv[0].id, INDEX_VERSIONING_ENABLED, false) != 0 ||
        index_versioning_put(pix, bv[1].id, INDEX_VERSIONING_ENABLED, false) != 0) {
        index_close(pix);
        goto out;
    }
    for (int r = 0; r < runs; r++) {
        for (int which = 0; which < 4; which++) {
            bool is_scattered = which >= 2, is_versioned = which % 2;
            uint64_t bid = is_versioned ? bv[is_scattered].id : bu[is_scattered].id;
            long long w0 = written_bytes();
            t0 = clock_mono_ns();
            for (int i = 0; i < n_put; i += 16) {
                arena_clear(a);
                for (int j = 0; j < 16; j++) {
                    /* Scattered: 7919 is prime to 5000, so every key
                     * still comes up once per 5000 PUTs. */
                    int k = is_scattered ? (int)((int64_t)(i + j) * 7919 % 5000) : (i + j) % 5000;
                    char *key = arena_sprintf(a, "p/%010d", k);
                    ops[j] = (struct index_op){.kind = INDEX_OP_PUT,
                                               .bucket_id = bid,
                                               .key = slice_from_cstr(key),
                                               .object = &po,
                                               .arena = a};
                }
                if (index_commit(pix, ops, 16) != 0) {
                    index_close(pix);
                    goto out;
                }
            }
            double secs = (double)(clock_mono_ns() - t0) / 1e9;
            printf("RESULT op=index_put bucket=%s keys=%s ops=%d secs=%.3f ops_per_s=%.0f "
                   "bytes_per_put=%.0f%s",
                   is_versioned ? "versioned" : "unversioned",
                   is_scattered ? "scattered" : "consecutive", n_put, secs, n_put / secs,
                   (double)(written_bytes() - w0) / n_put, is_sync ? " sync=1" : "");
            if (is_sync)
                printf(" commit_ms=%.3f", secs * 1e3 / ((n_put + 15) / 16));
            printf("\n");
            fflush(stdout);
        }
    }
    index_close(pix);

    for (int r = 0; r < runs; r++) {
        struct index_version_list_params p = {.bucket_id = b.id, .max_keys = PAGE};
        struct index_version_list_result res;
        char *km = xmalloc(INDEX_MAX_KEY + 1);
        uint64_t n_entries = 0;
        t0 = clock_mono_ns();
        for (;;) {
            arena_clear(a);
            if (index_version_list(ix, &p, a, &res) != 0) {
                fprintf(stderr, "list failed\n");
                free(km);
                goto out;
            }
            n_entries += res.n_entries;
            if (!res.is_truncated)
                break;
            memcpy(km, res.next_key_marker.ptr, res.next_key_marker.len);
            p.key_marker = (struct slice){km, res.next_key_marker.len};
            p.has_version_id_marker = true;
            memcpy(p.version_id_marker, res.next_version_id, INDEX_VERSION_ID_LEN);
        }
        double secs = (double)(clock_mono_ns() - t0) / 1e9;
        printf("RESULT op=list_versions entries=%" PRIu64 " secs=%.3f entries_per_s=%.0f\n",
               n_entries, secs, (double)n_entries / secs);
        free(km);
        if (n_entries != total) {
            fprintf(stderr, "listed %" PRIu64 " of %" PRIu64 " versions\n", n_entries, total);
            goto out;
        }
    }
    rc = 0;

out:
    index_close(ix);
    free(ops);
    arena_destroy(a);
    return rc;
}
