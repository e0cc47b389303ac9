/*
 * test_writer.c: objects of awkward sizes written through the io_uring
 * writer and read back byte for byte (storage_read and a dup'd fd), block
 * sums, scrubbing a corrupted volume, uncommitted writers returning their
 * space, the submit/fsync/read fault hooks, and a tap that borrows the
 * staging buffers (each must stay untouched until it is given back).
 */
#include "tests/unit/storage/storage_test.h"

#include <fcntl.h>
#include <pthread.h>
#include <time.h>

#define VOL (128 * MIB)

static void
test_sizes(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 2, 16 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    const uint64_t sizes[] = {
        0, 1, 4095, 4096, 4097, MIB - 1, MIB, MIB + 1, 512 << 10, (512 << 10) + 1, 5 * MIB + 3};
    for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
        for (int known = 0; known < 2; known++) {
            uint64_t free0 = test_free_bytes(st);
            uint32_t seed = (uint32_t)(i * 2 + (size_t)known);
            struct storage_writer *w = test_write_object(st, seed, sizes[i], known, 65537);
            const struct storage_extent *e;
            size_t n = storage_writer_extents(w, &e);
            ASSERT_EQ(n, sizes[i] == 0 ? 0 : 1);
            size_t sums_len;
            storage_writer_sums(w, &sums_len);
            ASSERT_UEQ(sums_len, (sizes[i] + MIB - 1) / MIB * STORAGE_SUM_LEN);
            test_check_writer(st, w, seed, sizes[i]);
            /* The unknown-size tail was given back: exactly the padded size is used. */
            ASSERT_UEQ(test_free_bytes(st), free0 - ALIGN_UP(sizes[i], 4096));
            storage_writer_destroy(w, false);
            ASSERT_UEQ(test_free_bytes(st), free0);
        }
    }
    /* Reads past the end are short or empty. */
    struct storage_writer *w = test_write_object(st, 5, 5000, true, 5000);
    const struct storage_extent *e;
    storage_writer_extents(w, &e);
    uint8_t buf[8192];
    ASSERT_EQ(storage_read(st, e, 4000, buf, sizeof(buf)), 1000);
    ASSERT_EQ(buf[999], pattern_byte(5, 4999));
    ASSERT_EQ(storage_read(st, e, 5000, buf, sizeof(buf)), 0);
    ASSERT_EQ(storage_read(st, e, 9000, buf, sizeof(buf)), 0);
    /* A known size is a limit. */
    struct storage_writer *w2;
    ASSERT_EQ(storage_writer_create(st, 10, &w2), 0);
    ASSERT_EQ(storage_writer_write(w2, buf, 8), 0);
    ASSERT_EQ(storage_writer_write(w2, buf, 3), -EFBIG);
    ASSERT_EQ(storage_writer_write(w2, buf, 2), 0);
    ASSERT_EQ(storage_writer_finish(w2), 0);
    storage_writer_destroy(w2, false);
    /* Fewer bytes than announced: the rest is given back. */
    uint64_t free0 = test_free_bytes(st);
    ASSERT_EQ(storage_writer_create(st, 3 * MIB, &w2), 0);
    pattern_fill(6, 0, buf, 5000);
    ASSERT_EQ(storage_writer_write(w2, buf, 5000), 0);
    ASSERT_EQ(storage_writer_finish(w2), 0);
    ASSERT_UEQ(test_free_bytes(st), free0 - 8192);
    test_check_writer(st, w2, 6, 5000);
    storage_writer_destroy(w2, false);
    storage_writer_destroy(w, false);
    ASSERT_UEQ(test_free_bytes(st), VOL);
    storage_close(st);
}

static void
test_large_unknown(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 2, 16 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    uint64_t size = 70 * MIB + 12345;
    struct storage_writer *w = test_write_object(st, 77, size, false, 1000003);
    const struct storage_extent *e;
    size_t n = storage_writer_extents(w, &e);
    /* Chunks grow in place when the space after them is free. */
    ASSERT_EQ(n, 1);
    test_check_writer(st, w, 77, size);
    ASSERT_UEQ(test_free_bytes(st), VOL - ALIGN_UP(size, 4096));
    ASSERT_EQ(storage_sync(st), 0);
    storage_writer_destroy(w, false);
    ASSERT_UEQ(test_free_bytes(st), VOL);
    storage_close(st);
}

