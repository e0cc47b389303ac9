/*
 * sigv2.c: AWS Signature Version 2 in the query string (presigned URLs:
 * AWSAccessKeyId, Expires, Signature). aws-cli v1's `aws s3 presign` and
 * boto3's default presigner still produce these, and S3 accepts them, so
 * links made with those tools must work. SigV2 in the Authorization header
 * stays unsupported (every current SDK signs requests with SigV4).
 *
 *   StringToSign = VERB \n Content-MD5 \n Content-Type \n Expires \n
 *                  CanonicalizedAmzHeaders CanonicalizedResource
 *   Signature    = Base64(HMAC-SHA1(secret, StringToSign))
 *
 * CanonicalizedResource is [/bucket for virtual-hosted requests] + the raw
 * path + the S3 sub-resources of the query, sorted, values decoded.
 * Because nothing else of the query is signed, a URL carrying any other
 * parameter is refused, and Expires may be at most 7 days ahead.
 */
#include "auth/auth_int.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>

/* Query parameters that are part of the SigV2 canonical resource. */
static const char *subresources[] = {
    "acl",
    "cors",
    "delete",
    "lifecycle",
    "location",
    "logging",
    "notification",
    "partNumber",
    "policy",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
};

struct qparam {
    struct slice name;  /* raw */
    struct slice value; /* raw */
    bool has_value;
};

/* Percent-decodes 'in' and appends it to 'b'. Returns false on a bad escape. */
static bool
decode_into(struct buf *b, struct slice in)
{
    buf_reserve(b, in.len);
    long n = uri_decode(in.ptr, in.len, b->ptr + b->len);
    if (n < 0)
        return false;
    b->len += (size_t)n;
    return true;
}

/* Finds raw parameter 'name' in the query. */
static bool
query_find(struct slice q, const char *name, struct qparam *out)
{
    struct slice part;
    while (slice_split_next(&q, '&', &part)) {
        const char *eq = part.len ? memchr(part.ptr, '=', part.len) : NULL;
        size_t klen = eq ? (size_t)(eq - part.ptr) : part.len;
        if (slice_eq((struct slice){part.ptr, klen}, slice_from_cstr(name))) {
            out->name = (struct slice){part.ptr, klen};
            out->has_value = eq != NULL;
            out->value = eq ? (struct slice){eq + 1, part.len - klen - 1} : (struct slice){"", 0};
            return true;
        }
    }
    return false;
}

static struct slice
header_value(const struct auth_request *req, const char *name)
{
    for (size_t i = 0; i < req->n_headers; i++)
        if (slice_eq_nocase(req->headers[i].name, name))
            return req->headers[i].value;
    return (struct slice){"", 0};
}

static int
header_cmp(const void *a, const void *b)
{
    const struct auth_header *x = *(const struct auth_header *const *)a;
    const struct auth_header *y = *(const struct auth_header *const *)b;
    return slice_casecmp(x->name, y->name);
}

/* Builds the string to sign into 'b'. Returns false on bad encoding. */
static bool
string_to_sign(const struct auth_request *req, struct slice bucket_prefix, struct slice expires,
               struct buf *b)
{
    buf_append(b, req->method.ptr, req->method.len);
    buf_append_str(b, "\n");
    struct slice md5 = header_value(req, "content-md5");
    buf_append(b, md5.ptr, md5.len);
    buf_append_str(b, "\n");
    struct slice ct = header_value(req, "content-type");
    buf_append(b, ct.ptr, ct.len);
    buf_append_str(b, "\n");
    buf_append(b, expires.ptr, expires.len);
    buf_append_str(b, "\n");
    /* x-amz-* headers, lower-cased names, sorted. */
    const struct auth_header **amz = xcalloc(req->n_headers + 1, sizeof(*amz));
    size_t n = 0;
    for (size_t i = 0; i < req->n_headers; i++)
        if (req->headers[i].name.len > 6 &&
            slice_eq_nocase((struct slice){req->headers[i].name.ptr, 6}, "x-amz-"))
            amz[n++] = &req->headers[i];
    qsort(amz, n, sizeof(*amz), header_cmp);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < amz[i]->name.len; k++) {
            char c = (char)ascii_lower((unsigned char)amz[i]->name.ptr[k]);
            buf_append(b, &c, 1);
        }
        buf_append_str(b, ":");
        buf_append(b, amz[i]->value.ptr, amz[i]->value.len);
        buf_append_str(b, "\n");
    }
    free(amz);
    buf_append(b, bucket_prefix.ptr, bucket_prefix.len);
    buf_append(b, req->path.ptr, req->path.len);
    char sep = '?';
    for (size_t i = 0; i < ARRAY_LEN(subresources); i++) {
        struct qparam p;
        if (!query_find(req->query, subresources[i], &p))
            continue;
        buf_append(b, &sep, 1);
        sep = '&';
        buf_append_str(b, subresources[i]);
        if (p.has_value) {
            buf_append_str(b, "=");
            if (!decode_into(b, p.value))
                return false;
        }
    }
    return true;
}

