/*
 * test_sigv4.c: auth/sigv4.c against the worked examples of the AWS S3
 * SigV4 documentation (header, query and presigned forms), sign/verify and
 * presign/verify round trips, and every auth_result.
 */
#include "config.h"

#include "auth/auth_int.h"
#include "tests/lib/test.h"

#include <time.h>

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define T_20130524 1369353600 /* 2013-05-24T00:00:00Z */

static int lookups;

static int
lookup(void *ctx, struct slice key, char *secret, size_t cap)
{
    (void)ctx;
    lookups++;
    if (!slice_eq(key, SLICE_LIT(AK)) || cap < sizeof(SK))
        return -1;
    memcpy(secret, SK, sizeof(SK));
    return 0;
}

#define MAX_H 16

/* A request under construction: headers as C strings. */
struct req {
    struct auth_request r;
    struct auth_header h[MAX_H];
    char authz[512];
};

static void
req_init(struct req *q, const char *method, const char *path, const char *query)
{
    memset(q, 0, sizeof(*q));
    q->r.method = slice_from_cstr(method);
    q->r.path = slice_from_cstr(path);
    q->r.query = slice_from_cstr(query);
    q->r.headers = q->h;
    q->r.now_s = T_20130524;
    q->r.region = "us-east-1";
}

static void
req_add(struct req *q, const char *name, const char *value)
{
    ASSERT(q->r.n_headers < MAX_H);
    q->h[q->r.n_headers].name = slice_from_cstr(name);
    q->h[q->r.n_headers].value = slice_from_cstr(value);
    q->r.n_headers++;
}

static enum auth_result
verify(struct req *q, struct auth_verdict *v)
{
    return auth_sigv4_verify(&q->r, lookup, NULL, v);
}

