/*
 * test_hasher.c: unit tests of server/hasher.c against OpenSSL's digests
 * (auth_checksum). Many streams at once (more than the lanes of two
 * threads, so plain-MD5 streams too) of lengths around the 64-byte block,
 * the 64 KiB slice and the 256 KiB chunk, written in random pieces from
 * interleaved writers, each with an extra checksum; the writer waits when
 * too far ahead (no pause callback) and a stream destroyed unfinished gives
 * its lane to the next one cleanly. A thread's lanes run together: it
 * waits for the lanes still without bytes unless a stream is urgent.
 * Borrowing streams (hasher_stream_lend): writers with 4 buffers of their
 * own that scribble over each buffer as soon as it is released, so a
 * release before the last read shows as a wrong digest; the writer pause;
 * a hurried stream is hashed though its lane neighbour is idle; a stream
 * destroyed with buffers lent releases each once.
 */
#include "auth/auth.h"
#include "server/hasher.h"
#include "tests/lib/test.h"

#include <pthread.h>
#include <stdatomic.h>
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

/* 'len' bytes of next_rand() (one more allocated, so 0 is a real buffer). */
static unsigned char *
random_bytes(size_t len)
{
    unsigned char *d = malloc(len + 1);
    ASSERT(d != NULL);
    for (size_t k = 0; k < len; k++)
        d[k] = (unsigned char)next_rand();
    return d;
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
        data[i] = random_bytes(lens[i]);
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
    unsigned char *d = random_bytes(len);
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
    unsigned char *d = random_bytes(8 * (size_t)CHUNK);
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
    unsigned char *d = random_bytes(LEN);
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
    unsigned char *d = random_bytes(LEN);
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

/* ---- borrowing streams ---------------------------------------------------- */

#define LEND_BUF_LEN (512u << 10)
#define LEND_BUFS 4

/* A writer with LEND_BUFS buffers of its own, like a storage writer: fills
 * one, lends it, takes the next once it is back. A released buffer is
 * scribbled over at once. */
struct lend_buf {
    struct lend_writer *w;
    unsigned char *data;
    bool is_lent; /* lw->lock */
};

struct lend_writer {
    pthread_mutex_t lock;
    pthread_cond_t back;
    struct lend_buf bufs[LEND_BUFS];
    unsigned next;
    unsigned n_released;
    unsigned n_paused;
    unsigned n_resumed;
    struct hasher_stream *s;
};

static void
lend_release(void *arg)
{
    struct lend_buf *b = arg;
    struct lend_writer *w = b->w;
    pthread_mutex_lock(&w->lock);
    ASSERT(b->is_lent); /* exactly once */
    memset(b->data, 0xA5, LEND_BUF_LEN);
    b->is_lent = false;
    w->n_released++;
    pthread_cond_broadcast(&w->back);
    pthread_mutex_unlock(&w->lock);
}

static void
lend_pause(void *arg)
{
    struct lend_writer *w = arg;
    w->n_paused++; /* under the stream's lock */
}

static void
lend_resume(void *arg)
{
    struct lend_writer *w = arg;
    w->n_resumed++;
}

static void
lend_writer_init(struct lend_writer *w, struct hasher *h, enum auth_checksum_algo ck,
                 bool has_pause)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->back, NULL);
    for (int i = 0; i < LEND_BUFS; i++) {
        w->bufs[i].w = w;
        w->bufs[i].data = malloc(LEND_BUF_LEN);
    }
    w->s = hasher_stream_create(h, ck, has_pause ? lend_pause : NULL, lend_resume, w);
    ASSERT(w->s != NULL);
    hasher_stream_borrow(w->s, LEND_BUFS);
}

/* Lends 'len' bytes of 'src' (a multiple of 64 unless 'is_last') in the
 * next buffer, waiting for it to be back first (hurrying the stream). */
static void
lend_writer_put(struct lend_writer *w, const unsigned char *src, size_t len, bool is_last)
{
    struct lend_buf *b = &w->bufs[w->next];
    w->next = (w->next + 1) % LEND_BUFS;
    pthread_mutex_lock(&w->lock);
    bool is_lent = b->is_lent;
    pthread_mutex_unlock(&w->lock);
    if (is_lent)
        hasher_stream_hurry(w->s);
    pthread_mutex_lock(&w->lock);
    while (b->is_lent)
        pthread_cond_wait(&w->back, &w->lock);
    memcpy(b->data, src, len);
    b->is_lent = true;
    pthread_mutex_unlock(&w->lock);
    hasher_stream_lend(w->s, b->data, len, is_last, lend_release, b);
}

