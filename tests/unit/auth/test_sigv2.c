/*
 * test_sigv2.c: SigV2 presigned URLs (query AWSAccessKeyId/Expires/Signature),
 * against the AWS documentation example, plus tampering, expiry and keys.
 */
#include "auth/auth.h"
#include "tests/lib/test.h"

static const char *SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

static int
lookup(void *ctx, struct slice ak, char *secret, size_t cap)
{
    (void)ctx;
    if (!slice_eq(ak, SLICE_LIT("AKIAIOSFODNN7EXAMPLE")))
        return -1;
    snprintf(secret, cap, "%s", SECRET);
    return 0;
}

static enum auth_result
verify(const char *method, const char *path, const char *query, int64_t now, const char *bucket,
       struct auth_verdict *v)
{
    struct auth_header h[] = {{SLICE_LIT("Host"), SLICE_LIT("johnsmith.s3.amazonaws.com")}};
    struct auth_request req = {
        .method = slice_from_cstr(method),
        .path = slice_from_cstr(path),
        .query = slice_from_cstr(query),
        .headers = h,
        .n_headers = 1,
        .now_s = now,
        .region = "us-east-1",
    };
    return auth_sigv2_verify_query(&req, slice_from_cstr(bucket), lookup, NULL, v);
}

/* Presigns 'method' 'path'?'signed_query' for Expires 'expires' and writes
 * the URL's query (the signed part plus the SigV2 parameters) into 'out'. */
static void
presign_query(const char *method, const char *path, const char *signed_query, int64_t expires,
              char *out, size_t cap)
{
    struct auth_request req = {
        .method = slice_from_cstr(method),
        .path = slice_from_cstr(path),
        .query = slice_from_cstr(signed_query),
    };
    char sig[32], enc[96];
    ASSERT_EQ(auth_sigv2_presign(&req, SLICE_NULL, SECRET, expires, sig), 0);
    size_t o = 0;
    for (const char *p = sig; *p; p++)
        o += (size_t)snprintf(enc + o, sizeof(enc) - o,
                              (*p == '+' || *p == '/' || *p == '=') ? "%%%02X" : "%c",
                              (unsigned char)*p);
    snprintf(out, cap, "%s%sAWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=%s&Expires=%lld",
             signed_query, *signed_query ? "&" : "", enc, (long long)expires);
}

static enum auth_result
verify_path(const char *method, const char *path, const char *query, int64_t now)
{
    struct auth_verdict v;
    return verify(method, path, query, now, "", &v);
}

/* SigV2 signs only sub-resources: every other parameter is refused, as
 * are escaped or repeated names that the server might read differently. */
static void
test_unsigned_params(void)
{
    char q[512], bad[600];
    presign_query("GET", "/b/k", "versionId=v1&response-content-type=text%2Fplain", 1000, q,
                  sizeof(q));
    ASSERT_EQ(verify_path("GET", "/b/k", q, 900), AUTH_OK);
    static const char *extra[] = {
        "prefix=a",     "list-type=2",    "x-id=GetObject", "delimiter=%2F",
        "versionId=v2", "%76ersionId=v2", "X-Amz-Date=1",   "=x"};
    for (size_t i = 0; i < ARRAY_LEN(extra); i++) {
        snprintf(bad, sizeof(bad), "%s&%s", q, extra[i]);
        ASSERT_EQ(verify_path("GET", "/b/k", bad, 900), AUTH_PARAMS_NOT_SIGNED);
        snprintf(bad, sizeof(bad), "%s&%s", extra[i], q);
        ASSERT_EQ(verify_path("GET", "/b/k", bad, 900), AUTH_PARAMS_NOT_SIGNED);
    }
    /* Empty segments carry nothing. */
    snprintf(bad, sizeof(bad), "&&%s&&", q);
    ASSERT_EQ(verify_path("GET", "/b/k", bad, 900), AUTH_OK);
    /* A signed listing with a prefix: prefix is not a sub-resource. */
    presign_query("GET", "/b", "prefix=mine%2F", 1000, q, sizeof(q));
    ASSERT_EQ(verify_path("GET", "/b", q, 900), AUTH_PARAMS_NOT_SIGNED);
}

/* The replay of issue 16: a root-signed SigV2 URL for
 * POST /_/admin/users?name=alice replayed as ?name=mallory&admin=true
 * must not verify (auth/ refuses the unsigned parameters; server/ also
 * refuses any presigned URL on /_/), and an Expires 100 years out fails. */
static void
test_admin_replay(void)
{
    char q[512], replay[600];
    presign_query("POST", "/_/admin/users", "", 1000, q, sizeof(q));
    snprintf(replay, sizeof(replay), "name=alice&%s", q);
    ASSERT_EQ(verify_path("POST", "/_/admin/users", replay, 900), AUTH_PARAMS_NOT_SIGNED);
    snprintf(replay, sizeof(replay), "name=mallory&admin=true&%s", q);
    ASSERT_EQ(verify_path("POST", "/_/admin/users", replay, 900), AUTH_PARAMS_NOT_SIGNED);
    int64_t century = 1000 + 100LL * 365 * 86400;
    presign_query("GET", "/b/k", "", century, q, sizeof(q));
    ASSERT_EQ(verify_path("GET", "/b/k", q, 1000), AUTH_BAD_EXPIRES);
}