static void
test_doc_vectors(void)
{
    struct req q;
    struct auth_verdict v;

    /* GET Object with a Range header. */
    req_init(&q, "GET", "/test.txt", "");
    req_add(&q, "Host", "examplebucket.s3.amazonaws.com");
    req_add(&q, "Range", "bytes=0-9");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    req_add(&q, "x-amz-date", "20130524T000000Z");
    req_add(&q, "Authorization",
            "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    ASSERT_EQ(v.payload, AUTH_PAYLOAD_HASH);
    ASSERT(!v.is_presigned);
    ASSERT_STR_EQ(v.access_key, AK);
    ASSERT_STR_EQ(v.amz_date, "20130524T000000Z");
    ASSERT_STR_EQ(v.scope, "20130524/us-east-1/s3/aws4_request");
    ASSERT_STR_EQ(v.seed_signature,
                  "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    ASSERT_EQ(v.payload_sha256[0], 0xe3);
    ASSERT_EQ(v.payload_sha256[31], 0x55);
    /* The signer reproduces it (it signs every header it is given). */
    q.r.n_headers = 4;
    ASSERT_EQ(auth_sigv4_sign(&q.r, AK, SK, q.authz, sizeof(q.authz)), 0);
    ASSERT_STR_EQ(q.authz,
                  "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request, "
                  "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                  "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");

    /* PUT Object: '$' in the key, Date and x-amz-date both signed. */
    req_init(&q, "PUT", "/test%24file.text", "");
    req_add(&q, "Host", "examplebucket.s3.amazonaws.com");
    req_add(&q, "Date", "Fri, 24 May 2013 00:00:00 GMT");
    req_add(&q, "x-amz-date", "20130524T000000Z");
    req_add(&q, "x-amz-storage-class", "REDUCED_REDUNDANCY");
    req_add(&q, "x-amz-content-sha256",
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    req_add(&q, "Authorization",
            "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
            "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    ASSERT_EQ(v.payload_sha256[0], 0x44);

    /* GET Bucket lifecycle: a subresource without '='. */
    req_init(&q, "GET", "/", "lifecycle");
    req_add(&q, "Host", "examplebucket.s3.amazonaws.com");
    req_add(&q, "x-amz-date", "20130524T000000Z");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    req_add(&q, "Authorization",
            "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
            "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    q.r.query = SLICE_LIT("lifecycle=");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);

    /* ListObjects with two parameters, sent in either order. */
    req_init(&q, "GET", "/", "max-keys=2&prefix=J");
    req_add(&q, "Host", "examplebucket.s3.amazonaws.com");
    req_add(&q, "x-amz-date", "20130524T000000Z");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    req_add(&q, "Authorization",
            "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
            "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    q.r.query = SLICE_LIT("prefix=%4a&max-keys=2");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    q.r.query = SLICE_LIT("prefix=K&max-keys=2");
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);

    /* Presigned GET, valid 24 hours. */
    req_init(&q, "GET", "/test.txt",
             "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
             "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z"
             "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature="
             "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
    req_add(&q, "Host", "examplebucket.s3.amazonaws.com");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    ASSERT(v.is_presigned);
    ASSERT_EQ(v.payload, AUTH_PAYLOAD_UNSIGNED);
    q.r.now_s = T_20130524 + 86400;
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    q.r.now_s = T_20130524 + 86401;
    ASSERT_EQ(verify(&q, &v), AUTH_EXPIRED);
    q.r.now_s = T_20130524 - 901; /* not valid yet */
    ASSERT_EQ(verify(&q, &v), AUTH_EXPIRED);
    /* The presigner reproduces it. */
    char url[1024];
    req_init(&q, "GET", "/test.txt", "");
    req_add(&q, "Host", "examplebucket.s3.amazonaws.com");
    ASSERT_EQ(auth_sigv4_presign(&q.r, AK, SK, 86400, url, sizeof(url)), 0);
    ASSERT(strstr(url, "X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d15"
                       "7751f604d404") != NULL);

    /* The seed of the aws-chunked example (STREAMING-AWS4-HMAC-SHA256-PAYLOAD). */
    req_init(&q, "PUT", "/examplebucket/chunkObject.txt", "");
    req_add(&q, "Host", "s3.amazonaws.com");
    req_add(&q, "x-amz-date", "20130524T000000Z");
    req_add(&q, "x-amz-storage-class", "REDUCED_REDUNDANCY");
    req_add(&q, "Authorization",
            "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
            "x-amz-decoded-content-length;x-amz-storage-class,"
            "Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    req_add(&q, "x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
    req_add(&q, "Content-Encoding", "aws-chunked");
    req_add(&q, "x-amz-decoded-content-length", "66560");
    req_add(&q, "Content-Length", "66824");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    ASSERT_EQ(v.payload, AUTH_PAYLOAD_STREAMING_SIGNED);
    ASSERT_STR_EQ(v.seed_signature,
                  "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
}

/* A signed request at 'now' with a few awkward headers and a query. */
static void
signed_req(struct req *q, const char *query, int64_t now)
{
    static char date[17];
    time_t t = (time_t)now;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
    req_init(q, "PUT", "/bucket/a%20key/%E2%82%AC", query);
    q->r.now_s = now;
    req_add(q, "Host", "localhost:9000");
    req_add(q, "X-Amz-Date", date);
    req_add(q, "x-amz-content-sha256", EMPTY_SHA);
    req_add(q, "x-amz-meta-note", "  two   spaces\tand a tab  ");
    req_add(q, "X-Amz-Meta-Multi", "one");
    req_add(q, "x-amz-meta-multi", "two");
    ASSERT_EQ(auth_sigv4_sign(&q->r, AK, SK, q->authz, sizeof(q->authz)), 0);
    req_add(q, "Authorization", q->authz);
}

static void
test_round_trip(void)
{
    struct req q;
    struct auth_verdict v;
    int64_t now = 1700000000;

    signed_req(&q, "b=2&a=1&empty&sp=x%20y&slash=a/b&plus=1+2", now);
    ASSERT(strstr(q.authz, "SignedHeaders=host;x-amz-content-sha256;x-amz-date;"
                           "x-amz-meta-multi;x-amz-meta-note,") != NULL);
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    ASSERT_EQ(v.payload, AUTH_PAYLOAD_HASH);
    ASSERT(strstr(q.authz, v.seed_signature) != NULL);

    /* The same query spelled differently still matches. */
    q.r.query = SLICE_LIT("a=1&b=2&empty=&sp=x%20y&slash=a%2fb&plus=1%2B2");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    /* '+' is a literal plus, not a space. */
    q.r.query = SLICE_LIT("a=1&b=2&empty=&sp=x+y&slash=a%2fb&plus=1%2B2");
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
    q.r.query = SLICE_LIT("a=1&b=2&empty=&sp=x%20y&slash=a%2fb&plus=1%2B2&extra=1");
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);

    /* Header whitespace is canonicalized; a changed value is not. */
    signed_req(&q, "", now);
    q.h[3].value = SLICE_LIT("two spaces and a tab");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    q.h[3].value = SLICE_LIT("two spaces and a cat");
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);

    /* Method, path and repeated-header order are all signed. */
    signed_req(&q, "", now);
    q.r.method = SLICE_LIT("GET");
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
    signed_req(&q, "", now);
    q.r.path = SLICE_LIT("/bucket/a%20key/%E2%82%AD");
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
    signed_req(&q, "", now);
    q.h[4].value = SLICE_LIT("two");
    q.h[5].value = SLICE_LIT("one");
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
    /* An unsigned extra header does not matter... */
    signed_req(&q, "", now);
    req_add(&q, "User-Agent", "test");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    /* ...unless it is an x-amz-* header, in any case, which could change
     * what the request does: S3 refuses those (AccessDenied). A prefix of a
     * signed name is not that name. */
    static const char *unsigned_amz[][2] = {
        {"X-Amz-Copy-Source", "/other/secret"},
        {"x-amz-acl", "public-read"},
        {"x-amz-meta-mult", "x"},
    };
    for (size_t i = 0; i < ARRAY_LEN(unsigned_amz); i++) {
        signed_req(&q, "", now);
        req_add(&q, unsigned_amz[i][0], unsigned_amz[i][1]);
        ASSERT_EQ(verify(&q, &v), AUTH_HEADERS_NOT_SIGNED);
    }
    /* A bad signature is reported as such first. */
    signed_req(&q, "", now);
    req_add(&q, "x-amz-acl", "public-read");
    q.r.method = SLICE_LIT("GET");
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);

    /* Clock skew: 15 minutes either way is the limit. */
    signed_req(&q, "", now);
    q.r.now_s = now + 900;
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    q.r.now_s = now - 900;
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    q.r.now_s = now + 901;
    ASSERT_EQ(verify(&q, &v), AUTH_SKEWED);
    q.r.now_s = now - 901;
    ASSERT_EQ(verify(&q, &v), AUTH_SKEWED);

    /* Region and key. */
    signed_req(&q, "", now);
    q.r.region = "eu-west-1";
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_REGION);
    struct req q2;
    signed_req(&q2, "", now);
    char other[512];
    q2.r.n_headers--;
    ASSERT_EQ(auth_sigv4_sign(&q2.r, "AKIDUNKNOWN", SK, other, sizeof(other)), 0);
    req_add(&q2, "Authorization", other);
    lookups = 0;
    ASSERT_EQ(verify(&q2, &v), AUTH_UNKNOWN_KEY);
    ASSERT_EQ(lookups, 1);
    /* Wrong secret: a bad signature. */
    q2.r.n_headers--;
    ASSERT_EQ(auth_sigv4_sign(&q2.r, AK, "not-the-secret", other, sizeof(other)), 0);
    req_add(&q2, "Authorization", other);
    ASSERT_EQ(verify(&q2, &v), AUTH_BAD_SIGNATURE);

    /* Payload modes. */
    static const struct {
        const char *value;
        enum auth_result r;
        enum auth_payload p;
    } modes[] = {
        {"UNSIGNED-PAYLOAD", AUTH_OK, AUTH_PAYLOAD_UNSIGNED},
        {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", AUTH_OK, AUTH_PAYLOAD_STREAMING_SIGNED},
        {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", AUTH_OK,
         AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER},
        {"STREAMING-UNSIGNED-PAYLOAD-TRAILER", AUTH_OK, AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER},
        {"STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", AUTH_UNSUPPORTED, AUTH_PAYLOAD_HASH},
        {"not-a-hash", AUTH_MALFORMED, AUTH_PAYLOAD_HASH},
        {"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", AUTH_OK,
         AUTH_PAYLOAD_HASH},
    };
    for (size_t i = 0; i < ARRAY_LEN(modes); i++) {
        signed_req(&q, "", now);
        q.r.n_headers--;
        q.h[2].value = slice_from_cstr(modes[i].value);
        ASSERT_EQ(auth_sigv4_sign(&q.r, AK, SK, q.authz, sizeof(q.authz)), 0);
        req_add(&q, "Authorization", q.authz);
        ASSERT_EQ(verify(&q, &v), modes[i].r);
        if (modes[i].r == AUTH_OK)
            ASSERT_EQ(v.payload, modes[i].p);
    }
}

static void
expect_header(const char *authz, enum auth_result want)
{
    struct req q;
    struct auth_verdict v;
    req_init(&q, "GET", "/test.txt", "");
    req_add(&q, "Host", "examplebucket.s3.amazonaws.com");
    req_add(&q, "Range", "bytes=0-9");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    req_add(&q, "x-amz-date", "20130524T000000Z");
    req_add(&q, "Authorization", authz);
    enum auth_result got = verify(&q, &v);
    if (got != want)
        TEST_FAIL("\"%s\": %s, want %s", authz, auth_result_name(got), auth_result_name(want));
}

/* Signs canonical request 'cr' by hand (date 20130524, us-east-1, s3) and
 * writes the hex signature into 'sig', independently of auth_sigv4_sign. */
static void
sign_by_hand(const char *cr, char sig[65])
{
    uint8_t h[32], k1[32], k2[32];
    char sts[256], hex[65];
    auth_sha256(cr, strlen(cr), h);
    hex_encode(h, 32, hex);
    snprintf(sts, sizeof(sts),
             "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n%s", hex);
    auth_hmac_sha256("AWS4" SK, strlen("AWS4" SK), "20130524", 8, k1);
    auth_hmac_sha256(k1, 32, "us-east-1", 9, k2);
    auth_hmac_sha256(k2, 32, "s3", 2, k1);
    auth_hmac_sha256(k1, 32, "aws4_request", 12, k2);
    auth_hmac_sha256(k2, 32, sts, strlen(sts), h);
    hex_encode(h, 32, sig);
}

/* AWS requires host in SignedHeaders (header and presigned forms): a
 * correct signature over a request that leaves host out is refused, with
 * or without a Host header. */
static void
test_host_must_be_signed(void)
{
    struct req q;
    struct auth_verdict v;
    char sig[65], hdr[512], query[512];
    sign_by_hand("GET\n/test.txt\n\nx-amz-content-sha256:" EMPTY_SHA "\n"
                 "x-amz-date:20130524T000000Z\n\nx-amz-content-sha256;x-amz-date\n" EMPTY_SHA,
                 sig);
    snprintf(hdr, sizeof(hdr),
             "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
             "SignedHeaders=x-amz-content-sha256;x-amz-date,Signature=%s",
             sig);
    req_init(&q, "GET", "/test.txt", "");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    req_add(&q, "x-amz-date", "20130524T000000Z");
    req_add(&q, "Authorization", hdr);
    ASSERT_EQ(verify(&q, &v), AUTH_HEADERS_NOT_SIGNED);
    req_add(&q, "Host", "bucket-a.s3.example.com");
    ASSERT_EQ(verify(&q, &v), AUTH_HEADERS_NOT_SIGNED);

    const char *cq = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
                     "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z"
                     "&X-Amz-Expires=86400&X-Amz-SignedHeaders=range";
    char cr[1024];
    snprintf(cr, sizeof(cr), "GET\n/test.txt\n%s\nrange:bytes=0-9\n\nrange\nUNSIGNED-PAYLOAD", cq);
    sign_by_hand(cr, sig);
    snprintf(query, sizeof(query), "%s&X-Amz-Signature=%s", cq, sig);
    req_init(&q, "GET", "/test.txt", query);
    req_add(&q, "Range", "bytes=0-9");
    req_add(&q, "Host", "bucket-b.s3.example.com");
    ASSERT_EQ(verify(&q, &v), AUTH_HEADERS_NOT_SIGNED);
}

#define SIG_OK "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
#define SH "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date"

static void
test_malformed(void)
{
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request, " SH
                  ", Signature=" SIG_OK,
                  AUTH_OK);
    /* Order of the parts does not matter; upper-case hex is accepted. */
    expect_header("AWS4-HMAC-SHA256 Signature=F0E8BDB87C964420E857BD35B5D6ED310BD44F0170ABA48DD9"
                  "1039C6036BDB41," SH ",Credential=" AK "/20130524/us-east-1/s3/aws4_request",
                  AUTH_OK);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request," SH
                  ",Signature=" SIG_OK ",Signature=" SIG_OK,
                  AUTH_MALFORMED);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request," SH,
                  AUTH_MALFORMED);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request," SH
                  ",Signature=abc",
                  AUTH_MALFORMED);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3," SH
                  ",Signature=" SIG_OK,
                  AUTH_MALFORMED);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130525/us-east-1/s3/aws4_request," SH
                  ",Signature=" SIG_OK,
                  AUTH_MALFORMED);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/ec2/aws4_request," SH
                  ",Signature=" SIG_OK,
                  AUTH_MALFORMED);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws5_request," SH
                  ",Signature=" SIG_OK,
                  AUTH_MALFORMED);
    expect_header("AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request," SH
                  ",Signature=" SIG_OK,
                  AUTH_MALFORMED);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-west-2/s3/aws4_request," SH
                  ",Signature=" SIG_OK,
                  AUTH_BAD_REGION);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
                  "SignedHeaders=host;range;x-amz-content-sha256,Signature=" SIG_OK,
                  AUTH_MALFORMED); /* x-amz-date not signed */
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
                  "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=" SIG_OK,
                  AUTH_BAD_SIGNATURE);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request," SH
                  ",Signature=00e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
                  AUTH_BAD_SIGNATURE);
    expect_header("AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request," SH
                  ",Signature=" SIG_OK ",Foo=bar",
                  AUTH_MALFORMED);
    expect_header("AWS4-HMAC-SHA256", AUTH_MALFORMED);
    expect_header("AWS4-HMAC-SHA256 ", AUTH_MALFORMED);
    expect_header("", AUTH_MALFORMED);
    expect_header("AWS " AK ":frJIUN8DYpKDtOLCwo//yllqDzg=", AUTH_UNSUPPORTED);
    expect_header("AWS4-ECDSA-P256-SHA256 Credential=x", AUTH_UNSUPPORTED);
    expect_header("Bearer abc", AUTH_UNSUPPORTED);

    /* Missing date, bad date, missing payload hash; the Date header fallback. */
    struct req q;
    struct auth_verdict v;
    const char *authz = "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
                        "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=" SIG_OK;
    req_init(&q, "GET", "/", "");
    req_add(&q, "Host", "h");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    req_add(&q, "Authorization", authz);
    ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
    req_add(&q, "x-amz-date", "20130524T000000");
    ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
    q.h[3].value = SLICE_LIT("20130532T000000Z");
    ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
    q.h[3].value = SLICE_LIT("20130524T000000Z");
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
    q.h[1].name = SLICE_LIT("x-amz-content-sha257");
    ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);

    /* Date header only: the string to sign carries it as YYYYMMDDTHHMMSSZ.
     * The expected signature is computed here step by step. */
    const char *cr =
        "GET\n/\n\ndate:Fri, 24 May 2013 00:00:00 GMT\nhost:h\n"
        "x-amz-content-sha256:" EMPTY_SHA "\n\ndate;host;x-amz-content-sha256\n" EMPTY_SHA;
    char sig[65], hdr[512];
    sign_by_hand(cr, sig);
    snprintf(hdr, sizeof(hdr),
             "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
             "SignedHeaders=date;host;x-amz-content-sha256,Signature=%s",
             sig);
    req_init(&q, "GET", "/", "");
    req_add(&q, "Host", "h");
    req_add(&q, "Date", "Fri, 24 May 2013 00:00:00 GMT");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    req_add(&q, "Authorization", hdr);
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    ASSERT_STR_EQ(v.amz_date, "20130524T000000Z");
    q.h[1].value = SLICE_LIT("24 May 2013 00:00:00 GMT"); /* weekday optional, value signed */
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
    q.h[1].value = SLICE_LIT("Fri, 24 May 2013 00:20:00 GMT");
    ASSERT_EQ(verify(&q, &v), AUTH_SKEWED);
    q.h[1].value = SLICE_LIT("Fri, 24 Mai 2013 00:00:00 GMT");
    ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
    q.h[1].value = SLICE_LIT("Fri, 24 May 2013 00:00:00 PST");
    ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
}

