/*
 * test_alloc.c: the extent allocator: startup marking, best-fit allocation
 * and coalescing, fragmentation across volumes, ENOSPC at max_volumes,
 * exact free-space accounting, and deferred reclaim under reader pins.
 */
#include "tests/unit/storage/storage_test.h"

#define VOL (64 * MIB)

static struct storage_extent
ext(uint32_t volume, uint64_t offset, uint64_t len)
{
    return (struct storage_extent){.volume = volume, .offset = offset, .len = len};
}

/* Writes and commits an object; returns its only extent. */
static struct storage_extent
put_one(struct storage *st, uint32_t seed, uint64_t size)
{
    struct storage_writer *w = test_write_object(st, seed, size, true, 100000);
    const struct storage_extent *e;
    ASSERT_EQ(storage_writer_extents(w, &e), 1);
    struct storage_extent out = e[0];
    storage_writer_destroy(w, true);
    return out;
}

static void
test_mark_used(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 2, 4 * MIB);
    struct storage_stats s;
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.total_bytes, VOL);
    ASSERT_EQ(s.n_volumes, 1);

    struct storage_extent a = ext(0, 0, 100);     /* [0, 4096) */
    struct storage_extent b = ext(0, 4096, 5000); /* [4096, 12288) */
    ASSERT_EQ(storage_mark_used(st, &a), 0);
    ASSERT_EQ(storage_mark_used(st, &b), 0);
    struct storage_extent bad[] = {
        ext(0, 8192, 10),         /* overlaps b's padding */
        ext(0, 0, 1),             /* same as a */
        ext(0, VOL - 4096, 8192), /* past the end */
        ext(0, 100, 10),          /* unaligned */
        ext(7, 0, 10),            /* no such volume */
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++)
        ASSERT_EQ(storage_mark_used(st, &bad[i]), -EINVAL);
    struct storage_extent c = ext(0, 10 * MIB, MIB); /* in the middle */
    ASSERT_EQ(storage_mark_used(st, &c), 0);
    ASSERT_UEQ(test_free_bytes(st), VOL - 12288 - MIB);
    ASSERT_EQ(storage_ready(st), 0);
    ASSERT_UEQ(test_free_bytes(st), VOL - 12288 - MIB);

    /* After ready, marking carves from the free map, overlaps still fail. */
    struct storage_extent d = ext(0, 20 * MIB, 3 * 4096);
    ASSERT_EQ(storage_mark_used(st, &d), 0);
    ASSERT_EQ(storage_mark_used(st, &d), -EINVAL);
    struct storage_extent e = ext(0, 10 * MIB + MIB - 4096, 8192);
    ASSERT_EQ(storage_mark_used(st, &e), -EINVAL);
    ASSERT_UEQ(test_free_bytes(st), VOL - 12288 - MIB - 3 * 4096);

    /* Released with no reader pinned: free again at once, and coalesced:
     * the whole volume fits one extent in volume 0. */
    struct storage_extent all[] = {a, b, c, d};
    storage_release(st, all, ARRAY_LEN(all));
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.free_bytes, VOL);
    ASSERT_UEQ(s.pending_bytes, 0);
    struct storage_extent whole = put_one(st, 1, VOL);
    ASSERT_EQ(whole.volume, 0);
    ASSERT_UEQ(whole.offset, 0);
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.free_bytes, 0);
    ASSERT_EQ(s.n_volumes, 1);
    storage_release(st, &whole, 1);
    ASSERT_UEQ(test_free_bytes(st), VOL);
    storage_close(st);
}

