/*
 * fuzz_sigv4_header.c: libFuzzer target for SigV4 verification with the
 * Authorization header (auth_sigv4_verify).
 *
 * Input lines: Authorization value \n raw path \n raw query \n then
 * "name:value" header lines. Properties: the result is one of the enum;
 * on AUTH_OK the verdict strings are terminated and well formed; and the
 * same request signed by auth_sigv4_sign always verifies (sign/verify
 * agree on every canonicalization), unless it holds something that
 * legitimately changes the verdict (its own Authorization, X-Amz query
 * parameters, header names that cannot be listed in SignedHeaders).
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
    fprintf(stderr, "fuzz_sigv4_header: %s\n", what);
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
        strlen(v->amz_date) != 16 || strncmp(v->scope, v->amz_date, 8) != 0)
        fail("malformed verdict");
}

/* True when the name can be listed in SignedHeaders unambiguously. */
static bool
is_token(struct slice s)
{
    if (s.len == 0)
        return false;
    for (size_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return !slice_eq_nocase(s, "authorization");
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
    struct slice lines[3 + MAX_H];
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
    while (n < 3)
        lines[n++] = SLICE_NULL;

    struct auth_header h[MAX_H + 4];
    struct auth_request req = {
        .method = SLICE_LIT("GET"),
        .path = lines[1],
        .query = lines[2],
        .headers = h,
        .now_s = NOW,
        .region = "us-east-1",
    };
    struct auth_verdict v;

    /* 1. The input as a request. */
    h[0] = (struct auth_header){SLICE_LIT("Authorization"), lines[0]};
    size_t nh = 1;
    bool is_signable = !has_nocase(req.query, "amz") && !has_nocase(req.query, "%");
    for (size_t i = 3; i < n; i++) {
        const char *colon = memchr(lines[i].ptr, ':', lines[i].len);
        struct slice name = lines[i], value = SLICE_NULL;
        if (colon) {
            name.len = (size_t)(colon - lines[i].ptr);
            value = (struct slice){colon + 1, lines[i].len - name.len - 1};
        }
        is_signable = is_signable && is_token(name);
        h[nh++] = (struct auth_header){name, value};
    }
    req.n_headers = nh;
    check_verdict(auth_sigv4_verify(&req, lookup, NULL, &v), &v);

    /* 2. The same request signed: it must verify. */
    if (!is_signable)
        return 0;
    static char authz[8192];
    h[nh++] = (struct auth_header){SLICE_LIT("host"), SLICE_LIT("examplebucket")};
    h[nh++] = (struct auth_header){SLICE_LIT("x-amz-date"), SLICE_LIT("20130524T000000Z")};
    h[nh++] =
        (struct auth_header){SLICE_LIT("x-amz-content-sha256"), SLICE_LIT("UNSIGNED-PAYLOAD")};
    /* Our three go first so that duplicates from the input do not shadow them. */
    struct auth_header tmp[3];
    memcpy(tmp, h + nh - 3, sizeof(tmp));
    memmove(h + 4, h + 1, (nh - 4) * sizeof(h[0]));
    memcpy(h + 1, tmp, sizeof(tmp));
    req.headers = h + 1;
    req.n_headers = nh - 1;
    if (auth_sigv4_sign(&req, AK, SK, authz, sizeof(authz)) != 0)
        return 0;
    h[0] = (struct auth_header){SLICE_LIT("Authorization"), slice_from_cstr(authz)};
    req.headers = h;
    req.n_headers = nh;
    enum auth_result r = auth_sigv4_verify(&req, lookup, NULL, &v);
    check_verdict(r, &v);
    if (r != AUTH_OK) {
        fprintf(stderr, "signed request: %s\n", auth_result_name(r));
        fail("a request signed by auth_sigv4_sign did not verify");
    }
    return 0;
}