static void
test_presign(void)
{
    struct req q;
    struct auth_verdict v;
    char url[2048], bad[4096];
    int64_t now = 1700000000;

    req_init(&q, "GET", "/bucket/key%20x", "versionId=abc&response-content-type=text%2Fplain");
    q.r.now_s = now;
    req_add(&q, "Host", "localhost:9000");
    ASSERT_EQ(auth_sigv4_presign(&q.r, AK, SK, 3600, url, sizeof(url)), 0);
    ASSERT_EQ(auth_sigv4_presign(&q.r, AK, SK, 3600, bad, 20), -1);
    ASSERT_EQ(auth_sigv4_presign(&q.r, AK, SK, 0, bad, sizeof(bad)), -1);
    ASSERT_EQ(auth_sigv4_presign(&q.r, AK, SK, 604801, bad, sizeof(bad)), -1);
    q.r.query = slice_from_cstr(url);
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    ASSERT(v.is_presigned);
    ASSERT_EQ(v.payload, AUTH_PAYLOAD_UNSIGNED);
    ASSERT_STR_EQ(v.access_key, AK);
    q.r.now_s = now + 3600;
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    q.r.now_s = now + 3601;
    ASSERT_EQ(verify(&q, &v), AUTH_EXPIRED);
    q.r.now_s = now - 901;
    ASSERT_EQ(verify(&q, &v), AUTH_EXPIRED);
    q.r.now_s = now;
    q.r.region = "eu-central-1";
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_REGION);
    q.r.region = "us-east-1";
    /* Another host, an added parameter, a flipped signature digit. */
    q.h[0].value = SLICE_LIT("localhost:9001");
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
    q.h[0].value = SLICE_LIT("localhost:9000");
    snprintf(bad, sizeof(bad), "%s&x=1", url);
    q.r.query = slice_from_cstr(bad);
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
    snprintf(bad, sizeof(bad), "%s", url);
    char *last = bad + strlen(bad) - 1;
    *last = *last == '0' ? '1' : '0';
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
    /* A malformed %-escape is refused, not kept as a literal '%': else
     * "prefix=abc%25" rewritten to "prefix=abc%" would verify while the
     * server's parser, which refuses the escape, lists without the prefix. */
    {
        struct req p;
        char purl[2048];
        req_init(&p, "GET", "/bucket", "list-type=2&prefix=abc%25");
        p.r.now_s = now;
        req_add(&p, "Host", "localhost:9000");
        ASSERT_EQ(auth_sigv4_presign(&p.r, AK, SK, 3600, purl, sizeof(purl)), 0);
        p.r.query = slice_from_cstr(purl);
        ASSERT_EQ(verify(&p, &v), AUTH_OK);
        char *pct = strstr(purl, "abc%25");
        ASSERT(pct != NULL);
        memmove(pct + 4, pct + 6, strlen(pct + 6) + 1);
        ASSERT_EQ(verify(&p, &v), AUTH_MALFORMED);
        snprintf(bad, sizeof(bad), "%s&x=%%zz", url);
        q.r.query = slice_from_cstr(bad);
        ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
        p.r.query = SLICE_LIT("prefix=%zz");
        ASSERT_EQ(auth_sigv4_presign(&p.r, AK, SK, 3600, purl, sizeof(purl)), -1);
        q.r.query = slice_from_cstr(url);
    }
    /* A presigned URL signs only host: an x-amz-* header added to it (a PUT
     * URL turned into a CopyObject by x-amz-copy-source) is refused. */
    q.r.query = slice_from_cstr(url);
    req_add(&q, "x-amz-copy-source", "/other/secret");
    ASSERT_EQ(verify(&q, &v), AUTH_HEADERS_NOT_SIGNED);
    q.r.n_headers--;
    req_add(&q, "Range", "bytes=0-9");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    q.r.n_headers--;
    /* Both an Authorization header and a query signature. */
    q.r.query = slice_from_cstr(url);
    req_add(&q, "Authorization", "AWS4-HMAC-SHA256 Credential=x");
    ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
    q.r.n_headers--;

    /* X-Amz-Expires out of range or not a number (0 is valid but expired
     * at once: the signature, not the parameter, decides). */
    static const char *expires[] = {"604801", "abc", "", "-5", "99999999999999999999999"};
    for (size_t i = 0; i < ARRAY_LEN(expires); i++) {
        snprintf(bad, sizeof(bad),
                 "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" AK
                 "%%2F20231114%%2Fus-east-1%%2Fs3%%2Faws4_request&X-Amz-Date=20231114T221320Z"
                 "&X-Amz-Expires=%s&X-Amz-SignedHeaders=host&X-Amz-Signature=" SIG_OK,
                 expires[i]);
        q.r.query = slice_from_cstr(bad);
        ASSERT_EQ(verify(&q, &v), AUTH_BAD_EXPIRES);
    }
    /* Missing parameters and another algorithm. */
    q.r.query = SLICE_LIT("X-Amz-Signature=" SIG_OK);
    ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
    q.r.query = SLICE_LIT("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=" SIG_OK);
    ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
    q.r.query = SLICE_LIT("X-Amz-Algorithm=AWS4-ECDSA-P256-SHA256&X-Amz-Signature=" SIG_OK);
    ASSERT_EQ(verify(&q, &v), AUTH_UNSUPPORTED);
    /* SigV2 presigned, and no authentication at all. */
    q.r.query = SLICE_LIT("AWSAccessKeyId=" AK "&Expires=1700000000&Signature=abc%3D");
    ASSERT_EQ(verify(&q, &v), AUTH_UNSUPPORTED);
    q.r.query = SLICE_LIT("versionId=1");
    ASSERT_EQ(verify(&q, &v), AUTH_ANONYMOUS);
    /* Empty segments (a fuzzer find: they left a name unset). */
    q.r.query = SLICE_LIT("&&a=1&&=&&");
    ASSERT_EQ(verify(&q, &v), AUTH_ANONYMOUS);
    snprintf(bad, sizeof(bad), "&&%s&&", url);
    q.r.query = slice_from_cstr(bad);
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    q.r.query = SLICE_NULL;
    ASSERT_EQ(verify(&q, &v), AUTH_ANONYMOUS);
}