static void
test_best_fit(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 2, 4 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    struct storage_extent x[5];
    for (int i = 0; i < 5; i++)
        x[i] = put_one(st, (uint32_t)i, MIB + (uint64_t)i);
    /* Holes of 2 MiB + 4 KiB (x1) and 2 MiB + 8 KiB (x3, padded): a
     * 1 MiB + 1 object lands in the smaller hole, at its start. */
    storage_release(st, &x[1], 1);
    storage_release(st, &x[3], 1);
    uint64_t free_before = test_free_bytes(st);
    struct storage_extent y = put_one(st, 9, MIB + 1);
    ASSERT_UEQ(y.offset, x[1].offset);
    ASSERT_UEQ(test_free_bytes(st), free_before - ALIGN_UP(MIB + 1, 4096));
    /* Space is reserved in steps as bytes arrive, but the first step goes
     * where the whole object can follow: 3 MiB fits no hole, so it lands in
     * one extent after x4, not in pieces across the holes. */
    struct storage_extent z = put_one(st, 10, 3 * MIB);
    ASSERT_UEQ(z.offset, x[4].offset + ALIGN_UP(x[4].len, 4096));
    storage_release(st, &z, 1);
    /* Releasing neighbours coalesces back into one range. */
    storage_release(st, &y, 1);
    storage_release(st, x, 1);
    storage_release(st, &x[2], 1);
    storage_release(st, &x[4], 1);
    ASSERT_UEQ(test_free_bytes(st), VOL);
    struct storage_extent whole = put_one(st, 3, VOL);
    ASSERT_UEQ(whole.offset, 0);
    storage_release(st, &whole, 1);
    storage_close(st);
}

static void
test_volumes_and_enospc(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 2, 4 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    /* 100 MiB does not fit one volume: fragments over a new second one.
     * A writer given no bytes yet creates no volume and reserves nothing. */
    uint64_t size = 100 * MIB + 5;
    struct storage_writer *idle = NULL;
    ASSERT_EQ(storage_writer_create(st, size, &idle), 0);
    struct storage_stats s;
    storage_stats_get(st, &s);
    ASSERT_EQ(s.n_volumes, 1);
    ASSERT_UEQ(s.free_bytes, VOL);
    storage_writer_destroy(idle, false);
    struct storage_writer *w = test_write_object(st, 42, size, true, 300000);
    const struct storage_extent *e;
    size_t n = storage_writer_extents(w, &e);
    ASSERT_EQ(n, 2);
    ASSERT(e[0].volume != e[1].volume);
    test_check_writer(st, w, 42, size);
    storage_stats_get(st, &s);
    ASSERT_EQ(s.n_volumes, 2);
    ASSERT_UEQ(s.total_bytes, 2 * VOL);
    ASSERT_UEQ(s.free_bytes, 2 * VOL - ALIGN_UP(size, 4096));

    /* No third volume: too large fails with nothing reserved. */
    uint64_t free_before = s.free_bytes;
    struct storage_writer *w2 = NULL;
    ASSERT_EQ(storage_writer_create(st, free_before + 1, &w2), -ENOSPC);
    ASSERT_EQ(storage_writer_create(st, 3 * VOL, &w2), -ENOSPC);
    ASSERT_UEQ(test_free_bytes(st), free_before);
    /* Exactly what is left fits. Nothing is reserved before the first
     * byte; then space is taken in steps as the bytes arrive. */
    ASSERT_EQ(storage_writer_create(st, free_before, &w2), 0);
    ASSERT_UEQ(test_free_bytes(st), free_before);
    ASSERT_UEQ(storage_writer_held_len(w2), 0);
    uint8_t *fill = calloc(1, MIB);
    ASSERT_EQ(storage_writer_write(w2, fill, 1), 0);
    ASSERT_UEQ(storage_writer_reserved_len(w2), 512 << 10);
    ASSERT_UEQ(test_free_bytes(st), free_before - (512 << 10));
    for (uint64_t left = free_before - 1; left > 0;) {
        size_t len = (size_t)MIN(left, (uint64_t)MIB);
        ASSERT_EQ(storage_writer_write(w2, fill, len), 0);
        left -= len;
    }
    free(fill);
    ASSERT_UEQ(test_free_bytes(st), 0);
    ASSERT_EQ(storage_writer_finish(w2), 0);
    storage_writer_destroy(w2, false);
    ASSERT_UEQ(test_free_bytes(st), free_before);
    /* Unknown size: writes until the space runs out, then -ENOSPC. */
    ASSERT_EQ(storage_writer_create(st, UINT64_MAX, &w2), 0);
    uint8_t *piece = calloc(1, MIB);
    int err = 0;
    for (uint64_t i = 0; i < 64 && err == 0; i++)
        err = storage_writer_write(w2, piece, MIB);
    ASSERT_EQ(err, -ENOSPC);
    free(piece);
    storage_writer_destroy(w2, false);
    ASSERT_UEQ(test_free_bytes(st), free_before);

    /* Reopen: both volumes are found; marking the extents keeps the data. */
    struct storage_extent kept[2] = {e[0], e[1]};
    size_t sums_len;
    const uint8_t *sums0 = storage_writer_sums(w, &sums_len);
    uint8_t *sums = malloc(sums_len);
    memcpy(sums, sums0, sums_len);
    storage_writer_destroy(w, true);
    ASSERT_EQ(storage_sync(st), 0);
    storage_close(st);

    st = test_storage_open(dir, VOL, 2, 4 * MIB);
    storage_stats_get(st, &s);
    ASSERT_EQ(s.n_volumes, 2);
    ASSERT_EQ(storage_mark_used(st, &kept[0]), 0);
    ASSERT_EQ(storage_mark_used(st, &kept[1]), 0);
    ASSERT_EQ(storage_ready(st), 0);
    ASSERT_UEQ(test_free_bytes(st), free_before);
    test_check_object(st, kept, 2, sums, sums_len, 42, size);
    storage_release(st, kept, 2);
    ASSERT_UEQ(test_free_bytes(st), 2 * VOL);
    free(sums);
    storage_close(st);
}

