/*
 * test_hasher.c: unit tests of server/hasher.c against OpenSSL's digests
 * (auth_checksum). Many streams at once (more than the lanes of two
 * threads, so plain-MD5 streams too) of lengths around the 64-byte block,
 * the 64 KiB slice and the 256 KiB chunk, written in random pieces from
 * interleaved writers, each with an extra checksum; the writer waits when
 * too far ahead (no pause callback) and a stream destroyed unfinished gives
 * its lane to the next one cleanly.
 */
#include "auth/auth.h"
#include "server/hasher.h"
#include "tests/lib/test.h"

#include <stdlib.h>
#include <string.h>

#define N_STREAMS 24

static const size_t lens[] = {
    0,       1,      63,      64,      65,          127,     128,
    4096,    65535,  65536,   65537,   262143,      262144,  262145,
    300001,  524288, 1048576, 1048639, 2097152 + 5, 3 << 20, (3 << 20) + 63,
    4194304, 100,    777777,
};

static uint64_t rng = 88172645463325252ull;

static uint64_t
next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const enum auth_checksum_algo algos[] = {AUTH_CK_NONE, AUTH_CK_CRC32, AUTH_CK_CRC32C,
                                                AUTH_CK_CRC64NVME, AUTH_CK_SHA256};

static void
test_many_streams(void)
{
    struct hasher *h = hasher_create(2, 0);
    ASSERT(h != NULL);
    struct hasher_stream *s[N_STREAMS];
    unsigned char *data[N_STREAMS];
    size_t off[N_STREAMS];
    for (int i = 0; i < N_STREAMS; i++) {
        data[i] = malloc(lens[i] + 1);
        for (size_t k = 0; k < lens[i]; k++)
            data[i][k] = (unsigned char)next_rand();
        off[i] = 0;
        s[i] = hasher_stream_create(h, algos[i % 5], NULL, NULL, NULL);
        ASSERT(s[i] != NULL);
    }
    /* Interleaved writes of random sizes until every stream is written. */
    for (bool is_left = true; is_left;) {
        is_left = false;
        for (int i = 0; i < N_STREAMS; i++) {
            size_t rem = lens[i] - off[i];
            if (!rem)
                continue;
            size_t want = (size_t)(next_rand() % 200000) + 1;
            size_t n = MIN(rem, want);
            hasher_stream_write(s[i], data[i] + off[i], n);
            off[i] += n;
            is_left = true;
        }
    }
    for (int i = 0; i < N_STREAMS; i++) {
        uint8_t md5[16], ck[AUTH_CK_MAX_DIGEST], want[AUTH_CK_MAX_DIGEST];
        size_t n = hasher_stream_finish(s[i], md5, ck);
        struct auth_checksum c;
        auth_checksum_init(&c, AUTH_CK_MD5);
        auth_checksum_update(&c, data[i], lens[i]);
        auth_checksum_final(&c, want);
        ASSERT_MEM_EQ(md5, want, 16);
        if (algos[i % 5] == AUTH_CK_NONE) {
            ASSERT_UEQ(n, 0);
        } else {
            auth_checksum_init(&c, algos[i % 5]);
            auth_checksum_update(&c, data[i], lens[i]);
            size_t wn = auth_checksum_final(&c, want);
            ASSERT_UEQ(n, wn);
            ASSERT_MEM_EQ(ck, want, wn);
        }
        hasher_stream_destroy(s[i]);
        free(data[i]);
    }
    uint64_t n_lane, n_plain, n_pauses;
    hasher_counts(h, &n_lane, &n_plain, &n_pauses);
    ASSERT_UEQ(n_lane, 16); /* 2 threads x 8 lanes */
    ASSERT_UEQ(n_plain, N_STREAMS - 16);
    ASSERT_UEQ(n_pauses, 0); /* no pause callback: the writers waited */
    uint64_t n_runs, n_lane_jobs;
    hasher_run_counts(h, &n_runs, &n_lane_jobs);
    ASSERT(n_runs > 0);
    ASSERT(n_lane_jobs >= n_runs);     /* every run has a busy lane ... */
    ASSERT(n_lane_jobs <= 8 * n_runs); /* ... and at most 8 */
    hasher_destroy(h);
}

/* A stream abandoned halfway leaves its lane; the next stream there starts
 * afresh. */
static void
test_abandoned(void)
{
    struct hasher *h = hasher_create(1, 0);
    ASSERT(h != NULL);
    size_t len = 1 << 20;
    unsigned char *d = malloc(len);
    for (size_t k = 0; k < len; k++)
        d[k] = (unsigned char)next_rand();
    for (int round = 0; round < 3; round++) {
        struct hasher_stream *a = hasher_stream_create(h, AUTH_CK_CRC32, NULL, NULL, NULL);
        hasher_stream_write(a, d, len / 2 + 3);
        hasher_stream_destroy(a);
    }
    struct hasher_stream *b = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    hasher_stream_write(b, d, len);
    uint8_t md5[16], ck[AUTH_CK_MAX_DIGEST], want[AUTH_CK_MAX_DIGEST];
    ASSERT_UEQ(hasher_stream_finish(b, md5, ck), 0);
    struct auth_checksum c;
    auth_checksum_init(&c, AUTH_CK_MD5);
    auth_checksum_update(&c, d, len);
    auth_checksum_final(&c, want);
    ASSERT_MEM_EQ(md5, want, 16);
    hasher_stream_destroy(b);
    free(d);
    hasher_destroy(h);
}

int
main(void)
{
    test_many_streams();
    test_abandoned();
    return 0;
}