/* The per-thread signing-key cache keeps the derived key, never the
 * secret, and still answers for the right secret only. */
static void
test_key_cache_holds_no_secret(void)
{
    struct req q;
    struct auth_verdict v;
    size_t len = 0;
    signed_req(&q, "a=1", 1700000000);
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    ASSERT_EQ(verify(&q, &v), AUTH_OK); /* a cache hit */
    const void *cache = auth__key_cache_bytes(&len);
    ASSERT(len > 0);
    ASSERT(memmem(cache, len, SK, strlen(SK)) == NULL);
    ASSERT(memmem(cache, len, "AWS4" SK, strlen("AWS4" SK)) == NULL);
    ASSERT(memmem(cache, len, SK, 8) == NULL);
    /* Another secret for the same date and region must miss the cache. */
    char authz[512];
    req_init(&q, "PUT", "/bucket/k", "");
    q.r.now_s = 1700000000;
    req_add(&q, "Host", "localhost:9000");
    req_add(&q, "X-Amz-Date", "20231114T221320Z");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    ASSERT_EQ(auth_sigv4_sign(&q.r, AK, "another-secret", authz, sizeof(authz)), 0);
    req_add(&q, "Authorization", authz);
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
}

/* The canonicalizer decodes the query with common/'s strict decoder: a
 * malformed %-escape makes the request malformed (the server's query
 * parser refuses it too), so a signed query cannot mean one thing to the
 * signature and another to the handler. */