static void
test_deferred_reclaim(const char *dir)
{
    struct storage *st = test_storage_open(dir, VOL, 1, 4 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    struct storage_extent a = put_one(st, 1, 10 * MIB);
    struct storage_extent b = put_one(st, 2, 20 * MIB);
    uint64_t free0 = test_free_bytes(st);
    struct storage_stats s;

    uint64_t p1 = test_pin(st);
    storage_release(st, &a, 1);
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.free_bytes, free0);
    ASSERT_UEQ(s.pending_bytes, 10 * MIB);
    /* The pinned space is not reused: 10 MiB more than what is free fails. */
    struct storage_writer *w = NULL;
    ASSERT_EQ(storage_writer_create(st, free0 + 4096, &w), -ENOSPC);

    uint64_t p2 = test_pin(st); /* after a's release */
    storage_release(st, &b, 1);
    uint64_t p3 = test_pin(st); /* after b's release */
    storage_reader_unpin(st, p3);
    storage_reader_unpin(st, p2); /* a still waits for p1 */
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.pending_bytes, 30 * MIB);
    p2 = test_pin(st);            /* newer than both releases */
    storage_reader_unpin(st, p1); /* a and b: no older pin left */
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.pending_bytes, 0);
    ASSERT_UEQ(s.free_bytes, VOL);
    storage_reader_unpin(st, p2);

    /* Generations: a waits for p1 only (p2 came after a's release), b for
     * p1 and p2. */
    a = put_one(st, 1, 10 * MIB);
    b = put_one(st, 2, 20 * MIB);
    p1 = test_pin(st);
    storage_release(st, &a, 1);
    p2 = test_pin(st);
    storage_release(st, &b, 1);
    storage_reader_unpin(st, p2);
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.pending_bytes, 30 * MIB);
    p2 = test_pin(st);
    storage_reader_unpin(st, p1);
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.pending_bytes, 0);
    ASSERT_UEQ(s.free_bytes, VOL);
    storage_reader_unpin(st, p2);
    a = put_one(st, 1, 10 * MIB);
    b = put_one(st, 2, 20 * MIB);
    p1 = test_pin(st);
    storage_release(st, &a, 1);
    p2 = test_pin(st);
    storage_release(st, &b, 1);
    storage_reader_unpin(st, p1);
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.pending_bytes, 20 * MIB);
    ASSERT_UEQ(s.free_bytes, VOL - 20 * MIB);
    storage_reader_unpin(st, p2);
    storage_stats_get(st, &s);
    ASSERT_UEQ(s.pending_bytes, 0);
    ASSERT_UEQ(s.free_bytes, VOL);

    /* Released space is reused once reclaimed. */
    struct storage_extent c = put_one(st, 3, VOL);
    ASSERT_UEQ(c.offset, 0);
    storage_release(st, &c, 1);
    storage_close(st);
}

int
main(void)
{
    static const struct storage_test_case cases[] = {
        {"mark_used", test_mark_used},
        {"best_fit", test_best_fit},
        {"volumes_and_enospc", test_volumes_and_enospc},
        {"deferred_reclaim", test_deferred_reclaim},
    };
    return storage_test_run("storage-alloc", LOG_WARN, cases, ARRAY_LEN(cases));
}
