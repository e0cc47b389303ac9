/*
 * test_date.c: common/date.c, the one parser and formatter of HTTP and
 * SigV4 dates. http_date_parse reads back every http_date_format output
 * over a seeded sweep, accepts the three RFC 9110 forms and the ISO 8601
 * forms conditional headers may carry, and refuses what the two parsers
 * it replaced disagreed on in AWS's favour (impossible dates, a bogus
 * weekday, another zone); amz_date_parse/format round-trip likewise.
 */
#include "common/common.h"
#include "tests/lib/test.h"

#include <stdlib.h>
#include <time.h>

static int64_t
parse(const char *s)
{
    int64_t t = -12345;
    if (http_date_parse(slice_from_cstr(s), &t) != 0)
        return -12345;
    return t;
}

static void
refused(const char *s)
{
    int64_t t;
    if (http_date_parse(slice_from_cstr(s), &t) == 0)
        TEST_FAIL("http_date_parse(\"%s\") accepted it as %" PRId64, s, t);
}

static uint64_t
next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void
test_forms(void)
{
    const int64_t t = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
    ASSERT_EQ(parse("Sun, 06 Nov 1994 08:49:37 GMT"), t);
    ASSERT_EQ(parse("Sunday, 06-Nov-94 08:49:37 GMT"), t);
    ASSERT_EQ(parse("Sun Nov  6 08:49:37 1994"), t);
    ASSERT_EQ(parse("Sun Nov 06 08:49:37 1994"), t);
    ASSERT_EQ(parse("1994-11-06T08:49:37Z"), t);
    ASSERT_EQ(parse("1994-11-06T08:49:37.000Z"), t);
    /* What the SigV4 parser allowed: no weekday, a one-digit day, any case. */
    ASSERT_EQ(parse("06 Nov 1994 08:49:37 GMT"), t);
    ASSERT_EQ(parse("Sun, 6 Nov 1994 08:49:37 GMT"), t);
    ASSERT_EQ(parse("sun, 06 NOV 1994 08:49:37 gmt"), t);
    ASSERT_EQ(parse("  Sun, 06 Nov 1994 08:49:37 GMT  "), t);
    /* The weekday is not checked against the date (neither parser did). */
    ASSERT_EQ(parse("Mon, 06 Nov 1994 08:49:37 GMT"), t);
    /* RFC 850 two-digit years as POSIX %y. */
    ASSERT_EQ(parse("Thursday, 01-Jan-70 00:00:00 GMT"), 0);
    ASSERT_EQ(parse("Saturday, 01-Jan-00 00:00:00 GMT"), 946684800);
    ASSERT_EQ(parse("Fri, 24 May 2013 00:00:00 GMT"), 1369353600);
    ASSERT_EQ(parse("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
    ASSERT_EQ(parse("Wed, 31 Dec 1969 23:59:59 GMT"), -1);
    ASSERT_EQ(parse("Tue, 29 Feb 2000 12:00:00 GMT"), 951825600);
    ASSERT_EQ(parse("Fri, 31 Dec 9999 23:59:59 GMT"), 253402300799);

    refused("");
    refused("   ");
    refused("Fri, 24 Mai 2013 00:00:00 GMT");
    refused("Fri, 24 May 2013 00:00:00 PST");
    refused("Fri, 24 May 2013 00:00:00 +0000");
    refused("Fri, 24 May 2013 00:00:00");
    refused("Fri, 24 May 2013 00:00 GMT");
    refused("Xyz, 24 May 2013 00:00:00 GMT"); /* SigV4's parser skipped anything before ',' */
    refused("Fri, 32 May 2013 00:00:00 GMT");
    refused("Fri, 00 May 2013 00:00:00 GMT");
    refused("Fri, 31 Apr 2013 00:00:00 GMT"); /* strptime + timegm made it May 1 */
    refused("Fri, 29 Feb 2013 00:00:00 GMT");
    refused("Fri, 24 May 2013 24:00:00 GMT");
    refused("Fri, 24 May 2013 23:60:00 GMT");
    refused("Fri, 24 May 13 00:00:00 GMT");
    refused("Fri, 24 May 2013 00:00:00 GMT x");
    refused("Fri,, 24 May 2013 00:00:00 GMT");
    refused("2013-05-24T00:00:00");
    refused("2013-05-24T00:00:00.0Z");
    refused("2013-05-24 00:00:00Z");
    refused("Sun Nov  6 08:49:37 94");
    refused("1369353600");
}

static void
test_round_trips(void)
{
    char text[40];
    uint64_t x = 0x9E3779B97F4A7C15ull;
    const int64_t lo = -62167219200, hi = 253402300799; /* years 0000 to 9999 */
    for (int i = 0; i < 300000; i++) {
        int64_t s = lo + (int64_t)(next_rand(&x) % (uint64_t)(hi - lo + 1));
        http_date_format(s, text);
        int64_t back;
        if (http_date_parse(slice_from_cstr(text), &back) != 0 || back != s)
            TEST_FAIL("\"%s\" (%" PRId64 ") did not parse back", text, s);
    }
    /* amz dates: format, parse, and agree with strftime. */
    for (int i = 0; i < 100000; i++) {
        int64_t s = (int64_t)(next_rand(&x) % (uint64_t)hi);
        char want[17];
        time_t t = (time_t)s;
        struct tm tm;
        ASSERT(gmtime_r(&t, &tm) != NULL);
        strftime(want, sizeof(want), "%Y%m%dT%H%M%SZ", &tm);
        amz_date_format(s, text);
        ASSERT_STR_EQ(text, want);
        int64_t back;
        ASSERT_EQ(amz_date_parse(slice_from_cstr(text), &back), 0);
        ASSERT_EQ(back, s);
    }
    int64_t t;
    ASSERT_EQ(amz_date_parse(SLICE_LIT("20130524T000000Z"), &t), 0);
    ASSERT_EQ(t, 1369353600);
    static const char *bad[] = {"20130524T000000",  "20130524T000000z",  "20130532T000000Z",
                                "20130229T000000Z", "2013-05-24T000000", "20130524T240000Z",
                                "20130524 000000Z", "20130524T000000Zx", ""};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++)
        if (amz_date_parse(slice_from_cstr(bad[i]), &t) == 0)
            TEST_FAIL("amz_date_parse(\"%s\") accepted it", bad[i]);
    amz_date_format(-5, text);
    ASSERT_STR_EQ(text, "19700101T000000Z");
}

/* Random text from the alphabet of dates: never read out of bounds (run
 * under the sanitizers), and whatever is accepted formats and parses back
 * to the same instant. */
static void
test_junk(void)
{
    static const char alpha[] = "0123456789 ,:-.TZGMTSunMonNovFebday";
    uint64_t x = 0xD1B54A32D192ED03ull;
    for (int i = 0; i < 300000; i++) {
        char text[40] = {0}, out[40];
        size_t len = next_rand(&x) % 36;
        for (size_t k = 0; k < len; k++)
            text[k] = alpha[next_rand(&x) % (sizeof(alpha) - 1)];
        char *heap = xmalloc(len ? len : 1); /* exact size, so ASan sees any overread */
        memcpy(heap, text, len);
        int64_t t, back;
        if (http_date_parse((struct slice){heap, len}, &t) == 0) {
            http_date_format(t, out);
            ASSERT_EQ(http_date_parse(slice_from_cstr(out), &back), 0);
            ASSERT_EQ(back, t);
        }
        if (amz_date_parse((struct slice){heap, len}, &t) == 0) {
            amz_date_format(t, out);
            ASSERT_EQ(amz_date_parse(slice_from_cstr(out), &back), 0);
            ASSERT_EQ(back, t);
        }
        free(heap);
    }
}

int
main(void)
{
    test_forms();
    test_round_trips();
    test_junk();
    return 0;
}