static void
test_malformed_escapes(void)
{
    struct req q;
    struct auth_verdict v;
    char url[2048], bad[4096];
    signed_req(&q, "prefix=a%2Fb", 1700000000);
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    static const char *escapes[] = {"prefix=a%2Fb&x=%zz", "prefix=a%2Fb%", "prefix=a%2Fb&%g1=1",
                                    "prefix=a%2"};
    for (size_t i = 0; i < ARRAY_LEN(escapes); i++) {
        q.r.query = slice_from_cstr(escapes[i]);
        ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
    }
    /* The signer refuses to sign one. */
    req_init(&q, "GET", "/b", "prefix=%zz");
    req_add(&q, "Host", "h");
    req_add(&q, "x-amz-date", "20130524T000000Z");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    ASSERT_EQ(auth_sigv4_sign(&q.r, AK, SK, q.authz, sizeof(q.authz)), -1);
    ASSERT_EQ(auth_sigv4_presign(&q.r, AK, SK, 60, url, sizeof(url)), -1);
    /* A presigned listing URL with a broken escape appended. */
    req_init(&q, "GET", "/b", "prefix=mine%2F");
    q.r.now_s = 1700000000;
    req_add(&q, "Host", "h");
    ASSERT_EQ(auth_sigv4_presign(&q.r, AK, SK, 60, url, sizeof(url)), 0);
    q.r.query = slice_from_cstr(url);
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    snprintf(bad, sizeof(bad), "%s&prefix%%=", url);
    q.r.query = slice_from_cstr(bad);
    ASSERT_EQ(verify(&q, &v), AUTH_MALFORMED);
}

