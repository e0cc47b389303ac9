/*
 * test_uri.c: common/uri.c (the one URI percent-coder), the hex digit
 * helper and the ASCII case folding of common/: SigV4's encoding (the
 * unreserved set kept, upper-case %XX, '/' kept only when asked), strict
 * decoding (a malformed escape is an error, never passed through as the
 * old SigV4 copy did), decode(encode(x)) == x over random bytes, and
 * in-place decoding.
 */
#include "common/common.h"
#include "tests/lib/test.h"

#include <stdlib.h>

static void
expect_encode(const char *in, bool keep_slash, const char *want)
{
    struct buf b;
    buf_init(&b);
    buf_append_str(&b, "pre:");
    uri_encode(&b, in, strlen(in), keep_slash);
    if (strcmp(b.ptr + 4, want) != 0 || strncmp(b.ptr, "pre:", 4) != 0)
        TEST_FAIL("uri_encode(\"%s\", %d) = \"%s\", want \"%s\"", in, keep_slash, b.ptr, want);
    buf_cleanup(&b);
}

static void
expect_decode(const char *in, const char *want)
{
    char out[256];
    long n = uri_decode(in, strlen(in), out);
    if (want == NULL) {
        if (n >= 0)
            TEST_FAIL("uri_decode(\"%s\") accepted it", in);
        return;
    }
    if (n < 0 || (size_t)n != strlen(want) || memcmp(out, want, (size_t)n) != 0)
        TEST_FAIL("uri_decode(\"%s\") = %ld, want \"%s\"", in, n, want);
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
    expect_encode("", false, "");
    expect_encode("AZaz09-_.~", false, "AZaz09-_.~");
    expect_encode("a b/c~d+\xc3\xa9", true, "a%20b/c~d%2B%C3%A9");
    expect_encode("x/y=z", false, "x%2Fy%3Dz");
    expect_encode("%&?#*!'()", false, "%25%26%3F%23%2A%21%27%28%29");
    expect_encode("\x01\x7f\xff", false, "%01%7F%FF");

    expect_decode("", "");
    expect_decode("plain", "plain");
    expect_decode("a%20b%2Fc", "a b/c");
    expect_decode("%c3%A9", "\xc3\xa9");
    expect_decode("1+2", "1+2"); /* '+' is a literal plus in S3 queries */
    expect_decode("%25", "%");
    expect_decode("%", NULL);
    expect_decode("a%", NULL);
    expect_decode("a%2", NULL);
    expect_decode("%zz", NULL);
    expect_decode("%2g", NULL);
    expect_decode("ok%20then%", NULL);
    expect_decode("%%41", NULL);

    /* Round trips over random bytes, both slash modes, and in place. */
    uint64_t x = 0x243F6A8885A308D3ull;
    struct buf b;
    buf_init(&b);
    for (int i = 0; i < 20000; i++) {
        char raw[64], dec[64 * 3];
        size_t len = next_rand(&x) % sizeof(raw);
        for (size_t k = 0; k < len; k++)
            raw[k] = (char)next_rand(&x);
        b.len = 0;
        uri_encode(&b, raw, len, i & 1);
        ASSERT_EQ(strlen(b.ptr), b.len);
        long n = uri_decode(b.ptr, b.len, dec);
        ASSERT_EQ(n, (long)len);
        ASSERT(memcmp(dec, raw, len) == 0);
        n = uri_decode(b.ptr, b.len, b.ptr);
        ASSERT_EQ(n, (long)len);
        ASSERT(memcmp(b.ptr, raw, len) == 0);
    }
    buf_cleanup(&b);
    /* Junk never reads past its end (exact-size heap copies, sanitizers). */
    for (int i = 0; i < 100000; i++) {
        static const char alpha[] = "%0aF+g/";
        size_t len = next_rand(&x) % 12;
        char *in = xmalloc(len ? len : 1), out[16];
        for (size_t k = 0; k < len; k++)
            in[k] = alpha[next_rand(&x) % (sizeof(alpha) - 1)];
        long n = uri_decode(in, len, out);
        ASSERT(n >= -1 && n <= (long)len);
        free(in);
    }
    char to[16];
    ASSERT(uri_encode_to(to, "a b", 3, false) == to + 5);
    ASSERT(memcmp(to, "a%20b", 5) == 0);

    /* Hex digits. */
    for (int c = 0; c < 256; c++) {
        int want = (c >= '0' && c <= '9')   ? c - '0'
                   : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                   : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                            : -1;
        ASSERT_EQ(hex_digit_value(c), want);
    }
    uint8_t raw[4];
    ASSERT_EQ(hex_decode("0aFf", 4, raw), 0);
    ASSERT_EQ(raw[0], 0x0a);
    ASSERT_EQ(raw[1], 0xff);
    ASSERT_EQ(hex_decode("0g", 2, raw), -1);
    ASSERT_EQ(hex_decode("0", 1, raw), -1);

    /* ASCII case folding: letters only ('_' and '@' are not letters). */
    ASSERT_EQ(slice_casecmp(SLICE_LIT("X-Amz-Date"), SLICE_LIT("x-amz-date")), 0);
    ASSERT(slice_casecmp(SLICE_LIT("a"), SLICE_LIT("ab")) < 0);
    ASSERT(slice_casecmp(SLICE_LIT("ab"), SLICE_LIT("A")) > 0);
    ASSERT(slice_casecmp(SLICE_LIT("x_a"), SLICE_LIT("x-a")) > 0);
    ASSERT(slice_casecmp(SLICE_LIT("x_a"), SLICE_LIT("x-A")) > 0);
    ASSERT(slice_casecmp(SLICE_LIT("_"), SLICE_LIT("a")) < 0); /* '_' | 0x20 would sort it last */
    ASSERT(slice_casecmp(SLICE_LIT("@"), SLICE_LIT("`")) < 0);
    ASSERT(slice_eq_nocase(SLICE_LIT("Content-MD5"), "content-md5"));
    ASSERT(!slice_eq_nocase(SLICE_LIT("content-md"), "content-md5"));
    ASSERT(!slice_eq_nocase(SLICE_LIT("_"), "\x7f"));
    ASSERT_EQ(ascii_lower('Q'), 'q');
    ASSERT_EQ(ascii_lower('['), '[');
    ASSERT_EQ(ascii_lower(0xC9), 0xC9);

    /* The splitter the query and header-list readers share. */
    struct slice rest = SLICE_LIT("a&&b=c&"), part;
    const char *want[] = {"a", "", "b=c"};
    size_t n = 0;
    while (slice_split_next(&rest, '&', &part)) {
        ASSERT(n < ARRAY_LEN(want));
        ASSERT(slice_eq(part, slice_from_cstr(want[n])));
        n++;
    }
    ASSERT_EQ(n, ARRAY_LEN(want));
    rest = SLICE_NULL;
    ASSERT(!slice_split_next(&rest, '&', &part));
    ASSERT(slice_eq(slice_trim(SLICE_LIT(" \t a b\t ")), SLICE_LIT("a b")));
    ASSERT_EQ(slice_trim(SLICE_LIT(" \t ")).len, 0);
    ASSERT_EQ(slice_trim(SLICE_NULL).len, 0);
    return 0;
}
