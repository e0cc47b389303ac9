/*
 * test_pool.c: the bounded staging buffer pool (-EAGAIN when exhausted,
 * recovery after destroy, writers running with fewer buffers), several
 * writers interleaved on one thread's ring, and writers on several threads
 * at once with readers pinning and releasing.
 */
#include "tests/unit/storage/storage_test.h"

#include <pthread.h>

#define VOL (64 * MIB)
#define STAGE (512 << 10)

static void
test_exhaustion(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 1, 4 * STAGE);
    ASSERT_EQ(storage_ready(st), 0);
    uint64_t free0 = test_free_bytes(st);

    struct storage_writer *big = NULL, *w = NULL;
    ASSERT_EQ(storage_writer_create(st, UINT64_MAX, &big), 0);
    /* Buffers are taken as bytes arrive: 1.5 MiB in takes 4. */
    uint8_t *piece = calloc(1, 3 * STAGE);
    ASSERT_EQ(storage_writer_write(big, piece, 3 * STAGE), 0);
    ASSERT_EQ(storage_writer_write(big, piece, 1), 0);
    free(piece);
    ASSERT_EQ(storage_writer_create(st, UINT64_MAX, &w), -EAGAIN);
    ASSERT_EQ(storage_writer_create(st, 100, &w), -EAGAIN);
    ASSERT_EQ(storage_writer_create(st, 10 * MIB, &w), -EAGAIN);
    /* A refused writer reserves nothing. */
    ASSERT_UEQ(test_free_bytes(st), free0 - storage_writer_reserved_len(big));
    /* An empty object needs no buffer. */
    ASSERT_EQ(storage_writer_create(st, 0, &w), 0);
    ASSERT_EQ(storage_writer_finish(w), 0);
    storage_writer_destroy(w, false);
    storage_writer_destroy(big, false);

    /* Small writers take one small buffer each at their first byte: 2 MiB
     * of pool holds 32 of 64 KiB, the 33rd is refused until one is
     * destroyed. */
    struct storage_writer *small[33];
    uint8_t byte = 1;
    for (int i = 0; i < 32; i++) {
        ASSERT_EQ(storage_writer_create(st, 65536, &small[i]), 0);
        ASSERT_EQ(storage_writer_write(small[i], &byte, 1), 0);
        ASSERT_UEQ(storage_writer_held_len(small[i]), 2 * 65536 - 1);
    }
    ASSERT_EQ(storage_writer_create(st, 65536, &small[32]), -EAGAIN);
    /* One created while the pool had room finds none at its first byte. */
    storage_writer_destroy(small[5], false);
    ASSERT_EQ(storage_writer_create(st, 65536, &small[5]), 0);
    ASSERT_EQ(storage_writer_create(st, 65536, &small[32]), 0);
    ASSERT_EQ(storage_writer_write(small[32], &byte, 1), 0);
    ASSERT_EQ(storage_writer_write(small[5], &byte, 1), -EAGAIN);
    storage_writer_destroy(small[32], false);
    storage_writer_destroy(small[5], false);
    ASSERT_EQ(storage_writer_create(st, 65536, &small[5]), 0);
    for (int i = 0; i < 32; i++)
        storage_writer_destroy(small[i], false);
    ASSERT_UEQ(test_free_bytes(st), free0);

    /* Under pressure a writer runs with what is left (here 1 buffer). */
    struct storage_writer *hold[3];
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(storage_writer_create(st, STAGE, &hold[i]), 0);
        ASSERT_EQ(storage_writer_write(hold[i], &byte, 1), 0);
    }
    w = test_write_object(st, 4, 9 * MIB + 5, false, 300000);
    test_check_writer(st, w, 4, 9 * MIB + 5);
    storage_writer_destroy(w, false);
    for (int i = 0; i < 3; i++)
        storage_writer_destroy(hold[i], false);
    ASSERT_UEQ(test_free_bytes(st), free0);
    storage_close(st);
}

