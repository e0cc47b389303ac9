/*
 * test_range.c: unit tests of server/range.c, the Range header of GetObject.
 * Covers every range_status, clamping, suffixes, size 0, numbers past
 * UINT64_MAX, multiple ranges, whitespace, and both formatters.
 */
#include "server/range.h"
#include "tests/lib/test.h"

/* Parses the C string 'h' against 'size'; on RANGE_OK checks the result. */
static void
expect(const char *h, uint64_t size, enum range_status want, uint64_t first, uint64_t last)
{
    struct range r = {12345, 67890};
    enum range_status got = range_parse(slice_from_cstr(h), size, &r);

    if (got != want)
        TEST_FAIL("range_parse(\"%s\", %" PRIu64 "): status %d, want %d", h, size, (int)got,
                  (int)want);
    if (want == RANGE_OK && (r.first != first || r.last != last))
        TEST_FAIL("range_parse(\"%s\", %" PRIu64 "): %" PRIu64 "-%" PRIu64 ", want %" PRIu64
                  "-%" PRIu64,
                  h, size, r.first, r.last, first, last);
    if (want != RANGE_OK && (r.first != 12345 || r.last != 67890))
        TEST_FAIL("range_parse(\"%s\") wrote *out without RANGE_OK", h);
}

static void
test_none(void)
{
    struct range r;
    ASSERT_EQ(range_parse(SLICE_NULL, 10, &r), RANGE_NONE);
    expect("", 10, RANGE_NONE, 0, 0);
    expect("", 0, RANGE_NONE, 0, 0);
}

static void
test_ok(void)
{
    expect("bytes=0-0", 10, RANGE_OK, 0, 0);
    expect("bytes=0-1", 10, RANGE_OK, 0, 1);
    expect("bytes=2-5", 10, RANGE_OK, 2, 5);
    expect("bytes=0-9", 10, RANGE_OK, 0, 9);
    expect("bytes=9-9", 10, RANGE_OK, 9, 9);
    /* last beyond the end is clamped */
    expect("bytes=0-10", 10, RANGE_OK, 0, 9);
    expect("bytes=3-1000000", 10, RANGE_OK, 3, 9);
    /* open-ended */
    expect("bytes=0-", 10, RANGE_OK, 0, 9);
    expect("bytes=7-", 10, RANGE_OK, 7, 9);
    expect("bytes=9-", 10, RANGE_OK, 9, 9);
    /* suffix */
    expect("bytes=-1", 10, RANGE_OK, 9, 9);
    expect("bytes=-3", 10, RANGE_OK, 7, 9);
    expect("bytes=-10", 10, RANGE_OK, 0, 9);
    expect("bytes=-11", 10, RANGE_OK, 0, 9);
    expect("bytes=-1000000", 1, RANGE_OK, 0, 0);
    /* leading zeros are still decimal */
    expect("bytes=007-0008", 10, RANGE_OK, 7, 8);
    /* the unit is case-insensitive (RFC 9110 §14.1) */
    expect("Bytes=1-2", 10, RANGE_OK, 1, 2);
    expect("BYTES=1-2", 10, RANGE_OK, 1, 2);
    /* the largest objects */
    expect("bytes=18446744073709551613-18446744073709551614", UINT64_MAX, RANGE_OK, UINT64_MAX - 2,
           UINT64_MAX - 1);
    expect("bytes=-18446744073709551615", UINT64_MAX, RANGE_OK, 0, UINT64_MAX - 1);
    expect("bytes=-1", UINT64_MAX, RANGE_OK, UINT64_MAX - 1, UINT64_MAX - 1);
}

