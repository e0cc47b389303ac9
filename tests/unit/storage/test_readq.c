/*
 * test_readq.c: many reads in flight (storage_readq_*): reads of random
 * ranges of several objects reaped in another order than prepared come
 * back byte for byte; a full queue refuses a read; reads past an extent's
 * end are short or empty; a read prepared on one thread is reaped on
 * another; a completion is seen without waiting (storage_readq_is_done);
 * the read fault hook fails one read; an extent outside its
 * volume is refused; destroying a queue with reads in flight waits for
 * them.
 */
#include "tests/unit/storage/storage_test.h"

#include <pthread.h>

#define VOL (64 * MIB)
#define DEPTH 32

struct object {
    struct storage_writer *w;
    const struct storage_extent *e;
    uint32_t seed;
    uint64_t size;
};

static void
objects_write(struct storage *st, struct object *obj, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        obj[i].seed = (uint32_t)(40 + i);
        obj[i].size = 100 * 1024 + i * 300 * 1024 + i;
        obj[i].w = test_write_object(st, obj[i].seed, obj[i].size, true, 65536);
        ASSERT_EQ(storage_writer_extents(obj[i].w, &obj[i].e), 1);
    }
}

static void
objects_destroy(struct object *obj, size_t n)
{
    for (size_t i = 0; i < n; i++)
        storage_writer_destroy(obj[i].w, false);
}

static void
test_order(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 1, 16 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    struct object obj[4];
    objects_write(st, obj, ARRAY_LEN(obj));
    struct storage_readq *q = NULL;
    ASSERT_EQ(storage_readq_create(st, 0, &q), -EINVAL);
    ASSERT_EQ(storage_readq_create(st, DEPTH, &q), 0);
    uint8_t *bufs = malloc(DEPTH * 65536);
    uint8_t want[65536];
    for (unsigned round = 0; round < 20; round++) {
        int slots[DEPTH];
        size_t which[DEPTH];
        uint64_t offs[DEPTH], lens[DEPTH];
        for (unsigned k = 0; k < DEPTH; k++) {
            uint64_t x = (round * DEPTH + k + 1) * 0x9E3779B97F4A7C15ull;
            which[k] = (size_t)(x % ARRAY_LEN(obj));
            lens[k] = 1 + (x >> 20) % 65536;
            offs[k] = (x >> 40) % obj[which[k]].size;
            slots[k] =
                storage_readq_prep(q, obj[which[k]].e, offs[k], bufs + k * 65536, (size_t)lens[k]);
            ASSERT(slots[k] >= 0);
        }
        ASSERT_EQ(storage_readq_room(q), 0);
        ASSERT_EQ(storage_readq_prep(q, obj[0].e, 0, want, 1), -EAGAIN);
        ASSERT_EQ(storage_readq_submit(q), 0);
        /* Completion is seen without reaping (nobody else reaps this ring). */
        for (unsigned k = 0; k < 50000 && !storage_readq_is_done(q, slots[DEPTH - 1]); k++)
            usleep(100);
        ASSERT(storage_readq_is_done(q, slots[DEPTH - 1]));
        /* Reaped from the last to the first, the odd ones first. */
        for (unsigned pass = 0; pass < 2; pass++) {
            for (unsigned j = DEPTH; j-- > 0;) {
                if (j % 2 != (pass == 0 ? 1u : 0u))
                    continue;
                uint64_t n = MIN(lens[j], obj[which[j]].size - offs[j]);
                ASSERT_EQ(storage_readq_reap(q, slots[j]), (ssize_t)n);
                pattern_fill(obj[which[j]].seed, offs[j], want, (size_t)n);
                ASSERT_MEM_EQ(bufs + j * 65536, want, (size_t)n);
            }
        }
        ASSERT_EQ(storage_readq_room(q), DEPTH);
    }
    /* Past the end: short, then empty. */
    int s = storage_readq_prep(q, obj[0].e, obj[0].size - 10, bufs, 100);
    int s2 = storage_readq_prep(q, obj[0].e, obj[0].size, bufs + 100, 100);
    ASSERT_EQ(storage_readq_reap(q, s), 10);
    ASSERT_EQ(storage_readq_reap(q, s2), 0);
    /* An extent outside its volume takes no slot. */
    struct storage_extent bad = {.volume = 0, .offset = VOL, .len = 4096};
    ASSERT_EQ(storage_readq_prep(q, &bad, 0, bufs, 10), -EIO);
    bad.volume = 7;
    ASSERT_EQ(storage_readq_prep(q, &bad, 0, bufs, 10), -EIO);
    ASSERT_EQ(storage_readq_room(q), DEPTH);
    /* The read fault hook fails the second read only. */
    storage_fault_inject(st, "read", 2);
    int f[3];
    for (int k = 0; k < 3; k++)
        f[k] = storage_readq_prep(q, obj[1].e, 4096u * (unsigned)k, bufs + k * 65536, 4096);
    ASSERT_EQ(storage_readq_reap(q, f[1]), -EIO);
    ASSERT_EQ(storage_readq_reap(q, f[0]), 4096);
    ASSERT_EQ(storage_readq_reap(q, f[2]), 4096);
    pattern_fill(obj[1].seed, 8192, want, 4096);
    ASSERT_MEM_EQ(bufs + 2 * 65536, want, 4096);
    /* Destroyed with reads prepared, some submitted: it waits for them. */
    for (unsigned k = 0; k < DEPTH; k++) {
        ASSERT(storage_readq_prep(q, obj[k % 4].e, 0, bufs + k * 65536, 65536) >= 0);
        if (k == DEPTH / 2)
            storage_readq_submit(q);
    }
    storage_readq_destroy(q);
    storage_readq_destroy(NULL);
    free(bufs);
    objects_destroy(obj, ARRAY_LEN(obj));
    storage_close(st);
}

struct reaper {
    struct storage_readq *q;
    int slots[DEPTH];
    ssize_t got[DEPTH];
};

static void *
reaper_run(void *arg)
{
    struct reaper *r = arg;
    for (unsigned k = 0; k < DEPTH; k++)
        r->got[k] = storage_readq_reap(r->q, r->slots[k]);
    return NULL;
}

static void
test_other_thread(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 1, 16 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    struct object obj[2];
    objects_write(st, obj, ARRAY_LEN(obj));
    struct reaper r = {0};
    ASSERT_EQ(storage_readq_create(st, DEPTH, &r.q), 0);
    uint8_t *bufs = malloc(DEPTH * 4096);
    for (unsigned k = 0; k < DEPTH; k++) {
        r.slots[k] = storage_readq_prep(r.q, obj[k % 2].e, 4096u * (k / 2), bufs + k * 4096, 4096);
        ASSERT(r.slots[k] >= 0);
    }
    ASSERT_EQ(storage_readq_submit(r.q), 0);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, reaper_run, &r), 0);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    uint8_t want[4096];
    for (unsigned k = 0; k < DEPTH; k++) {
        ASSERT_EQ(r.got[k], 4096);
        pattern_fill(obj[k % 2].seed, 4096u * (k / 2), want, 4096);
        ASSERT_MEM_EQ(bufs + k * 4096, want, 4096);
    }
    storage_readq_destroy(r.q);
    free(bufs);
    objects_destroy(obj, ARRAY_LEN(obj));
    storage_close(st);
}

int
main(void)
{
    static const struct storage_test_case cases[] = {
        {"order", test_order},
        {"other_thread", test_other_thread},
    };
    return storage_test_run("storage-readq", LOG_WARN, cases, ARRAY_LEN(cases));
}