static void
test_interleaved(const char *dir)
{
    /* Several writers share the thread's ring: reaping for one completes
     * the others' buffers. */
    enum { N = 5 };
    /* Unknown sizes reserve 64 MiB chunks: room for all of them at once. */
    struct storage *st = test_storage_open(dir, 4 * VOL, 1, 64 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    struct storage_writer *w[N];
    uint64_t size[N], done[N] = {0};
    for (int i = 0; i < N; i++) {
        size[i] = (uint64_t)(i + 1) * 3 * MIB + (uint64_t)i * 1001;
        ASSERT_EQ(storage_writer_create(st, i % 2 ? size[i] : UINT64_MAX, &w[i]), 0);
    }
    uint8_t *piece = malloc(200000);
    for (bool is_busy = true; is_busy;) {
        is_busy = false;
        for (int i = 0; i < N; i++) {
            if (done[i] == size[i])
                continue;
            size_t len = (size_t)MIN(size[i] - done[i], 100000u + 7u * (unsigned)i);
            pattern_fill((uint32_t)i, done[i], piece, len);
            ASSERT_EQ(storage_writer_write(w[i], piece, len), 0);
            done[i] += len;
            is_busy = true;
        }
    }
    for (int i = N - 1; i >= 0; i--)
        ASSERT_EQ(storage_writer_finish(w[i]), 0);
    ASSERT_EQ(storage_sync(st), 0);
    for (int i = 0; i < N; i++) {
        test_check_writer(st, w[i], (uint32_t)i, size[i]);
        storage_writer_destroy(w[i], false);
    }
    free(piece);
    ASSERT_UEQ(test_free_bytes(st), 4 * VOL);
    storage_close(st);
}

struct thread_arg {
    struct storage *st;
    uint32_t seed;
};

static void *
thread_main(void *p)
{
    struct thread_arg *a = p;
    for (int round = 0; round < 6; round++) {
        uint32_t seed = a->seed * 100 + (uint32_t)round;
        uint64_t size = (uint64_t)(round + 1) * 700000 + a->seed;
        struct storage_writer *w = NULL;
        uint8_t *piece = malloc(65536);
        /* The pool is small on purpose: back off on -EAGAIN (at create, or
         * at the first byte when another writer took the last buffer in
         * between) and start over, like a client answered 503 SlowDown. */
        for (int err = -EAGAIN; err == -EAGAIN;) {
            storage_writer_destroy(w, false);
            w = NULL;
            err = storage_writer_create(a->st, round % 2 ? size : UINT64_MAX, &w);
            for (uint64_t done = 0; err == 0 && done < size;) {
                size_t len = (size_t)MIN(size - done, 65536u - round);
                pattern_fill(seed, done, piece, len);
                err = storage_writer_write(w, piece, len);
                ASSERT(err == 0 || (err == -EAGAIN && done == 0));
                done += len;
            }
            if (err == -EAGAIN)
                usleep(1000);
            else
                ASSERT_EQ(err, 0);
        }
        free(piece);
        ASSERT_EQ(storage_writer_finish(w), 0);
        ASSERT_EQ(storage_sync(a->st), 0);
        uint64_t pin = test_pin(a->st);
        test_check_writer(a->st, w, seed, size);
        const struct storage_extent *e;
        size_t n = storage_writer_extents(w, &e);
        storage_release(a->st, e, n); /* as a DELETE would */
        storage_writer_destroy(w, true);
        storage_reader_unpin(a->st, pin);
    }
    return NULL;
}

static void
test_threads(const char *dir)
{
    enum { N = 4 };
    struct storage *st = test_storage_open(dir, 4 * VOL, 2, 3 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    pthread_t th[N];
    struct thread_arg args[N];
    for (int i = 0; i < N; i++) {
        args[i] = (struct thread_arg){st, (uint32_t)i + 1};
        ASSERT_EQ(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    struct storage_stats s;
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.pending_bytes, 0);
    ASSERT_UEQ(s.free_bytes, s.total_bytes);
    storage_close(st);
}

int
main(void)
{
    static const struct storage_test_case cases[] = {
        {"exhaustion", test_exhaustion},
        {"interleaved", test_interleaved},
        {"threads", test_threads},
    };
    return storage_test_run("storage-pool", LOG_WARN, cases, ARRAY_LEN(cases));
}