static void
test_overflow(void)
{
    /* A last-pos or suffix past UINT64_MAX is just "beyond the end". */
    expect("bytes=0-99999999999999999999999", 10, RANGE_OK, 0, 9);
    expect("bytes=0-18446744073709551615", 10, RANGE_OK, 0, 9);
    expect("bytes=0-18446744073709551616", 10, RANGE_OK, 0, 9);
    expect("bytes=5-184467440737095516150", 10, RANGE_OK, 5, 9);
    expect("bytes=-99999999999999999999999", 10, RANGE_OK, 0, 9);
    expect("bytes=-18446744073709551616", 10, RANGE_OK, 0, 9);
    /* A first-pos past UINT64_MAX lies beyond any object. */
    expect("bytes=99999999999999999999999-", 10, RANGE_UNSATISFIABLE, 0, 0);
    expect("bytes=18446744073709551616-", UINT64_MAX, RANGE_UNSATISFIABLE, 0, 0);
    expect("bytes=99999999999999999999999-99999999999999999999999", 10, RANGE_UNSATISFIABLE, 0, 0);
    /* Order is compared exactly even when both overflow. */
    expect("bytes=99999999999999999999999-99999999999999999999998", 10, RANGE_IGNORE, 0, 0);
    expect("bytes=99999999999999999999999-9", 10, RANGE_IGNORE, 0, 0);
    expect("bytes=00000000000000000000000000001-000000000000000000000000000002", 10, RANGE_OK, 1,
           2);
    expect("bytes=00000000000000000000000000002-000000000000000000000000000001", 10, RANGE_IGNORE,
           0, 0);
}

static void
test_unsatisfiable(void)
{
    expect("bytes=10-", 10, RANGE_UNSATISFIABLE, 0, 0);
    expect("bytes=10-20", 10, RANGE_UNSATISFIABLE, 0, 0);
    expect("bytes=11-11", 10, RANGE_UNSATISFIABLE, 0, 0);
    expect("bytes=-0", 10, RANGE_UNSATISFIABLE, 0, 0);
    expect("bytes=-000", 10, RANGE_UNSATISFIABLE, 0, 0);
    /* size 0: every valid range */
    expect("bytes=0-", 0, RANGE_UNSATISFIABLE, 0, 0);
    expect("bytes=0-0", 0, RANGE_UNSATISFIABLE, 0, 0);
    expect("bytes=0-100", 0, RANGE_UNSATISFIABLE, 0, 0);
    expect("bytes=-1", 0, RANGE_UNSATISFIABLE, 0, 0);
    expect("bytes=-0", 0, RANGE_UNSATISFIABLE, 0, 0);
}

static void
test_ignore(void)
{
    static const char *const bad[] = {
        "bytes",          "bytes=",      "bytes=-",    "bytes=--1",
        "bytes=1",        "bytes=a-b",   "bytes=1-a",  "bytes=0x1-2",
        "bytes=+1-2",     "bytes=1-+2",  "bytes=1--2", "bytes=1-2-",
        "bytes=-1-2",     "bytes=1.0-2", "bytes =1-2", "bytes= =1-2",
        "bytes=1 -2",     "bytes=1- 2",  "bytes=- 1",  "bytes:1-2",
        "bites=1-2",      "items=0-1",   "byte=0-1",   "bytesx=0-1",
        "=0-1",           "0-1",         "none",       "bytes=0-1,5-6",
        "bytes=0-1, 5-6", "bytes=0-1,",  ",bytes=0-1", "bytes=,0-1",
        "bytes=-1,-2",    "bytes=5-3",   "bytes=1-0",  "bytes=0-1;",
        "bytes=0-1\r\n",  "bytes=\n0-1", " ",          "\t",
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        expect(bad[i], 10, RANGE_IGNORE, 0, 0);
        /* syntax is judged before size: size 0 does not turn these into 416 */
        expect(bad[i], 0, RANGE_IGNORE, 0, 0);
    }
    /* last < first is ignored even when first is past the end */
    expect("bytes=20-15", 10, RANGE_IGNORE, 0, 0);
    /* bytes embedded NUL: not one range */
    struct range r;
    ASSERT_EQ(range_parse((struct slice){"bytes=0-1\0", 10}, 10, &r), RANGE_IGNORE);
    ASSERT_EQ(range_parse((struct slice){"bytes=0\0-1", 10}, 10, &r), RANGE_IGNORE);
    /* the slice is not NUL-terminated: nothing past 'len' is read */
    ASSERT_EQ(range_parse((struct slice){"bytes=0-15", 9}, 10, &r), RANGE_OK);
    ASSERT_UEQ(r.last, 1);
}

