/*
 * test_chunked.c: auth/chunked.c on the AWS aws-chunked examples (signed,
 * signed with trailer), boto3's unsigned-trailer form, byte-by-byte versus
 * whole feeding, tampering, framing errors and end-of-input rules.
 */
#include "config.h"

#include "auth/auth.h"
#include "tests/lib/test.h"

#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

struct sink {
    char *data;
    size_t len, cap;
    int fail_after; /* callback fails once this many calls were made (0: never) */
    int calls;
};

static int
on_data(void *ctx, const char *p, size_t len)
{
    struct sink *s = ctx;
    s->calls++;
    if (s->fail_after && s->calls >= s->fail_after)
        return -1;
    ASSERT(s->len + len <= s->cap);
    memcpy(s->data + s->len, p, len);
    s->len += len;
    return 0;
}

static struct auth_verdict
verdict(enum auth_payload mode, const char *seed)
{
    struct auth_verdict v;
    uint8_t k1[32], k2[32];
    memset(&v, 0, sizeof(v));
    v.payload = mode;
    auth_hmac_sha256("AWS4" SK, strlen("AWS4" SK), "20130524", 8, k1);
    auth_hmac_sha256(k1, 32, "us-east-1", 9, k2);
    auth_hmac_sha256(k2, 32, "s3", 2, k1);
    auth_hmac_sha256(k1, 32, "aws4_request", 12, v.signing_key);
    snprintf(v.seed_signature, sizeof(v.seed_signature), "%s", seed);
    snprintf(v.amz_date, sizeof(v.amz_date), "20130524T000000Z");
    snprintf(v.scope, sizeof(v.scope), "20130524/us-east-1/s3/aws4_request");
    return v;
}

/* Split modes: 0 whole, 1 byte by byte, else pseudo-random pieces seeded by 'mode'. */
static enum auth_chunked_status
decode(struct auth_chunked *c, const char *in, size_t len, int mode, struct sink *s,
       size_t *consumed_total)
{
    enum auth_chunked_status st = AUTH_CHUNKED_AGAIN;
    size_t pos = 0;
    uint32_t x = (uint32_t)mode * 2654435761u;
    *consumed_total = 0;
    while (pos < len) {
        size_t n = len - pos;
        if (mode == 1) {
            n = 1;
        } else if (mode > 1) {
            x = x * 1103515245u + 12345u;
            n = MIN(n, 1 + (x >> 16) % 700);
        }
        size_t used = 0;
        st = auth_chunked_feed(c, in + pos, n, &used, on_data, s);
        ASSERT(used <= n);
        *consumed_total += used;
        if (st != AUTH_CHUNKED_AGAIN)
            break;
        ASSERT_EQ(used, n);
        pos += n;
    }
    return st;
}

struct body {
    char *p;
    size_t len;
};

