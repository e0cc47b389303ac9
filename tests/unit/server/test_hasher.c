/*
 * test_hasher.c: unit tests of server/hasher.c against OpenSSL's digests
 * (auth_checksum). Many streams at once (more than the lanes of two
 * threads, so plain-MD5 streams too) of lengths around the 64-byte block,
 * the 64 KiB slice and the 256 KiB chunk, written in random pieces from
 * interleaved writers, each with an extra checksum; the writer waits when
 * too far ahead (no pause callback) and a stream destroyed unfinished gives
 * its lane to the next one cleanly. A thread's lanes run together: it
 * waits for the lanes still without bytes unless a stream is urgent.
 */
#include "auth/auth.h"
#include "server/hasher.h"
#include "tests/lib/test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t
runs_of(struct hasher *h)
{
    uint64_t n_runs, n_lane_jobs;
    hasher_run_counts(h, &n_runs, &n_lane_jobs);
    return n_runs;
}

static void
finish_and_check(struct hasher_stream *s, const unsigned char *d, size_t len)
{
    uint8_t md5[16], ck[AUTH_CK_MAX_DIGEST], want[AUTH_CK_MAX_DIGEST];
    ASSERT_UEQ(hasher_stream_finish(s, md5, ck), 0);
    struct auth_checksum c;
    auth_checksum_init(&c, AUTH_CK_MD5);
    auth_checksum_update(&c, d, len);
    auth_checksum_final(&c, want);
    ASSERT_MEM_EQ(md5, want, 16);
    hasher_stream_destroy(s);
}

/* Eight lane streams of one thread, one 256 KiB chunk each: nothing runs
 * while a lane has no bytes (the pause only gives a thread that would run
 * early its chance; no figure depends on it), then every run has all 8
 * lanes busy. */
static void
test_lanes_wait_for_each_other(void)
{
    enum { CHUNK = 256 << 10 };
    struct hasher *h = hasher_create(1, 0);
    ASSERT(h != NULL);
    unsigned char *d = malloc(8 * CHUNK);
    for (size_t k = 0; k < 8 * (size_t)CHUNK; k++)
        d[k] = (unsigned char)next_rand();
    struct hasher_stream *s[8];
    for (int i = 0; i < 8; i++)
        s[i] = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    for (int i = 0; i < 7; i++)
        hasher_stream_write(s[i], d + (size_t)i * CHUNK, CHUNK);
    sleep_ms(50);
    ASSERT_UEQ(runs_of(h), 0);
    hasher_stream_write(s[7], d + 7 * (size_t)CHUNK, CHUNK);
    for (int i = 0; i < 8; i++)
        finish_and_check(s[i], d + (size_t)i * CHUNK, CHUNK);
    uint64_t n_runs, n_lane_jobs;
    hasher_run_counts(h, &n_runs, &n_lane_jobs);
    ASSERT_UEQ(n_runs, 4); /* 256 KiB in 64 KiB slices */
    ASSERT_UEQ(n_lane_jobs, 32);

    /* A lane that leaves lets the others run. */
    for (int i = 0; i < 8; i++)
        s[i] = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    for (int i = 0; i < 7; i++)
        hasher_stream_write(s[i], d + (size_t)i * CHUNK, CHUNK);
    sleep_ms(50);
    ASSERT_UEQ(runs_of(h), 4);
    hasher_stream_destroy(s[7]);
    for (int i = 0; i < 2000 && runs_of(h) < 8; i++)
        sleep_ms(5);
    ASSERT_UEQ(runs_of(h), 8); /* before any of them ended */
    for (int i = 0; i < 7; i++)
        finish_and_check(s[i], d + (size_t)i * CHUNK, CHUNK);
    free(d);
    hasher_destroy(h);
}

/* An idle lane never holds up the others for long: a stream with enough
 * queued is hashed without it, and a stream that ends is finished. */
static void
test_idle_lane_does_not_block(void)
{
    enum { LEN = 1 << 20 };
    struct hasher *h = hasher_create(1, 0);
    ASSERT(h != NULL);
    unsigned char *d = malloc(LEN);
    for (size_t k = 0; k < LEN; k++)
        d[k] = (unsigned char)next_rand();
    struct hasher_stream *idle = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    struct hasher_stream *a = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    struct hasher_stream *b = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    hasher_stream_write(a, d, LEN); /* 4 chunks queued: urgent */
    for (int i = 0; i < 2000 && runs_of(h) == 0; i++)
        sleep_ms(5);
    ASSERT(runs_of(h) > 0);
    hasher_stream_write(b, d, 1000); /* less than a chunk: only its end */
    finish_and_check(b, d, 1000);
    finish_and_check(a, d, LEN);
    hasher_stream_destroy(idle);
    free(d);
    hasher_destroy(h);
}

/* A finished stream gives its lane to the next one before it is destroyed
 * (its upload still commits meanwhile). */
static void
test_finished_lane_is_reused(void)
{
    enum { LEN = 5000 };
    struct hasher *h = hasher_create(1, 0);
    ASSERT(h != NULL);
    unsigned char *d = malloc(LEN);
    for (size_t k = 0; k < LEN; k++)
        d[k] = (unsigned char)next_rand();
    struct hasher_stream *s[9];
    for (int i = 0; i < 8; i++)
        s[i] = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    hasher_stream_write(s[0], d, LEN);
    uint8_t md5[16], ck[AUTH_CK_MAX_DIGEST];
    hasher_stream_finish(s[0], md5, ck);
    s[8] = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    uint64_t n_lane, n_plain, n_pauses;
    hasher_counts(h, &n_lane, &n_plain, &n_pauses);
    ASSERT_UEQ(n_lane, 9);
    ASSERT_UEQ(n_plain, 0);
    for (int i = 1; i < 9; i++) {
        hasher_stream_write(s[i], d, (size_t)i * 500);
        finish_and_check(s[i], d, (size_t)i * 500);
    }
    finish_and_check(s[0], d, LEN); /* a second finish gives the same digest */
    free(d);
    hasher_destroy(h);
}

int
main(void)
{
    test_many_streams();
    test_abandoned();
    test_lanes_wait_for_each_other();
    test_idle_lane_does_not_block();
    test_finished_lane_is_reused();
    return 0;
}