/* A query past the canonicalizer's stack buffers (21 parameters, 1,791
 * bytes: a session token makes presigned URLs this long) against a
 * signature botocore's S3SigV4Auth made for it (repeated names sorted by
 * value, escapes kept). */
static void
test_long_query(void)
{
    struct req q;
    struct auth_verdict v;
    char query[4096], one[32];
    size_t n = 0;
    query[0] = '\0';
    for (int i = 0; i < 18; i++) {
        snprintf(one, sizeof(one), "%sp%02d=v%d%%2Fxxxxxxxxxx", i ? "&" : "", 19 - i, i);
        strcat(query, one);
    }
    strcat(query, "&dup=b&dup=a&long=");
    n = strlen(query);
    memset(query + n, 'L', 1400);
    strcpy(query + n + 1400, "%20end");
    ASSERT_EQ(strlen(query), 1791);
    req_init(&q, "GET", "/bucket/key", query);
    q.r.now_s = 1700000000;
    req_add(&q, "Host", "localhost:9000");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    req_add(&q, "X-Amz-Date", "20231114T221320Z");
    req_add(&q, "Authorization",
            "AWS4-HMAC-SHA256 Credential=" AK "/20231114/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
            "Signature=c1c30ee2e5d6e5ebe959db79d8bc72673f398d173262b26e6c5639ac9c3ae093");
    ASSERT_EQ(verify(&q, &v), AUTH_OK);
    query[n + 3] = 'M'; /* one byte of the long value */
    ASSERT_EQ(verify(&q, &v), AUTH_BAD_SIGNATURE);
}

