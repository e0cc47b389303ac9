/*
 * test_pin.c: reader pins narrowed to what they read, readers over an
 * object's extents (spans and reads, extents adjacent on disk joined into
 * one span, writers placed at a slot), the bounded pin table and the
 * revocation of idle pins.
 */
#include "tests/unit/storage/storage_test.h"

#include <time.h>

#define VOL (16 * MIB)

static struct storage *
open_store(const char *dir, uint32_t max_volumes, uint32_t max_pins, uint32_t pin_timeout_ms)
{
    struct storage_config cfg = {
        .dir = dir,
        .volume_size = VOL,
        .max_volumes = max_volumes,
        .write_buffer_total = 4 * MIB,
        .is_direct = true,
        .max_pins = max_pins,
        .pin_timeout_ms = pin_timeout_ms,
    };
    struct storage *st = NULL;
    ASSERT_EQ(storage_open(&st, &cfg), 0);
    ASSERT_EQ(storage_ready(st), 0);
    return st;
}

/* Writes and commits an object of one extent. */
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

static uint64_t
pending_bytes(struct storage *st)
{
    struct storage_stats s;
    storage_stats_get(st, &s);
    return s.pending_bytes;
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* A narrowed pin holds back its own object only; a wide one everything
 * released after it. */
static void
test_narrow(const char *dir)
{
    struct storage *st = open_store(dir, 1, 0, 0);
    struct storage_extent mine = put_one(st, 1, 2 * MIB);
    struct storage_extent other = put_one(st, 2, MIB);
    uint64_t pin = test_pin(st);
    storage_release(st, &other, 1);
    ASSERT_UEQ(pending_bytes(st), MIB); /* wide: held */
    ASSERT_EQ(storage_reader_narrow(st, pin, &mine, 1, 100, 100), 0);
    ASSERT_UEQ(pending_bytes(st), 0); /* narrowed to 'mine': let go */
    for (uint32_t k = 0; k < 20; k++) {
        struct storage_extent x = put_one(st, 10 + k, 3 * MIB);
        storage_release(st, &x, 1);
        ASSERT_UEQ(pending_bytes(st), 0);
    }
    storage_release(st, &mine, 1);
    ASSERT_UEQ(pending_bytes(st), 2 * MIB);
    storage_reader_unpin(st, pin);
    ASSERT_UEQ(pending_bytes(st), 0);
    ASSERT_UEQ(test_free_bytes(st), VOL);
    storage_close(st);
}

/* A reader maps a range over two extents: one span each, reads that stop
 * at extent ends, and a pin that lets go of what was read. */
static void
test_reader(const char *dir)
{
    struct storage *st = open_store(dir, 1, 0, 0);
    struct storage_extent e[2] = {put_one(st, 1, MIB + 100), put_one(st, 2, 2 * MIB)};
    uint64_t pin = test_pin(st);
    struct storage_reader *rd = NULL;
    ASSERT_EQ(storage_reader_create(st, pin, e, 2, 0, 3 * MIB + 101, &rd), -ERANGE);
    ASSERT_EQ(storage_reader_create(st, pin, e, 2, 50, MIB + 100, &rd), 0);
    ASSERT(!storage_reader_is_one_span(rd));
    struct storage_send_span span;
    ASSERT_EQ(storage_reader_span(rd, 0, &span), 0);
    ASSERT_UEQ(span.offset, e[0].offset + 50);
    ASSERT_UEQ(span.len, MIB + 50);
    ASSERT_EQ(storage_reader_span(rd, MIB + 50, &span), 0);
    ASSERT_UEQ(span.offset, e[1].offset);
    ASSERT_UEQ(span.len, 50);
    ASSERT_EQ(storage_reader_span(rd, MIB + 100, &span), -ERANGE);
    storage_reader_destroy(rd);

    ASSERT_EQ(storage_reader_create(st, pin, e, 2, 0, 3 * MIB + 100, &rd), 0);
    storage_release(st, e, 2);
    ASSERT_UEQ(pending_bytes(st), 3 * MIB + 4096);
    uint8_t *buf = malloc(MIB), *want = malloc(MIB);
    uint64_t pos = 0;
    while (pos < MIB + 100) {
        ssize_t n = storage_reader_read(rd, pos, buf, MIB);
        ASSERT(n > 0);
        ASSERT(pos + (uint64_t)n <= MIB + 100);
        pattern_fill(1, pos, want, (size_t)n);
        ASSERT_MEM_EQ(buf, want, (size_t)n);
        pos += (uint64_t)n;
    }
    /* The first extent is read: the pin no longer holds it. */
    ASSERT_UEQ(pending_bytes(st), 2 * MIB);
    ASSERT_EQ(storage_reader_read(rd, pos, buf, 1000), 1000);
    pattern_fill(2, 0, want, 1000);
    ASSERT_MEM_EQ(buf, want, 1000);
    ASSERT_EQ(storage_reader_read(rd, 3 * MIB + 100, buf, 1000), 0);
    storage_reader_destroy(rd);
    storage_reader_unpin(st, pin);
    ASSERT_UEQ(pending_bytes(st), 0);
    free(buf);
    free(want);
    storage_close(st);
}

/* The table never grows: a full table refuses pins; stale handles are
 * refused, and dropping one is harmless. */
static void
test_table_bounded(const char *dir)
{
    struct storage *st = open_store(dir, 1, 2, 0);
    uint64_t a = test_pin(st), b = test_pin(st), c = 0;
    ASSERT_EQ(storage_reader_pin(st, &c), -EAGAIN);
    storage_reader_unpin(st, a);
    ASSERT_EQ(storage_reader_pin(st, &c), 0);
    ASSERT(c != a); /* same slot, new serial */
    struct storage_extent x = put_one(st, 1, MIB);
    ASSERT_EQ(storage_reader_narrow(st, a, &x, 1, 0, 1), -ESTALE);
    storage_reader_unpin(st, a);
    struct storage_stats s;
    storage_stats_get(st, &s);
    ASSERT_EQ(s.n_pins, 2);
    storage_reader_unpin(st, b);
    storage_reader_unpin(st, c);
    storage_stats_get(st, &s);
    ASSERT_EQ(s.n_pins, 0);
    storage_release(st, &x, 1);
    storage_close(st);
}

/* A streamed reader idle past the timeout is revoked: its space comes back
 * and its next read fails. A pin whose span went out (zero copy) stays. */
static void
test_revoke(const char *dir)
{
    struct storage *st = open_store(dir, 1, 2, 50);
    struct storage_extent a = put_one(st, 1, 4 * MIB);
    struct storage_extent b = put_one(st, 2, 4 * MIB);
    uint64_t pa = test_pin(st), pb = test_pin(st);
    struct storage_reader *ra = NULL, *rb = NULL;
    ASSERT_EQ(storage_reader_create(st, pa, &a, 1, 0, a.len, &ra), 0);
    ASSERT_EQ(storage_reader_create(st, pb, &b, 1, 0, b.len, &rb), 0);
    struct storage_send_span span;
    ASSERT_EQ(storage_reader_span(rb, 0, &span), 0); /* rb is sent zero-copy */
    uint8_t buf[100];
    ASSERT_EQ(storage_reader_read(ra, 0, buf, sizeof(buf)), 100);
    storage_release(st, &a, 1);
    storage_release(st, &b, 1);
    ASSERT_UEQ(pending_bytes(st), 8 * MIB);

    sleep_ms(120);
    /* Space is needed: the allocation looks for idle pins first. */
    struct storage_writer *w = NULL;
    ASSERT_EQ(storage_writer_create(st, VOL - 4 * MIB, &w), 0);
    storage_writer_destroy(w, false);
    ASSERT_UEQ(pending_bytes(st), 4 * MIB); /* b's pin stays */
    ASSERT_EQ(storage_reader_read(ra, 100, buf, sizeof(buf)), -ESTALE);
    /* The table had room again at once. */
    uint64_t pc = test_pin(st);
    storage_reader_unpin(st, pc);
    storage_reader_unpin(st, pa); /* revoked: a no-op */
    storage_reader_destroy(ra);
    storage_reader_destroy(rb);
    storage_reader_unpin(st, pb);
    ASSERT_UEQ(pending_bytes(st), 0);
    ASSERT_UEQ(test_free_bytes(st), VOL);
    storage_close(st);
}

/* Writes 'size' bytes of pattern 'seed' by a writer asked to start at
 * 'offset' of volume 0, commits it and returns its one extent. */
static struct storage_extent
put_at(struct storage *st, uint32_t seed, uint64_t size, uint64_t offset)
{
    struct storage_writer *w = NULL;
    ASSERT_EQ(storage_writer_create(st, size, &w), 0);
    storage_writer_place(w, 0, offset);
    uint8_t *buf = malloc(size);
    pattern_fill(seed, 0, buf, size);
    ASSERT_EQ(storage_writer_write(w, buf, size), 0);
    free(buf);
    ASSERT_EQ(storage_writer_finish(w), 0);
    const struct storage_extent *e;
    ASSERT_EQ(storage_writer_extents(w, &e), 1);
    struct storage_extent out = e[0];
    storage_writer_destroy(w, true);
    return out;
}

/* Parts written at their slots, out of order, are one span once joined in
 * object order; a slot already taken places the writer elsewhere; extents
 * adjacent on disk but with padding between (an unaligned length) are not
 * joined. */
static void
test_placed(const char *dir)
{
    struct storage *st = open_store(dir, 1, 0, 0);
    uint32_t vol;
    uint64_t base, room;
    ASSERT_EQ(storage_free_largest(st, &vol, &base, &room), 0);
    ASSERT_UEQ(vol, 0);
    ASSERT_UEQ(room, VOL);
    struct storage_extent e[4];
    e[2] = put_at(st, 3, MIB, base + 2 * MIB);
    e[0] = put_at(st, 1, MIB, base);
    e[3] = put_at(st, 4, 1000, base + 3 * MIB);
    e[1] = put_at(st, 2, MIB, base + MIB);
    for (int i = 0; i < 4; i++)
        ASSERT_UEQ(e[i].offset, base + (uint64_t)i * MIB);
    ASSERT_EQ(storage_free_largest(st, &vol, &base, &room), 0);
    ASSERT_UEQ(room, VOL - 3 * MIB - STORAGE_ALIGN);

    uint64_t pin = test_pin(st);
    struct storage_reader *rd = NULL;
    ASSERT_EQ(storage_reader_create(st, pin, e, 4, 100, 3 * MIB + 800, &rd), 0);
    ASSERT(storage_reader_is_one_span(rd));
    struct storage_send_span span;
    ASSERT_EQ(storage_reader_span(rd, 0, &span), 0);
    ASSERT_UEQ(span.offset, e[0].offset + 100);
    ASSERT_UEQ(span.len, 3 * MIB + 800);
    uint8_t *got = malloc(2 * MIB), *want = malloc(MIB);
    ASSERT_EQ(storage_reader_read(rd, MIB - 100, got, 2 * MIB), 2 * MIB);
    pattern_fill(2, 0, want, MIB);
    ASSERT_MEM_EQ(got, want, MIB);
    pattern_fill(3, 0, want, MIB);
    ASSERT_MEM_EQ(got + MIB, want, MIB);
    storage_reader_destroy(rd);

    /* Out of object order: two spans. */
    struct storage_extent swapped[2] = {e[1], e[0]};
    ASSERT_EQ(storage_reader_create(st, pin, swapped, 2, 0, 2 * MIB, &rd), 0);
    ASSERT(!storage_reader_is_one_span(rd));
    storage_reader_destroy(rd);
    storage_reader_unpin(st, pin);

    /* A taken slot: the writer goes elsewhere. */
    struct storage_extent again = put_at(st, 5, MIB, e[1].offset);
    ASSERT(again.offset != e[1].offset);
    storage_release(st, &again, 1);

    /* An unaligned extent followed by the next allocation is not joined. */
    struct storage_extent odd[2];
    odd[0] = put_at(st, 6, 5000, base);
    odd[1] = put_at(st, 7, MIB, base + 2 * STORAGE_ALIGN);
    ASSERT_UEQ(odd[1].offset, odd[0].offset + ALIGN_UP(odd[0].len, STORAGE_ALIGN));
    pin = test_pin(st);
    ASSERT_EQ(storage_reader_create(st, pin, odd, 2, 0, 5000 + MIB, &rd), 0);
    ASSERT(!storage_reader_is_one_span(rd));
    ASSERT_EQ(storage_reader_read(rd, 4000, got, 2 * MIB), 1000);
    storage_reader_destroy(rd);
    storage_reader_unpin(st, pin);
    storage_release(st, odd, 2);
    storage_release(st, e, 4);
    ASSERT_UEQ(test_free_bytes(st), VOL);
    free(got);
    free(want);
    storage_close(st);
}

int
main(void)
{
    static const struct storage_test_case cases[] = {
        {"narrow", test_narrow}, {"reader", test_reader}, {"table_bounded", test_table_bounded},
        {"revoke", test_revoke}, {"placed", test_placed},
    };
    return storage_test_run("storage-pin", LOG_ERROR, cases, ARRAY_LEN(cases));
}