static void
test_whitespace(void)
{
    expect("bytes= 0-1", 10, RANGE_OK, 0, 1);
    expect("bytes=\t0-1", 10, RANGE_OK, 0, 1);
    expect("bytes=  \t 2-", 10, RANGE_OK, 2, 9);
    expect("bytes=0-1 ", 10, RANGE_OK, 0, 1);
    expect("bytes=0-1\t ", 10, RANGE_OK, 0, 1);
    expect("bytes= -3 ", 10, RANGE_OK, 7, 9);
    expect(" bytes=0-1", 10, RANGE_OK, 0, 1);
    expect(" \tbytes= 0-1 \t", 10, RANGE_OK, 0, 1);
    expect("bytes= 0- ", 10, RANGE_OK, 0, 9);
    expect("bytes= 10- ", 10, RANGE_UNSATISFIABLE, 0, 0);
}

static void
test_format(void)
{
    char out[80]; /* 64 covers objects below 10^19 bytes; UINT64_MAX needs 69 */
    struct range r = {0, 9};

    ASSERT_EQ(range_format_content_range(&r, 10, out, sizeof(out)), 12);
    ASSERT_STR_EQ(out, "bytes 0-9/10");
    ASSERT_EQ(range_format_header(&r, out, sizeof(out)), 9);
    ASSERT_STR_EQ(out, "bytes=0-9");

    r = (struct range){UINT64_MAX - 1, UINT64_MAX - 1};
    ASSERT_EQ(range_format_content_range(&r, UINT64_MAX, out, sizeof(out)), 68);
    ASSERT_STR_EQ(out, "bytes 18446744073709551614-18446744073709551614/18446744073709551615");
    ASSERT_EQ(range_format_content_range(&r, UINT64_MAX, out, 64), -1);
    ASSERT_EQ(range_format_header(&r, out, sizeof(out)), 47);
    ASSERT_STR_EQ(out, "bytes=18446744073709551614-18446744073709551614");

    /* too small a buffer is reported, and the output stays terminated */
    r = (struct range){100, 199};
    ASSERT_EQ(range_format_content_range(&r, 1000, out, 8), -1);
    ASSERT_EQ(strlen(out), 7);
    ASSERT_EQ(range_format_header(&r, out, 4), -1);
    ASSERT_EQ(range_format_header(&r, out, 14), 13);
    ASSERT_EQ(range_format_header(&r, out, 13), -1);
}

static void
test_round_trip(void)
{
    static const uint64_t sizes[] = {1, 2, 10, 1000, UINT64_MAX / 2, UINT64_MAX};
    char out[64];

    for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
        uint64_t size = sizes[i];
        uint64_t firsts[] = {0, size / 3, size - 1};
        for (size_t j = 0; j < ARRAY_LEN(firsts); j++) {
            struct range r = {firsts[j], size - 1 - (size - 1 - firsts[j]) / 2}, back;
            ASSERT(range_format_header(&r, out, sizeof(out)) > 0);
            ASSERT_EQ(range_parse(slice_from_cstr(out), size, &back), RANGE_OK);
            ASSERT_UEQ(back.first, r.first);
            ASSERT_UEQ(back.last, r.last);
        }
    }
}

int
main(void)
{
    test_none();
    test_ok();
    test_overflow();
    test_unsatisfiable();
    test_ignore();
    test_whitespace();
    test_format();
    test_round_trip();
    return 0;
}