static void
test_corruption(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 1, 16 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    uint64_t size = 3 * MIB + 100;
    struct storage_writer *w = test_write_object(st, 8, size, true, 200000);
    ASSERT_EQ(storage_sync(st), 0);
    const struct storage_extent *e;
    size_t n = storage_writer_extents(w, &e);
    size_t sums_len;
    const uint8_t *sums = storage_writer_sums(w, &sums_len);
    ASSERT_EQ(storage_verify(st, e, n, sums, sums_len), 0);
    ASSERT_EQ(storage_verify(st, e, n, sums, sums_len - 1), -EINVAL);

    char path[4096];
    snprintf(path, sizeof(path), "%s/vol-0000.dat", dir);
    int fd = open(path, O_RDWR);
    ASSERT(fd >= 0);
    uint8_t byte = (uint8_t)~pattern_byte(8, MIB + 12345);
    ASSERT_EQ(pwrite(fd, &byte, 1, (off_t)(e[0].offset + MIB + 12345)), 1);
    ASSERT_EQ(storage_verify(st, e, n, sums, sums_len), 1);
    /* Every bad block is counted, not only the first. */
    byte = (uint8_t)~pattern_byte(8, 3 * MIB + 99);
    ASSERT_EQ(pwrite(fd, &byte, 1, (off_t)(e[0].offset + 3 * MIB + 99)), 1);
    ASSERT_EQ(storage_verify(st, e, n, sums, sums_len), 2);
    /* Padding after the logical end is not covered. */
    byte = 0x55;
    ASSERT_EQ(pwrite(fd, &byte, 1, (off_t)(e[0].offset + size + 1)), 1);
    ASSERT_EQ(storage_verify(st, e, n, sums, sums_len), 2);
    close(fd);
    storage_writer_destroy(w, false);
    storage_close(st);
}

static void
test_faults(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 1, 16 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    uint64_t free0 = test_free_bytes(st);
    uint8_t *piece = malloc(MIB);
    pattern_fill(1, 0, piece, MIB);

    /* The 3rd submit fails: the writer reports -EIO from then on. */
    for (int known = 0; known < 2; known++) {
        struct storage_writer *w;
        ASSERT_EQ(storage_writer_create(st, known ? 5 * MIB : UINT64_MAX, &w), 0);
        storage_fault_inject(st, "submit", 3);
        int err = 0;
        for (int i = 0; i < 5 && err == 0; i++)
            err = storage_writer_write(w, piece, MIB);
        ASSERT_EQ(err, -EIO);
        ASSERT_EQ(storage_writer_write(w, piece, 1), -EIO);
        ASSERT_EQ(storage_writer_finish(w), -EIO);
        storage_writer_destroy(w, false);
        ASSERT_UEQ(test_free_bytes(st), free0);
    }
    /* The tail submit (at finish) fails. */
    {
        struct storage_writer *w;
        ASSERT_EQ(storage_writer_create(st, 100, &w), 0);
        ASSERT_EQ(storage_writer_write(w, piece, 100), 0);
        storage_fault_inject(st, "submit", 1);
        ASSERT_EQ(storage_writer_finish(w), -EIO);
        storage_writer_destroy(w, false);
        ASSERT_UEQ(test_free_bytes(st), free0);
    }
    /* fsync fails once; the next sync retries the same volume. */
    {
        struct storage_writer *w = test_write_object(st, 2, 2 * MIB + 1, true, 100000);
        storage_fault_inject(st, "fsync", 1);
        ASSERT_EQ(storage_sync(st), -EIO);
        ASSERT_EQ(storage_sync(st), 0);
        storage_writer_destroy(w, false);
        ASSERT_UEQ(test_free_bytes(st), free0);
        /* Nothing written since: no fsync happens, so no fault fires. */
        storage_fault_inject(st, "fsync", 1);
        ASSERT_EQ(storage_sync(st), 0);
        storage_fault_inject(st, "fsync", 0);
    }
    /* Reads: the 2nd read fails, in storage_read and storage_verify. */
    {
        struct storage_writer *w = test_write_object(st, 3, 3 * MIB, true, 100000);
        const struct storage_extent *e;
        size_t n = storage_writer_extents(w, &e);
        size_t sums_len;
        const uint8_t *sums = storage_writer_sums(w, &sums_len);
        storage_fault_inject(st, "read", 2);
        ASSERT_EQ(storage_read(st, e, 0, piece, 100), 100);
        ASSERT_EQ(storage_read(st, e, 0, piece, 100), -EIO);
        ASSERT_EQ(storage_read(st, e, 0, piece, 100), 100);
        storage_fault_inject(st, "read", 2);
        ASSERT_EQ(storage_verify(st, e, n, sums, sums_len), -EIO);
        ASSERT_EQ(storage_verify(st, e, n, sums, sums_len), 0);
        storage_writer_destroy(w, false);
    }
    ASSERT_UEQ(test_free_bytes(st), free0);
    free(piece);
    storage_close(st);
}

