/*
 * storage_test.h: helpers shared by the storage/ unit tests: a temp store,
 * a deterministic byte pattern, and writing then checking an object
 * (contents through storage_read and a zero-copy span, and the block sums against
 * an independent XXH64 of each 1 MiB block).
 */
#ifndef SHARD_TEST_STORAGE_H
#define SHARD_TEST_STORAGE_H

#include "common/common.h"
#include "storage/storage.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

#define MIB (1ull << 20)

static inline uint8_t
pattern_byte(uint32_t seed, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed << 32);
    return (uint8_t)(x >> 29);
}

static inline void
pattern_fill(uint32_t seed, uint64_t off, uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern_byte(seed, off + i);
}

static inline struct storage *
test_storage_open(const char *dir, uint64_t volume_size, uint32_t max_volumes, uint64_t pool_len)
{
    struct storage_config cfg = {
        .dir = dir,
        .volume_size = volume_size,
        .max_volumes = max_volumes,
        .write_buffer_total = pool_len,
        .is_direct = true,
    };
    struct storage *st = NULL;
    ASSERT_EQ(storage_open(&st, &cfg), 0);
    return st;
}

/* A wide reader pin (the table must have room). */
static inline uint64_t
test_pin(struct storage *st)
{
    uint64_t pin = 0;
    ASSERT_EQ(storage_reader_pin(st, &pin), 0);
    return pin;
}

static inline uint64_t
test_free_bytes(struct storage *st)
{
    struct storage_stats s;
    storage_stats_get(st, &s);
    return s.free_bytes;
}

/* Writes 'size' bytes of pattern 'seed' in pieces of varying length (at most
 * 'max_piece'), with a known or unknown size hint; returns the finished
 * writer. */
static inline struct storage_writer *
test_write_object(struct storage *st, uint32_t seed, uint64_t size, bool is_size_known,
                  size_t max_piece)
{
    struct storage_writer *w = NULL;
    ASSERT_EQ(storage_writer_create(st, is_size_known ? size : UINT64_MAX, &w), 0);
    uint8_t *piece = malloc(max_piece ? max_piece : 1);
    uint64_t done = 0;
    for (unsigned k = 0; done < size; k++) {
        size_t len = (size_t)MIN((uint64_t)(1 + (k * 7919u) % max_piece), size - done);
        pattern_fill(seed, done, piece, len);
        ASSERT_EQ(storage_writer_write(w, piece, len), 0);
        done += len;
    }
    free(piece);
    ASSERT_EQ(storage_writer_finish(w), 0);
    ASSERT_UEQ(storage_writer_size(w), size);
    return w;
}

/* Checks the extents, the sums and the stored bytes of a finished writer. */
static inline void
test_check_object(struct storage *st, const struct storage_extent *e, size_t n, const uint8_t *sums,
                  size_t sums_len, uint32_t seed, uint64_t size)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        ASSERT_UEQ(e[i].offset % STORAGE_ALIGN, 0);
        ASSERT(e[i].len > 0);
        total += e[i].len;
    }
    ASSERT_UEQ(total, size);
    ASSERT_UEQ(sums_len, storage_sums_len(e, n));

    uint8_t *got = malloc(MIB), *want = malloc(MIB);
    uint64_t pos = 0;
    const uint8_t *sum = sums;
    uint64_t pin = test_pin(st);
    for (size_t i = 0; i < n; i++) {
        /* Each extent is one zero-copy span. */
        struct storage_reader *rd = NULL;
        ASSERT_EQ(storage_reader_create(st, pin, e, n, pos, e[i].len, &rd), 0);
        ASSERT(storage_reader_is_one_span(rd));
        struct storage_send_span span;
        ASSERT_EQ(storage_reader_span(rd, 0, &span), 0);
        ASSERT_UEQ(span.len, e[i].len);
        ASSERT_UEQ(span.offset, e[i].offset);
        storage_reader_destroy(rd);
        int fd = span.fd;
        ASSERT(fd >= 0);
        for (uint64_t off = 0; off < e[i].len; off += MIB) {
            size_t len = (size_t)MIN(MIB, e[i].len - off);
            pattern_fill(seed, pos + off, want, len);
            memset(got, 0xEE, len);
            ASSERT_EQ(storage_read(st, &e[i], off, got, MIB), (ssize_t)len);
            ASSERT_MEM_EQ(got, want, len);
            memset(got, 0xEE, len);
            ASSERT_EQ(pread(fd, got, len, (off_t)(span.offset + off)), (ssize_t)len);
            ASSERT_MEM_EQ(got, want, len);
            uint64_t h = XXH64(want, len, 0);
            for (int k = 0; k < 8; k++)
                ASSERT_EQ(sum[k], (uint8_t)(h >> (8 * k)));
            sum += 8;
        }
        pos += e[i].len;
    }
    storage_reader_unpin(st, pin);
    ASSERT_EQ(storage_verify(st, e, n, sums, sums_len), 0);
    free(got);
    free(want);
}

static inline void
test_check_writer(struct storage *st, struct storage_writer *w, uint32_t seed, uint64_t size)
{
    const struct storage_extent *e;
    size_t n = storage_writer_extents(w, &e);
    size_t sums_len;
    const uint8_t *sums = storage_writer_sums(w, &sums_len);
    test_check_object(st, e, n, sums, sums_len, seed, size);
}

/* One case of a storage test; it gets a temp dir of its own, removed after it. */
struct storage_test_case {
    const char *name;
    void (*fn)(const char *dir);
};

/* Runs 'cases' in order, each in a fresh temp dir named after 'prefix', with
 * the log at 'level'; prints "ok NAME" after each. Returns main's status. */
static inline int
storage_test_run(const char *prefix, enum log_level level, const struct storage_test_case *cases,
                 size_t n)
{
    log_set_level(level);
    for (size_t i = 0; i < n; i++) {
        char *dir = test_tmpdir_create(prefix);
        cases[i].fn(dir);
        test_tmpdir_remove(dir);
        fprintf(stderr, "ok %s\n", cases[i].name);
    }
    return 0;
}

#endif