int
main(void)
{
    test_doc_vectors();
    test_round_trip();
    test_malformed();
    test_presign();
    test_host_must_be_signed();
    test_key_cache_holds_no_secret();
    test_malformed_escapes();
    test_long_query();

    for (int r = AUTH_OK; r <= AUTH_PARAMS_NOT_SIGNED; r++)
        ASSERT(auth_result_name((enum auth_result)r) != NULL);
    ASSERT(auth_equal_ct("abc", "abc", 3));
    ASSERT(!auth_equal_ct("abc", "abd", 3));
    ASSERT(auth_equal_ct("", "x", 0));

    /* The signer's failure modes. */
    struct req q;
    char small[16];
    req_init(&q, "GET", "/", "");
    req_add(&q, "Host", "h");
    req_add(&q, "x-amz-content-sha256", EMPTY_SHA);
    ASSERT_EQ(auth_sigv4_sign(&q.r, AK, SK, q.authz, sizeof(q.authz)), -1); /* no date */
    req_add(&q, "x-amz-date", "20130524T000000Z");
    ASSERT_EQ(auth_sigv4_sign(&q.r, AK, SK, small, sizeof(small)), -1);
    ASSERT_EQ(auth_sigv4_sign(&q.r, AK, SK, q.authz, sizeof(q.authz)), 0);
    return 0;
}