static void
test_reopen(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 1, 16 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    uint64_t size = 2 * MIB + 777;
    struct storage_writer *w = test_write_object(st, 11, size, false, 50000);
    ASSERT_EQ(storage_sync(st), 0);
    const struct storage_extent *e0;
    storage_writer_extents(w, &e0);
    struct storage_extent e = e0[0];
    size_t sums_len;
    const uint8_t *s0 = storage_writer_sums(w, &sums_len);
    uint8_t *sums = malloc(sums_len);
    memcpy(sums, s0, sums_len);
    storage_writer_destroy(w, true);
    storage_close(st);

    st = test_storage_open(dir, VOL, 1, 16 * MIB);
    ASSERT_EQ(storage_mark_used(st, &e), 0);
    ASSERT_EQ(storage_ready(st), 0);
    ASSERT_UEQ(test_free_bytes(st), VOL - ALIGN_UP(size, 4096));
    /* A new object does not land on the marked one. */
    struct storage_writer *w2 = test_write_object(st, 12, MIB, true, 50000);
    test_check_object(st, &e, 1, sums, sums_len, 11, size);
    test_check_writer(st, w2, 12, MIB);
    storage_writer_destroy(w2, false);
    free(sums);
    storage_close(st);
}

static void
test_buffered(const char *dir)
{
    struct storage_config cfg = {
        .dir = dir, .volume_size = VOL, .max_volumes = 1, .write_buffer_total = 4 * MIB};
    struct storage *st = NULL;
    ASSERT_EQ(storage_open(&st, &cfg), 0);
    ASSERT(!storage_is_direct(st));
    ASSERT_EQ(storage_ready(st), 0);
    struct storage_writer *w = test_write_object(st, 21, 5 * MIB + 3, false, 123457);
    ASSERT_EQ(storage_sync(st), 0);
    test_check_writer(st, w, 21, 5 * MIB + 3);
    storage_writer_destroy(w, false);
    ASSERT_UEQ(test_free_bytes(st), VOL);
    storage_close(st);
}

/* ---- the tap ---------------------------------------------------------------- */

/* A tap that lends every buffer to a thread which, a little later, checks
 * the bytes are still the pattern at their offset and only then gives the
 * buffer back: a writer that reused a lent buffer early fails the check. */
struct tap_loan {
    const uint8_t *data;
    size_t len;
    struct storage_stage *stage;
    bool is_last;
};

struct tap_test {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct tap_loan loans[64];
    size_t head, tail; /* ring of loans not given back */
    uint32_t seed;
    uint64_t off;  /* bytes checked by the thread */
    uint64_t lent; /* bytes lent by the writer */
    unsigned n_last;
    unsigned n_hurry;
    unsigned n_bad;
    unsigned n_unaligned;
    bool is_done;
};

