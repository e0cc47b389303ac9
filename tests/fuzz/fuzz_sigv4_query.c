/*
 * fuzz_sigv4_query.c: libFuzzer target for presigned-URL verification
 * (auth_sigv4_verify with X-Amz-* query parameters).
 *
 * Input lines: raw query \n raw path \n then "name:value" header lines.
 * Properties: the result is one of the enum and a verdict on AUTH_OK is
 * well formed; and the same path, headers and (plain) query presigned by
 * auth_sigv4_presign always verifies, and stops verifying once expired.
 */
#include "config.h"

#include "auth/auth.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define NOW 1369353600
#define MAX_H 32

static int
lookup(void *ctx, struct slice key, char *secret, size_t cap)
{
    (void)ctx;
    if (!slice_eq(key, SLICE_LIT(AK)) || cap < sizeof(SK))
        return -1;
    memcpy(secret, SK, sizeof(SK));
    return 0;
}

static void
fail(const char *what)
{
    fprintf(stderr, "fuzz_sigv4_query: %s\n", what);
    abort();
}

static void
check_verdict(enum auth_result r, const struct auth_verdict *v)
{
    if ((int)r < AUTH_OK || (int)r > AUTH_HEADERS_NOT_SIGNED)
        fail("result outside the enum");
    if (r != AUTH_OK)
        return;
    if (memchr(v->access_key, 0, sizeof(v->access_key)) == NULL ||
        memchr(v->scope, 0, sizeof(v->scope)) == NULL || strlen(v->seed_signature) != 64 ||
        strlen(v->amz_date) != 16)
        fail("malformed verdict");
}

static bool
has_nocase(struct slice s, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= s.len; i++)
        if (slice_eq_nocase((struct slice){s.ptr + i, n}, needle))
            return true;
    return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct slice lines[2 + MAX_H];
    size_t n = 0;
    const char *p = (const char *)data, *end = p + size;
    while (n < ARRAY_LEN(lines) && p <= end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        lines[n++] = (struct slice){p, (size_t)(e - p)};
        p = e + 1;
        if (nl == NULL)
            break;
    }
    while (n < 2)
        lines[n++] = SLICE_NULL;

    struct auth_header h[MAX_H + 1];
    size_t nh = 0;
    h[nh++] = (struct auth_header){SLICE_LIT("Host"), SLICE_LIT("examplebucket.s3.amazonaws.com")};
    bool has_host = false;
    for (size_t i = 2; i < n; i++) {
        const char *colon = memchr(lines[i].ptr, ':', lines[i].len);
        struct slice name = lines[i], value = SLICE_NULL;
        if (colon) {
            name.len = (size_t)(colon - lines[i].ptr);
            value = (struct slice){colon + 1, lines[i].len - name.len - 1};
        }
        has_host = has_host || slice_eq_nocase(name, "host");
        h[nh++] = (struct auth_header){name, value};
    }
    struct auth_request req = {
        .method = SLICE_LIT("GET"),
        .path = lines[1],
        .query = lines[0],
        .headers = h,
        .n_headers = nh,
        .now_s = NOW,
        .region = "us-east-1",
    };
    struct auth_verdict v;
    enum auth_result r = auth_sigv4_verify(&req, lookup, NULL, &v);
    check_verdict(r, &v);

    /* Presign the same request (its query made plain) and verify it. */
    if (has_nocase(req.query, "amz") || has_nocase(req.query, "%") ||
        has_nocase(req.query, "signature") || has_nocase(req.query, "awsaccesskeyid"))
        req.query = SLICE_NULL;
    for (size_t i = 0; i < nh; i++)
        if (slice_eq_nocase(h[i].name, "authorization"))
            return 0;
    static char q[16384];
    int64_t expires = 1 + (int64_t)(size % 604800);
    if (auth_sigv4_presign(&req, AK, SK, expires, q, sizeof(q)) != 0)
        return 0;
    req.query = slice_from_cstr(q);
    r = auth_sigv4_verify(&req, lookup, NULL, &v);
    check_verdict(r, &v);
    /* auth_sigv4_presign signs host only: any x-amz-* header the input
     * added is unsigned, and S3 refuses those. */
    bool has_amz = false;
    for (size_t i = 0; i < nh; i++)
        has_amz = has_amz || (h[i].name.len >= 6 &&
                              slice_eq_nocase((struct slice){h[i].name.ptr, 6}, "x-amz-"));
    if (has_amz) {
        if (r != AUTH_HEADERS_NOT_SIGNED) {
            fprintf(stderr, "presigned: %s (query %s)\n", auth_result_name(r), q);
            fail("a presigned URL with an unsigned x-amz-* header was not refused");
        }
        return 0;
    }
    if (r != AUTH_OK || !v.is_presigned) {
        fprintf(stderr, "presigned: %s (query %s)\n", auth_result_name(r), q);
        fail("a URL presigned by auth_sigv4_presign did not verify");
    }
    req.now_s = NOW + expires + 1;
    if (auth_sigv4_verify(&req, lookup, NULL, &v) != AUTH_EXPIRED)
        fail("an expired presigned URL was not reported expired");
    (void)has_host;
    return 0;
}
