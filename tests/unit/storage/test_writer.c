/*
 * test_writer.c: objects of awkward sizes written through the io_uring
 * writer and read back byte for byte (storage_read and a dup'd fd), block
 * sums, scrubbing a corrupted volume, uncommitted writers returning their
 * space, and the submit/fsync/read fault hooks.
 */
#include "tests/unit/storage/storage_test.h"

#include <fcntl.h>

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

int
main(void)
{
    static const struct storage_test_case cases[] = {
        {"sizes", test_sizes},           {"large_unknown", test_large_unknown},
        {"corruption", test_corruption}, {"faults", test_faults},
        {"reopen", test_reopen},         {"buffered", test_buffered},
    };
    return storage_test_run("storage-writer", LOG_WARN, cases, ARRAY_LEN(cases));
}
