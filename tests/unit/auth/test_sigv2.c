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
              AUTH_MALFORMED);

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
    return 0;
}