static void
tap_stage(void *arg, const uint8_t *data, size_t len, bool is_last, struct storage_stage *stage)
{
    struct tap_test *t = arg;
    pthread_mutex_lock(&t->lock);
    if (!is_last && len % STORAGE_ALIGN != 0)
        t->n_unaligned++;
    t->lent += len;
    t->n_last += is_last;
    if (!stage) { /* an empty tail: nothing lent */
        ASSERT(is_last && len == 0);
        pthread_mutex_unlock(&t->lock);
        return;
    }
    ASSERT(t->tail - t->head < ARRAY_LEN(t->loans));
    t->loans[t->tail++ % ARRAY_LEN(t->loans)] = (struct tap_loan){data, len, stage, is_last};
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void
tap_hurry(void *arg)
{
    struct tap_test *t = arg;
    pthread_mutex_lock(&t->lock);
    t->n_hurry++;
    pthread_mutex_unlock(&t->lock);
}

static void *
tap_thread(void *arg)
{
    struct tap_test *t = arg;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (t->head == t->tail && !t->is_done)
            pthread_cond_wait(&t->cond, &t->lock);
        if (t->head == t->tail)
            break;
        struct tap_loan l = t->loans[t->head % ARRAY_LEN(t->loans)];
        pthread_mutex_unlock(&t->lock);
        /* Long enough for a writer that did not wait to overwrite it. */
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
        for (size_t i = 0; i < l.len; i++)
            if (l.data[i] != pattern_byte(t->seed, t->off + i)) {
                t->n_bad++;
                break;
            }
        t->off += l.len;
        pthread_mutex_lock(&t->lock);
        t->head++;
        if (l.stage)
            storage_writer_stage_release(l.stage);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Starts the checking thread of 't' (pattern 'seed') and a writer it taps;
 * '*n_bufs' is what storage_writer_tap allows the writer. */
static struct storage_writer *
tap_start(struct storage *st, struct tap_test *t, pthread_t *tid, uint32_t seed, uint64_t size_hint,
          size_t *n_bufs)
{
    *t = (struct tap_test){.seed = seed};
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    ASSERT_EQ(pthread_create(tid, NULL, tap_thread, t), 0);
    struct storage_writer *w = NULL;
    ASSERT_EQ(storage_writer_create(st, size_hint, &w), 0);
    struct storage_tap tap = {tap_stage, tap_hurry, t};
    *n_bufs = storage_writer_tap(w, &tap);
    return w;
}

/* Ends the checking thread of 't' (every loan already given back). */
static void
tap_stop(struct tap_test *t, pthread_t tid)
{
    pthread_mutex_lock(&t->lock);
    t->is_done = true;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(tid, NULL);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
}

static void
test_tap(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 2, 16 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    const uint64_t sizes[] = {0, 1, 4096, 300000, 512 << 10, MIB, 5 * MIB + 3, 20 * MIB + 777};
    for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
        for (int known = 0; known < 2; known++) {
            if (known && sizes[i] == 0)
                continue; /* no writer stages nothing: an empty object has none */
            uint32_t seed = (uint32_t)(100 + i * 2 + (size_t)known);
            struct tap_test t;
            pthread_t tid;
            size_t n_bufs;
            struct storage_writer *w =
                tap_start(st, &t, &tid, seed, known ? sizes[i] : UINT64_MAX, &n_bufs);
            ASSERT(n_bufs >= 1 && n_bufs <= 8);
            if (!known) /* held while read too: twice the untapped 4 */
                ASSERT_UEQ(n_bufs, 8);
            uint8_t *piece = malloc(65537);
            uint64_t done = 0;
            for (unsigned k = 0; done < sizes[i]; k++) {
                size_t len = (size_t)MIN((uint64_t)(1 + (k * 7919u) % 65537), sizes[i] - done);
                pattern_fill(seed, done, piece, len);
                ASSERT_EQ(storage_writer_write(w, piece, len), 0);
                done += len;
            }
            free(piece);
            ASSERT_EQ(storage_writer_finish(w), 0);
            /* finish waited for every loan to come back */
            pthread_mutex_lock(&t.lock);
            ASSERT_UEQ(t.tail - t.head, 0);
            ASSERT_UEQ(t.lent, sizes[i]);
            ASSERT_UEQ(t.off, sizes[i]);
            ASSERT_UEQ(t.n_last, 1);
            ASSERT_UEQ(t.n_bad, 0);
            ASSERT_UEQ(t.n_unaligned, 0);
            pthread_mutex_unlock(&t.lock);
            tap_stop(&t, tid);
            test_check_writer(st, w, seed, sizes[i]);
            storage_writer_destroy(w, false);
        }
    }
    ASSERT_UEQ(test_free_bytes(st), VOL);

    /* Destroyed unfinished with buffers lent: it waits for them. */
    uint32_t seed = 9;
    struct tap_test t;
    pthread_t tid;
    size_t n_bufs;
    struct storage_writer *w = tap_start(st, &t, &tid, seed, UINT64_MAX, &n_bufs);
    uint8_t *big = malloc(3 * MIB);
    pattern_fill(seed, 0, big, 3 * MIB);
    ASSERT_EQ(storage_writer_write(w, big, 3 * MIB), 0);
    storage_writer_destroy(w, false);
    pthread_mutex_lock(&t.lock);
    ASSERT_UEQ(t.tail - t.head, 0);
    ASSERT_UEQ(t.n_bad, 0);
    pthread_mutex_unlock(&t.lock);
    tap_stop(&t, tid);
    free(big);
    ASSERT_UEQ(test_free_bytes(st), VOL);
    storage_close(st);
}

int
main(void)
{
    static const struct storage_test_case cases[] = {
        {"sizes", test_sizes},
        {"large_unknown", test_large_unknown},
        {"corruption", test_corruption},
        {"faults", test_faults},
        {"reopen", test_reopen},
        {"buffered", test_buffered},
        {"tap", test_tap},
    };
    return storage_test_run("storage-writer", LOG_WARN, cases, ARRAY_LEN(cases));
}