static void
append(struct body *b, const char *s, size_t n)
{
    b->p = xrealloc(b->p, b->len + n + 1);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void
appends(struct body *b, const char *s)
{
    append(b, s, strlen(s));
}

static void
append_a(struct body *b, size_t n)
{
    b->p = xrealloc(b->p, b->len + n + 1);
    memset(b->p + b->len, 'a', n);
    b->len += n;
}

/* The three-chunk bodies of the AWS examples: 64 KiB + 1 KiB of 'a'. */
static struct body
doc_body(const char *const sig[3], const char *tail)
{
    struct body b = {NULL, 0};
    char line[128];
    snprintf(line, sizeof(line), "10000;chunk-signature=%s\r\n", sig[0]);
    appends(&b, line);
    append_a(&b, 65536);
    snprintf(line, sizeof(line), "\r\n400;chunk-signature=%s\r\n", sig[1]);
    appends(&b, line);
    append_a(&b, 1024);
    snprintf(line, sizeof(line), "\r\n0;chunk-signature=%s\r\n", sig[2]);
    appends(&b, line);
    appends(&b, tail);
    return b;
}

static enum auth_chunked_status
run(const struct auth_verdict *v, const struct body *b, int mode, struct sink *s,
    struct auth_chunked *c, size_t *consumed)
{
    s->len = 0;
    s->calls = 0;
    auth_chunked_init(c, v);
    return decode(c, b->p, b->len, mode, s, consumed);
}

static const char *const signed_sigs[3] = {
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
};
static const char *const trailer_sigs[3] = {
    "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
    "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
    "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
};
#define TRAILER_SIG "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435"

static void
test_signed(struct sink *s)
{
    struct auth_chunked c;
    size_t used;
    struct auth_verdict v =
        verdict(AUTH_PAYLOAD_STREAMING_SIGNED,
                "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    struct body b = doc_body(signed_sigs, "\r\n");
    ASSERT_EQ(b.len, 66824); /* the example's Content-Length */
    for (int mode = 0; mode < 6; mode++) {
        ASSERT_EQ(run(&v, &b, mode, s, &c, &used), AUTH_CHUNKED_DONE);
        ASSERT_EQ(used, b.len);
        ASSERT_EQ(s->len, 66560);
        ASSERT_EQ(auth_chunked_decoded_len(&c), 66560);
        for (size_t i = 0; i < s->len; i++)
            ASSERT(s->data[i] == 'a');
        ASSERT(auth_chunked_is_complete_at_eof(&c));
        ASSERT_EQ(auth_chunked_trailer(&c, "x-amz-checksum-crc32").len, 0);
    }
    /* Input after the end is left alone; feeding after DONE consumes nothing. */
    appends(&b, "GET / HTTP/1.1\r\n");
    ASSERT_EQ(run(&v, &b, 0, s, &c, &used), AUTH_CHUNKED_DONE);
    ASSERT_EQ(used, 66824);
    ASSERT_EQ(auth_chunked_feed(&c, "x", 1, &used, on_data, s), AUTH_CHUNKED_DONE);
    ASSERT_EQ(used, 0);
    b.len = 66824;

    /* Not complete before the final chunk; complete without the last CRLF. */
    ASSERT_EQ(run(&v, &(struct body){b.p, 66000}, 0, s, &c, &used), AUTH_CHUNKED_AGAIN);
    ASSERT(!auth_chunked_is_complete_at_eof(&c));
    ASSERT_EQ(run(&v, &(struct body){b.p, b.len - 2}, 0, s, &c, &used), AUTH_CHUNKED_AGAIN);
    ASSERT(auth_chunked_is_complete_at_eof(&c));

    /* Tampering: a data byte, a signature digit, swapped signatures. */
    for (int mode = 0; mode < 3; mode++) {
        b.p[66000] = 'b'; /* inside the second chunk */
        ASSERT_EQ(run(&v, &b, mode, s, &c, &used), AUTH_CHUNKED_BAD_SIGNATURE);
        b.p[66000] = 'a';
        b.p[100] = 'b'; /* inside the first chunk */
        ASSERT_EQ(run(&v, &b, mode, s, &c, &used), AUTH_CHUNKED_BAD_SIGNATURE);
        b.p[100] = 'a';
    }
    ASSERT_EQ(run(&v, &b, 0, s, &c, &used), AUTH_CHUNKED_DONE);
    struct body t =
        doc_body((const char *const[]){signed_sigs[0], signed_sigs[1], trailer_sigs[2]}, "\r\n");
    ASSERT_EQ(run(&v, &t, 0, s, &c, &used), AUTH_CHUNKED_BAD_SIGNATURE);
    ASSERT_EQ(s->len, 66560); /* all data came out before the last signature */
    free(t.p);
    t = doc_body((const char *const[]){signed_sigs[1], signed_sigs[0], signed_sigs[2]}, "\r\n");
    ASSERT_EQ(run(&v, &t, 1, s, &c, &used), AUTH_CHUNKED_BAD_SIGNATURE);
    ASSERT_EQ(s->len, 65536);
    /* The decoder stays failed. */
    ASSERT_EQ(auth_chunked_feed(&c, "0\r\n", 3, &used, on_data, s), AUTH_CHUNKED_BAD_SIGNATURE);
    free(t.p);
    /* Another seed (another request) breaks the chain. */
    struct auth_verdict v2 = v;
    v2.seed_signature[0] = '5';
    ASSERT_EQ(run(&v2, &b, 0, s, &c, &used), AUTH_CHUNKED_BAD_SIGNATURE);
    ASSERT_EQ(s->len, 65536);
    /* A chunk without a signature in signed mode. */
    t = (struct body){NULL, 0};
    appends(&t, "3\r\nabc\r\n0\r\n\r\n");
    ASSERT_EQ(run(&v, &t, 0, s, &c, &used), AUTH_CHUNKED_ERROR);
    free(t.p);
    /* Trailers are refused when the mode has none. */
    t = doc_body(signed_sigs, "x-amz-checksum-crc32:AAAAAA==\r\n\r\n");
    ASSERT_EQ(run(&v, &t, 0, s, &c, &used), AUTH_CHUNKED_ERROR);
    free(t.p);
    free(b.p);
}

static void
test_signed_trailer(struct sink *s)
{
    struct auth_chunked c;
    size_t used;
    struct auth_verdict v =
        verdict(AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER,
                "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
    const char *tail = "x-amz-checksum-crc32c:sOO8/Q==\r\n"
                       "x-amz-trailer-signature:" TRAILER_SIG "\r\n\r\n";
    struct body b = doc_body(trailer_sigs, tail);
    for (int mode = 0; mode < 6; mode++) {
        ASSERT_EQ(run(&v, &b, mode, s, &c, &used), AUTH_CHUNKED_DONE);
        ASSERT_EQ(used, b.len);
        ASSERT_EQ(s->len, 66560);
        struct slice tv = auth_chunked_trailer(&c, "X-Amz-Checksum-CRC32C");
        ASSERT(slice_eq(tv, SLICE_LIT("sOO8/Q==")));
        ASSERT_EQ(auth_chunked_trailer(&c, "x-amz-trailer-signature").len, 0);
    }
    /* Without the final CRLF: acceptable at EOF. */
    ASSERT_EQ(run(&v, &(struct body){b.p, b.len - 2}, 0, s, &c, &used), AUTH_CHUNKED_AGAIN);
    ASSERT(auth_chunked_is_complete_at_eof(&c));
    ASSERT(slice_eq(auth_chunked_trailer(&c, "x-amz-checksum-crc32c"), SLICE_LIT("sOO8/Q==")));
    /* Before the trailer signature: not acceptable. */
    ASSERT_EQ(run(&v, &(struct body){b.p, b.len - 93}, 0, s, &c, &used), AUTH_CHUNKED_AGAIN);
    ASSERT(!auth_chunked_is_complete_at_eof(&c));
    free(b.p);

    /* The checksum line ended by LF and an empty line before the signature. */
    b = doc_body(trailer_sigs, "x-amz-checksum-crc32c:sOO8/Q==\n\r\n"
                               "x-amz-trailer-signature:" TRAILER_SIG "\r\n\r\n");
    ASSERT_EQ(run(&v, &b, 1, s, &c, &used), AUTH_CHUNKED_DONE);
    free(b.p);
    /* A changed checksum value, a changed trailer signature, a missing one. */
    b = doc_body(trailer_sigs, "x-amz-checksum-crc32c:sOO8/R==\r\n"
                               "x-amz-trailer-signature:" TRAILER_SIG "\r\n\r\n");
    ASSERT_EQ(run(&v, &b, 0, s, &c, &used), AUTH_CHUNKED_BAD_SIGNATURE);
    free(b.p);
    b = doc_body(trailer_sigs, "x-amz-checksum-crc32c:sOO8/Q==\r\n"
                               "x-amz-trailer-signature:0" TRAILER_SIG "\r\n\r\n");
    ASSERT_EQ(run(&v, &b, 0, s, &c, &used), AUTH_CHUNKED_ERROR); /* 65 digits */
    free(b.p);
    b = doc_body(trailer_sigs, "x-amz-checksum-crc32c:sOO8/Q==\r\n\r\n");
    ASSERT_EQ(run(&v, &b, 0, s, &c, &used), AUTH_CHUNKED_AGAIN);
    ASSERT(!auth_chunked_is_complete_at_eof(&c));
    free(b.p);
    /* An unsigned trailer after the signature. */
    b = doc_body(trailer_sigs, "x-amz-checksum-crc32c:sOO8/Q==\r\n"
                               "x-amz-trailer-signature:" TRAILER_SIG "\r\nx-evil:1\r\n\r\n");
    ASSERT_EQ(run(&v, &b, 0, s, &c, &used), AUTH_CHUNKED_ERROR);
    free(b.p);
}

static void
test_unsigned_trailer(struct sink *s)
{
    struct auth_chunked c;
    size_t used;
    struct auth_verdict v = verdict(AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER, "");
    struct body b = {NULL, 0};
    /* What boto3 sends. */
    appends(&b, "4000\r\n");
    append_a(&b, 0x4000);
    appends(&b, "\r\n5\r\naaaaa\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n");
    for (int mode = 0; mode < 6; mode++) {
        ASSERT_EQ(run(&v, &b, mode, s, &c, &used), AUTH_CHUNKED_DONE);
        ASSERT_EQ(used, b.len);
        ASSERT_EQ(s->len, 0x4005);
        ASSERT(slice_eq(auth_chunked_trailer(&c, "x-amz-checksum-crc32"), SLICE_LIT("AAAAAA==")));
    }
    ASSERT_EQ(run(&v, &(struct body){b.p, b.len - 2}, 0, s, &c, &used), AUTH_CHUNKED_AGAIN);
    ASSERT(auth_chunked_is_complete_at_eof(&c));
    ASSERT_EQ(run(&v, &(struct body){b.p, b.len - 3}, 0, s, &c, &used), AUTH_CHUNKED_AGAIN);
    ASSERT(!auth_chunked_is_complete_at_eof(&c));
    free(b.p);

    /* Signatures and extensions are ignored in unsigned mode; upper-case hex. */
    static const struct {
        const char *body;
        enum auth_chunked_status st;
        size_t decoded;
    } cases[] = {
        {"A;chunk-signature=00\r\n0123456789\r\n0\r\n\r\n", AUTH_CHUNKED_DONE, 10},
        {"3;foo;bar=1\r\nabc\r\n0\r\n\r\n", AUTH_CHUNKED_DONE, 3},
        {"3 \r\nabc\r\n0\r\n\r\n", AUTH_CHUNKED_DONE, 3},
        {"3\nabc\n0\n\n", AUTH_CHUNKED_DONE, 3},
        {"0\r\n\r\n", AUTH_CHUNKED_DONE, 0},
        {"3\r\nabcX\r\n", AUTH_CHUNKED_ERROR, 3},
        {"3\r\nabc\rX", AUTH_CHUNKED_ERROR, 3},
        {"\r\n", AUTH_CHUNKED_ERROR, 0},
        {"x\r\n", AUTH_CHUNKED_ERROR, 0},
        {"3x\r\n", AUTH_CHUNKED_ERROR, 0},
        {"-3\r\n", AUTH_CHUNKED_ERROR, 0},
        {"10000000000000000\r\n", AUTH_CHUNKED_ERROR, 0},
        {"ffffffffffffffff\r\nabc", AUTH_CHUNKED_AGAIN, 3},
        {"0\r\nno-colon\r\n\r\n", AUTH_CHUNKED_ERROR, 0},
        {"0\r\n:v\r\n\r\n", AUTH_CHUNKED_ERROR, 0},
        {"0\r\nx-amz-trailer-signature:" TRAILER_SIG "\r\n\r\n", AUTH_CHUNKED_ERROR, 0},
        {"0\r\na:1\r\nb:2\r\nc:3\r\nd:4\r\n\r\n", AUTH_CHUNKED_DONE, 0},
        {"0\r\na:1\r\nb:2\r\nc:3\r\nd:4\r\ne:5\r\n\r\n", AUTH_CHUNKED_ERROR, 0},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        for (int mode = 0; mode < 3; mode++) {
            struct body t = {(char *)cases[i].body, strlen(cases[i].body)};
            enum auth_chunked_status st = run(&v, &t, mode, s, &c, &used);
            if (st != cases[i].st || s->len != cases[i].decoded)
                TEST_FAIL("case %zu mode %d: status %d decoded %zu", i, mode, (int)st, s->len);
        }
    }
    ASSERT(slice_eq(auth_chunked_trailer(&c, "d"), SLICE_LIT("4")) || true);

    /* Over-long lines are refused (bounded memory). */
    char longline[600];
    memset(longline, '0', sizeof(longline));
    struct body t = {longline, sizeof(longline)};
    ASSERT_EQ(run(&v, &t, 0, s, &c, &used), AUTH_CHUNKED_ERROR);
    t = (struct body){NULL, 0};
    appends(&t, "0\r\nx-amz-checksum-sha256:");
    for (int i = 0; i < 200; i++)
        appends(&t, "A");
    appends(&t, "\r\n\r\n");
    ASSERT_EQ(run(&v, &t, 0, s, &c, &used), AUTH_CHUNKED_ERROR);
    free(t.p);

    /* The callback can stop the decoder. */
    t = (struct body){(char *)"3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", 24};
    s->fail_after = 2;
    ASSERT_EQ(run(&v, &t, 0, s, &c, &used), AUTH_CHUNKED_ERROR);
    s->fail_after = 0;
}

int
main(void)
{
    struct sink s = {xmalloc(1 << 20), 0, 1 << 20, 0, 0};
    test_signed(&s);
    test_signed_trailer(&s);
    test_unsigned_trailer(&s);
    free(s.data);
    return 0;
}