static void
lend_writer_cleanup(struct lend_writer *w)
{
    hasher_stream_destroy(w->s);
    for (int i = 0; i < LEND_BUFS; i++) {
        ASSERT(!w->bufs[i].is_lent);
        free(w->bufs[i].data);
    }
    pthread_cond_destroy(&w->back);
    pthread_mutex_destroy(&w->lock);
}

static void
check_digests(struct hasher_stream *s, enum auth_checksum_algo algo, const unsigned char *d,
              size_t len)
{
    uint8_t md5[16], ck[AUTH_CK_MAX_DIGEST], want[AUTH_CK_MAX_DIGEST];
    size_t n = hasher_stream_finish(s, md5, ck);
    struct auth_checksum c;
    auth_checksum_init(&c, AUTH_CK_MD5);
    auth_checksum_update(&c, d, len);
    auth_checksum_final(&c, want);
    ASSERT_MEM_EQ(md5, want, 16);
    if (algo == AUTH_CK_NONE) {
        ASSERT_UEQ(n, 0);
    } else {
        auth_checksum_init(&c, algo);
        auth_checksum_update(&c, d, len);
        size_t wn = auth_checksum_final(&c, want);
        ASSERT_UEQ(n, wn);
        ASSERT_MEM_EQ(ck, want, wn);
    }
}

/* Many borrowing streams at once (more than the lanes of two threads), of
 * lengths around the block, the slice and the buffer, lent a buffer at a
 * time in turn; the last buffer of each is partial (or empty). Each digest
 * must be the data's: a buffer released before its last read is scribbled
 * over, and its stream's digest goes wrong. */
static void
test_lent_streams(bool has_pause)
{
    /* A table of lengths, kept compact. */
    /* clang-format off */
    static const size_t lent_lens[] = {
        0,           64,          65,          4096,      65536 + 1, LEND_BUF_LEN - 1,
        LEND_BUF_LEN, LEND_BUF_LEN + 1, 3 * LEND_BUF_LEN, 5 * LEND_BUF_LEN + 63, 9 << 20, 777777,
        300001,      2 << 20,     (2 << 20) + 1, 1000,    6 << 20,   4 * LEND_BUF_LEN + 4096,
        128,         131072,
    };
    /* clang-format on */
    enum { N = ARRAY_LEN(lent_lens) };
    struct hasher *h = hasher_create(2, 0);
    ASSERT(h != NULL);
    struct lend_writer *w = calloc(N, sizeof(*w));
    unsigned char *data[N];
    size_t off[N];
    for (int i = 0; i < N; i++) {
        data[i] = random_bytes(lent_lens[i]);
        off[i] = 0;
        lend_writer_init(&w[i], h, algos[i % 5], has_pause);
    }
    for (bool is_left = true; is_left;) {
        is_left = false;
        for (int i = 0; i < N; i++) {
            if (off[i] > lent_lens[i])
                continue; /* ended */
            size_t rem = lent_lens[i] - off[i];
            if (rem > LEND_BUF_LEN) {
                lend_writer_put(&w[i], data[i] + off[i], LEND_BUF_LEN, false);
                off[i] += LEND_BUF_LEN;
            } else if (rem == LEND_BUF_LEN && (next_rand() & 1)) {
                /* a full last buffer, then an empty end (finish's) */
                lend_writer_put(&w[i], data[i] + off[i], LEND_BUF_LEN, false);
                hasher_stream_lend(w[i].s, NULL, 0, true, NULL, NULL);
                off[i] = lent_lens[i] + 1;
            } else {
                lend_writer_put(&w[i], data[i] + off[i], rem, true);
                off[i] = lent_lens[i] + 1;
            }
            is_left = true;
        }
    }
    for (int i = 0; i < N; i++) {
        check_digests(w[i].s, algos[i % 5], data[i], lent_lens[i]);
        /* every pause but the stream's last one was resumed */
        ASSERT(w[i].n_paused >= w[i].n_resumed && w[i].n_paused <= w[i].n_resumed + 1);
        lend_writer_cleanup(&w[i]);
        free(data[i]);
    }
    uint64_t n_lane, n_plain, n_pauses;
    hasher_counts(h, &n_lane, &n_plain, &n_pauses);
    ASSERT_UEQ(n_lane, 16);
    ASSERT_UEQ(n_plain, N - 16);
    if (!has_pause)
        ASSERT_UEQ(n_pauses, 0);
    free(w);
    hasher_destroy(h);
}