/* HMAC-SHA1 of 'b' with 'secret', base64 (28 chars + NUL) into 'out'. */
static void
sign(const char *secret, const struct buf *b, char out[32])
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    HMAC(EVP_sha1(), secret, (int)strlen(secret), (const unsigned char *)(b->ptr ? b->ptr : ""),
         b->len, mac, &mac_len);
    base64_encode(mac, mac_len, out);
}

/* The parameters a SigV2 presigned URL carries for its own use. */
static const char *auth_params[] = {"AWSAccessKeyId", "Expires", "Signature"};

static bool
is_listed(struct slice name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (slice_eq(name, slice_from_cstr(list[i])))
            return true;
    return false;
}

/*
 * SigV2 signs only the sub-resources of the query (the 'subresources'
 * table, response-* overrides included), so any other parameter could be
 * added or changed by whoever holds the URL (?name=mallory&admin=true).
 * Returns true when every parameter of 'q' is a signed sub-resource or one
 * of 'auth_params', named without %-escapes (the server decodes names and
 * string_to_sign matches them raw: both must see the same parameter) and
 * none named twice.
 */
static bool
query_is_all_signed(struct slice q)
{
    struct slice seen[ARRAY_LEN(subresources) + ARRAY_LEN(auth_params)];
    size_t n_seen = 0;
    struct slice name;
    while (slice_split_next(&q, '&', &name)) {
        if (name.len == 0)
            continue;
        const char *eq = memchr(name.ptr, '=', name.len);
        if (eq)
            name.len = (size_t)(eq - name.ptr);
        if (!is_listed(name, subresources, ARRAY_LEN(subresources)) &&
            !is_listed(name, auth_params, ARRAY_LEN(auth_params)))
            return false;
        for (size_t k = 0; k < n_seen; k++)
            if (slice_eq(seen[k], name))
                return false;
        seen[n_seen++] = name;
    }
    return true;
}

enum auth_result
auth_sigv2_verify_query(const struct auth_request *req, struct slice bucket_prefix,
                        auth_secret_fn lookup, void *ctx, struct auth_verdict *out)
{
    struct qparam akp, exp, sigp;
    if (!query_find(req->query, "AWSAccessKeyId", &akp) ||
        !query_find(req->query, "Expires", &exp) || !query_find(req->query, "Signature", &sigp))
        return AUTH_MALFORMED;
    /* SigV2 itself bounds nothing: keep its URLs to SigV4's 7 days. */
    uint64_t expires;
    if (parse_u64(exp.value, INT64_MAX, &expires) != 0 ||
        (int64_t)expires > req->now_s + AUTH_SIGV2_MAX_EXPIRES_S)
        return AUTH_BAD_EXPIRES;
    if (!query_is_all_signed(req->query))
        return AUTH_PARAMS_NOT_SIGNED;
    struct buf ak, sig, sts;
    buf_init(&ak);
    buf_init(&sig);
    buf_init(&sts);
    enum auth_result res = AUTH_MALFORMED;
    char secret[256];
    char want[32];
    if (!decode_into(&ak, akp.value) || !decode_into(&sig, sigp.value) || ak.len == 0 ||
        ak.len >= sizeof(out->access_key) || sig.len == 0)
        goto done;
    if (!string_to_sign(req, bucket_prefix, exp.value, &sts))
        goto done;
    if (lookup(ctx, (struct slice){ak.ptr, ak.len}, secret, sizeof(secret)) != 0) {
        res = AUTH_UNKNOWN_KEY;
        goto done;
    }
    sign(secret, &sts, want);
    OPENSSL_cleanse(secret, sizeof(secret));
    if (sig.len != 28 || !auth_equal_ct(want, sig.ptr, 28)) {
        res = AUTH_BAD_SIGNATURE;
        goto done;
    }
    if ((int64_t)expires < req->now_s) {
        res = AUTH_EXPIRED;
        goto done;
    }
    memset(out, 0, sizeof(*out));
    out->payload = AUTH_PAYLOAD_UNSIGNED;
    out->is_presigned = true;
    memcpy(out->access_key, ak.ptr, ak.len);
    res = AUTH_OK;
done:
    buf_cleanup(&ak);
    buf_cleanup(&sig);
    buf_cleanup(&sts);
    return res;
}

int
auth_sigv2_presign(const struct auth_request *req, struct slice bucket_prefix, const char *secret,
                   int64_t expires, char out[32])
{
    struct buf sts;
    buf_init(&sts);
    char exp[24];
    int n = snprintf(exp, sizeof(exp), "%lld", (long long)expires);
    int rc = -1;
    if (string_to_sign(req, bucket_prefix, (struct slice){exp, (size_t)n}, &sts)) {
        sign(secret, &sts, out);
        rc = 0;
    }
    buf_cleanup(&sts);
    return rc;
}
