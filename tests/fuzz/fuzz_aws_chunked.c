/*
 * fuzz_aws_chunked.c: libFuzzer target for the aws-chunked decoder
 * (auth_chunked_feed).
 *
 * Input: one mode byte (payload mode = byte % 4: signed, signed with
 * trailer, unsigned with trailer, signed with another seed), then the body.
 * Signed modes use the key and seeds of the AWS examples, so seeds built
 * from them reach the data and trailer paths. Properties: feeding whole,
 * byte by byte and in pseudo-random pieces gives the same status, the same
 * consumed count, the same decoded bytes, the same trailers and the same
 * end-of-input verdict; decoded bytes never exceed the input length.
 */
#include "config.h"

#include "auth/auth.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

struct out {
    char *data;
    size_t len, cap;
};

static void
fail(const char *what)
{
    fprintf(stderr, "fuzz_aws_chunked: %s\n", what);
    abort();
}

static int
on_data(void *ctx, const char *p, size_t len)
{
    struct out *o = ctx;
    if (len > o->cap - o->len)
        fail("decoded more bytes than the input holds");
    memcpy(o->data + o->len, p, len);
    o->len += len;
    return 0;
}

struct result {
    enum auth_chunked_status st;
    size_t consumed;
    bool eof_ok;
    uint64_t decoded;
};

/* 'mode' 0: whole, 1: byte by byte, else pseudo-random pieces. */
static struct result
decode(const struct auth_verdict *v, const char *in, size_t len, int mode, struct out *o,
       struct auth_chunked *c)
{
    struct result r = {AUTH_CHUNKED_AGAIN, 0, false, 0};
    uint32_t x = (uint32_t)mode * 2654435761u ^ (uint32_t)len;
    auth_chunked_init(c, v);
    o->len = 0;
    size_t pos = 0;
    while (pos < len) {
        size_t n = len - pos, used = 0;
        if (mode == 1) {
            n = 1;
        } else if (mode > 1) {
            x = x * 1103515245u + 12345u;
            n = MIN(n, 1 + (x >> 16) % 97);
        }
        r.st = auth_chunked_feed(c, in + pos, n, &used, on_data, o);
        if (used > n)
            fail("consumed more than given");
        r.consumed += used;
        if (r.st != AUTH_CHUNKED_AGAIN)
            break;
        if (used != n)
            fail("AGAIN without consuming everything");
        pos += n;
    }
    r.eof_ok = auth_chunked_is_complete_at_eof(c);
    r.decoded = auth_chunked_decoded_len(c);
    if (r.decoded != o->len)
        fail("decoded_len differs from the bytes handed out");
    return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum auth_payload modes[] = {
        AUTH_PAYLOAD_STREAMING_SIGNED,
        AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER,
        AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER,
        AUTH_PAYLOAD_STREAMING_SIGNED,
    };
    static const char *const seeds[] = {
        "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
        "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
        "",
        "0000000000000000000000000000000000000000000000000000000000000000",
    };
    if (size < 1)
        return 0;
    int m = data[0] % 4;
    const char *in = (const char *)data + 1;
    size_t len = size - 1;

    struct auth_verdict v;
    uint8_t k1[32], k2[32];
    memset(&v, 0, sizeof(v));
    v.payload = modes[m];
    auth_hmac_sha256("AWS4" SK, strlen("AWS4" SK), "20130524", 8, k1);
    auth_hmac_sha256(k1, 32, "us-east-1", 9, k2);
    auth_hmac_sha256(k2, 32, "s3", 2, k1);
    auth_hmac_sha256(k1, 32, "aws4_request", 12, v.signing_key);
    snprintf(v.seed_signature, sizeof(v.seed_signature), "%s", seeds[m]);
    memcpy(v.amz_date, "20130524T000000Z", 17);
    snprintf(v.scope, sizeof(v.scope), "20130524/us-east-1/s3/aws4_request");

    struct out first = {malloc(len + 1), 0, len}, other = {malloc(len + 1), 0, len};
    struct auth_chunked c0, c1;
    struct result r0 = decode(&v, in, len, 0, &first, &c0);
    if (r0.decoded > len)
        fail("decoded length exceeds the input");
    for (int mode = 1; mode < 4; mode++) {
        struct result r = decode(&v, in, len, mode, &other, &c1);
        if (r.st != r0.st || r.consumed != r0.consumed || r.eof_ok != r0.eof_ok ||
            r.decoded != r0.decoded || other.len != first.len ||
            (first.len && memcmp(first.data, other.data, first.len) != 0)) {
            fprintf(stderr, "mode %d: status %d/%d consumed %zu/%zu eof %d/%d len %zu/%zu\n", mode,
                    r0.st, r.st, r0.consumed, r.consumed, r0.eof_ok, r.eof_ok, first.len,
                    other.len);
            fail("split feeding differs from whole feeding");
        }
        static const char *const names[] = {"x-amz-checksum-crc32", "x-amz-checksum-crc32c",
                                            "x-amz-checksum-sha256", "a"};
        for (size_t i = 0; i < ARRAY_LEN(names); i++)
            if (!slice_eq(auth_chunked_trailer(&c0, names[i]), auth_chunked_trailer(&c1, names[i])))
                fail("trailers differ");
    }
    free(first.data);
    free(other.data);
    return 0;
}