/* A writer of a borrowing stream is paused once it has lent all but one of
 * its buffers, and resumed when one is back. */
static void
test_lent_pause(void)
{
    struct hasher *h = hasher_create(1, 20); /* 20 ms per run: it cannot catch up */
    ASSERT(h != NULL);
    unsigned char *d = random_bytes(3 * LEND_BUF_LEN);
    struct hasher_stream *idle = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    struct lend_writer w;
    lend_writer_init(&w, h, AUTH_CK_NONE, true);
    lend_writer_put(&w, d, LEND_BUF_LEN, false);
    lend_writer_put(&w, d + LEND_BUF_LEN, LEND_BUF_LEN, false);
    pthread_mutex_lock(&w.lock);
    ASSERT_UEQ(w.n_paused, 0);
    pthread_mutex_unlock(&w.lock);
    lend_writer_put(&w, d + 2 * LEND_BUF_LEN, LEND_BUF_LEN, false);
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&w.lock);
        unsigned n_resumed = w.n_resumed;
        pthread_mutex_unlock(&w.lock);
        if (n_resumed)
            break;
        sleep_ms(5);
    }
    pthread_mutex_lock(&w.lock);
    ASSERT_UEQ(w.n_paused, 1);
    ASSERT_UEQ(w.n_resumed, 1); /* 2+ queued is urgent, idle neighbour or not */
    pthread_mutex_unlock(&w.lock);
    hasher_stream_lend(w.s, NULL, 0, true, NULL, NULL);
    check_digests(w.s, AUTH_CK_NONE, d, 3 * LEND_BUF_LEN);
    lend_writer_cleanup(&w);
    hasher_stream_destroy(idle);
    free(d);
    hasher_destroy(h);
}

/* One buffer lent, below the urgent level, beside an idle lane stream: the
 * thread waits for the neighbour, until the writer hurries it (it is about
 * to wait for that buffer; the neighbour may never come while it waits). */
static void
test_lent_hurry(void)
{
    struct hasher *h = hasher_create(1, 0);
    ASSERT(h != NULL);
    unsigned char *d = random_bytes(LEND_BUF_LEN);
    struct hasher_stream *idle = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    struct lend_writer w;
    lend_writer_init(&w, h, AUTH_CK_CRC32C, true);
    lend_writer_put(&w, d, LEND_BUF_LEN, false);
    sleep_ms(50);
    ASSERT_UEQ(runs_of(h), 0);
    hasher_stream_hurry(w.s);
    pthread_mutex_lock(&w.lock);
    while (w.n_released < 1)
        pthread_cond_wait(&w.back, &w.lock);
    pthread_mutex_unlock(&w.lock);
    hasher_stream_lend(w.s, NULL, 0, true, NULL, NULL);
    check_digests(w.s, AUTH_CK_CRC32C, d, LEND_BUF_LEN);
    lend_writer_cleanup(&w);
    hasher_stream_destroy(idle);
    free(d);
    hasher_destroy(h);
}

/* Destroyed with buffers lent and not hashed: each is released once (the
 * cleanup asserts none is left lent). */
static void
test_lent_destroyed(void)
{
    struct hasher *h = hasher_create(1, 0);
    ASSERT(h != NULL);
    unsigned char *d = calloc(1, LEND_BUF_LEN);
    struct hasher_stream *idle = hasher_stream_create(h, AUTH_CK_NONE, NULL, NULL, NULL);
    struct lend_writer w;
    lend_writer_init(&w, h, AUTH_CK_NONE, true);
    lend_writer_put(&w, d, LEND_BUF_LEN, false);
    lend_writer_cleanup(&w);
    ASSERT_UEQ(w.n_released, 1);
    hasher_stream_destroy(idle);
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
    test_lent_streams(false);
    test_lent_streams(true);
    test_lent_pause();
    test_lent_hurry();
    test_lent_destroyed();
    return 0;
}