int
main(void)
{
    struct auth_verdict v;
    /* AWS docs, "Query string request authentication alternative":
     * GET /photos/puppy.jpg on johnsmith (virtual-hosted), Expires 1175139620. */
    const char *q = "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D"
                    "&Expires=1175139620";
    ASSERT_EQ(verify("GET", "/photos/puppy.jpg", q, 1175139000, "/johnsmith", &v), AUTH_OK);
    ASSERT(v.is_presigned);
    ASSERT_EQ(v.payload, AUTH_PAYLOAD_UNSIGNED);
    ASSERT_STR_EQ(v.access_key, "AKIAIOSFODNN7EXAMPLE");
    /* The same request path-style carries the bucket in the path. */
    ASSERT_EQ(verify("GET", "/johnsmith/photos/puppy.jpg", q, 1175139000, "", &v), AUTH_OK);
    /* Expired, tampered path/method/signature, unknown key, missing parts. */
    ASSERT_EQ(verify("GET", "/photos/puppy.jpg", q, 1175139621, "/johnsmith", &v), AUTH_EXPIRED);
    ASSERT_EQ(verify("GET", "/photos/kitten.jpg", q, 1175139000, "/johnsmith", &v),
              AUTH_BAD_SIGNATURE);
    ASSERT_EQ(verify("PUT", "/photos/puppy.jpg", q, 1175139000, "/johnsmith", &v),
              AUTH_BAD_SIGNATURE);
    ASSERT_EQ(
        verify("GET", "/photos/puppy.jpg",
               "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=ApgCjnDzrM%2BWFzoENXmpNDUsSn8%3D"
               "&Expires=1175139620",
               1175139000, "/johnsmith", &v),
        AUTH_BAD_SIGNATURE);
    ASSERT_EQ(
        verify("GET", "/photos/puppy.jpg",
               "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=xNpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D"
               "&Expires=1175139620",
               1175139000, "/johnsmith", &v),
        AUTH_BAD_SIGNATURE);
    ASSERT_EQ(verify("GET", "/photos/puppy.jpg",
                     "AWSAccessKeyId=NOPE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D"
                     "&Expires=1175139620",
                     1175139000, "/johnsmith", &v),
              AUTH_UNKNOWN_KEY);
    ASSERT_EQ(verify("GET", "/photos/puppy.jpg", "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1", 0,
                     "/johnsmith", &v),
              AUTH_MALFORMED);
    ASSERT_EQ(verify("GET", "/photos/puppy.jpg",
                     "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=x&Expires=12x", 0, "/johnsmith",
                     &v),
              AUTH_BAD_EXPIRES);
    /* Expires more than 7 days ahead is refused (the docs' URL, checked
     * long before it expires), whatever the signature says. */
    ASSERT_EQ(verify("GET", "/photos/puppy.jpg", q, 1175139620 - 604800, "/johnsmith", &v),
              AUTH_OK);
    ASSERT_EQ(verify("GET", "/photos/puppy.jpg", q, 1175139620 - 604801, "/johnsmith", &v),
              AUTH_BAD_EXPIRES);

    /* Sub-resources are signed: presign with one, verify, then drop it. */
    struct auth_request req = {
        .method = SLICE_LIT("GET"),
        .path = SLICE_LIT("/b/k"),
        .query = SLICE_LIT("response-content-type=text%2Fplain"),
        .now_s = 100,
    };
    char sig[32];
    ASSERT_EQ(auth_sigv2_presign(&req, SLICE_NULL, SECRET, 200, sig), 0);
    char query[256], enc[96];
    size_t o = 0;
    for (const char *p = sig; *p; p++)
        o += (size_t)snprintf(enc + o, sizeof(enc) - o,
                              (*p == '+' || *p == '/' || *p == '=') ? "%%%02X" : "%c",
                              (unsigned char)*p);
    snprintf(query, sizeof(query),
             "response-content-type=text%%2Fplain&AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE"
             "&Signature=%s&Expires=200",
             enc);
    req.query = slice_from_cstr(query);
    ASSERT_EQ(auth_sigv2_verify_query(&req, SLICE_NULL, lookup, NULL, &v), AUTH_OK);
    snprintf(query, sizeof(query), "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=%s&Expires=200",
             enc);
    req.query = slice_from_cstr(query);
    ASSERT_EQ(auth_sigv2_verify_query(&req, SLICE_NULL, lookup, NULL, &v), AUTH_BAD_SIGNATURE);
    test_unsigned_params();
    test_admin_replay();
    return 0;
}
