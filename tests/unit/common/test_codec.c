/*
 * test_codec.c: the hand-written formatters of common/codec.c against the
 * libc functions they replace on the hot path: http_date_format against
 * gmtime_r + strftime over a seeded sweep of instants from year 1000 to 9999
 * (every day boundary near the epoch, leap days, century years; before
 * 1000 strftime drops the leading zeros RFC 9110's 4DIGIT year keeps), and
 * u64_format against snprintf.
 */
#include "common/common.h"
#include "tests/lib/test.h"

#include <time.h>

static void
check_date(int64_t s)
{
    char want[64], got[64];
    time_t t = (time_t)s;
    struct tm tm;
    ASSERT(gmtime_r(&t, &tm) != NULL);
    strftime(want, sizeof(want), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    memset(got, 'x', sizeof(got));
    size_t n = http_date_format(s, got);
    ASSERT_EQ(n, 29);
    ASSERT_EQ(got[29], '\0');
    if (strcmp(got, want) != 0)
        TEST_FAIL("http_date_format(%" PRId64 ") = \"%s\", strftime says \"%s\"", s, got, want);
}

static uint64_t
next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

int
main(void)
{
    /* Year 1000-01-01 to 9999-12-31 23:59:59. */
    const int64_t lo = -30610224000, hi = 253402300799;
    char year0[32];
    http_date_format(-62167219200, year0);
    ASSERT_STR_EQ(year0, "Sat, 01 Jan 0000 00:00:00 GMT");
    check_date(0);
    check_date(lo);
    check_date(hi);
    check_date(951782400);  /* 2000-02-29 */
    check_date(4107542400); /* 2100-03-01 (2100 is not leap) */
    check_date(-1);
    for (int64_t s = -86400 * 800; s < 86400 * 800; s += 86399)
        check_date(s);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 2000000; i++)
        check_date(lo + (int64_t)(next_rand(&x) % (uint64_t)(hi - lo + 1)));

    char buf[32], want[32];
    uint64_t vals[] = {0, 1, 9, 10, 99, 100, 65535, 1073741823, UINT64_MAX};
    for (size_t i = 0; i < ARRAY_LEN(vals); i++) {
        size_t n = u64_format(vals[i], buf);
        buf[n] = '\0';
        snprintf(want, sizeof(want), "%" PRIu64, vals[i]);
        ASSERT_STR_EQ(buf, want);
    }
    for (int i = 0; i < 100000; i++) {
        uint64_t v = next_rand(&x) >> (next_rand(&x) % 64);
        size_t n = u64_format(v, buf);
        buf[n] = '\0';
        snprintf(want, sizeof(want), "%" PRIu64, v);
        ASSERT_STR_EQ(buf, want);
    }
    printf("ok: http_date_format matches strftime, u64_format matches snprintf\n");
    return 0;
}
