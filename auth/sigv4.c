/*
 * sigv4.c: AWS Signature Version 4 for S3: verification of the
 * Authorization header and of presigned query strings, and the signer used
 * by client/ and the tests.
 *
 * canonical request = method \n raw path \n canonical query \n
 *                     (lower-name:trimmed-value \n)* \n signed;headers \n payload-hash
 * string to sign    = AWS4-HMAC-SHA256 \n amz-date \n scope \n hex(sha256(canonical request))
 *
 * The path is used exactly as received (S3 does not normalize or double
 * encode). Query names and values are decoded and re-encoded so that a
 * client's own escaping choices do not matter. Secrets live only on the
 * stack of one call and are wiped before it returns; nothing here logs.
 */
#include "config.h"

#include "auth/auth_int.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdio.h>
#include <stdlib.h>

#define ALGORITHM "AWS4-HMAC-SHA256"
#define MAX_SKEW_S 900
#define MAX_EXPIRES_S 604800
#define SECRET_CAP 256

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */
/* ------------------------------------------------------------------------ */

bool
auth__parse_sig(struct slice s, char out[65])
{
    if (s.len != 64)
        return false;
    for (size_t i = 0; i < 64; i++) {
        if (hex_digit_value((unsigned char)s.ptr[i]) < 0)
            return false;
        out[i] = (char)ascii_lower((unsigned char)s.ptr[i]);
    }
    out[64] = '\0';
    return true;
}

void
auth__hmac_hex(const uint8_t key[32], const void *data, size_t len, char out[65])
{
    uint8_t mac[32];
    auth_hmac_sha256(key, 32, data, len, mac);
    hex_encode(mac, 32, out);
}

bool
auth_equal_ct(const void *a, const void *b, size_t len)
{
    const volatile unsigned char *x = a;
    const volatile unsigned char *y = b;
    unsigned char acc = 0;
    for (size_t i = 0; i < len; i++)
        acc |= (unsigned char)(x[i] ^ y[i]);
    return acc == 0;
}

/* ------------------------------------------------------------------------ */
/* Canonical request pieces                                                  */
/* ------------------------------------------------------------------------ */

struct qparam {
    struct slice name;
    struct slice value;
};

static int
qparam_cmp(const void *a, const void *b)
{
    const struct qparam *x = a, *y = b;
    int c = slice_cmp(x->name, y->name);
    return c != 0 ? c : slice_cmp(x->value, y->value);
}

/* A query this short (bytes) is canonicalized in stack buffers: a presigned
 * URL's (seven X-Amz-* parameters, ~400 bytes) is; a longer one (a session
 * token) takes one heap block. */
#define CANON_QUERY_STACK_LEN 1024
#define CANON_QUERY_STACK_PARAMS 16

/*
 * Appends the canonical form of the raw query 'query' to 'out': every
 * name=value decoded then re-encoded, sorted by name then value, joined by
 * '&'. When 'skip_signature' is set, X-Amz-Signature is left out (presigned
 * verification). Returns false (and appends nothing) when a name or value
 * holds a malformed %-escape: the request parser refuses those too, so
 * that the signed query and the executed one cannot differ.
 *
 * Decoding never lengthens a string and encoding at most triples it, so
 * every re-encoded parameter fits, without moving, in 3 x 'query.len'
 * bytes: the parameters point into that one buffer.
 */
static bool
canon_query(struct slice query, bool skip_signature, struct buf *out)
{
    bool is_ok = false;
    size_t n = 1;
    for (size_t i = 0; i < query.len; i++)
        n += query.ptr[i] == '&';
    struct qparam stack_params[CANON_QUERY_STACK_PARAMS];
    char stack_bytes[4 * CANON_QUERY_STACK_LEN];
    struct qparam *params = stack_params;
    char *heap = NULL, *enc = stack_bytes;
    if (n > CANON_QUERY_STACK_PARAMS || query.len > CANON_QUERY_STACK_LEN) {
        heap = xmalloc(n * sizeof(*params) + 4 * query.len + 1);
        params = (struct qparam *)(void *)heap;
        enc = heap + n * sizeof(*params);
    }
    char *tmp = enc + 3 * query.len; /* query.len + 1 bytes of decoding room */
    char *end = enc;
    size_t count = 0, total = 0;

    struct slice rest = query, seg;
    while (slice_split_next(&rest, '&', &seg)) {
        if (seg.len == 0)
            continue;
        struct slice name, value = SLICE_NULL;
        slice_split_next(&seg, '=', &name);
        value = seg;
        long nl = uri_decode(name.ptr, name.len, tmp);
        if (nl < 0)
            goto fail;
        if (skip_signature &&
            slice_eq((struct slice){tmp, (size_t)nl}, SLICE_LIT("X-Amz-Signature")))
            continue;
        struct qparam *p = &params[count++];
        p->name.ptr = end;
        end = uri_encode_to(end, tmp, (size_t)nl, false);
        p->name.len = (size_t)(end - p->name.ptr);
        long vl = uri_decode(value.ptr, value.len, tmp);
        if (vl < 0)
            goto fail;
        p->value.ptr = end;
        end = uri_encode_to(end, tmp, (size_t)vl, false);
        p->value.len = (size_t)(end - p->value.ptr);
        total += p->name.len + p->value.len + 2;
    }
    if (count > 1)
        qsort(params, count, sizeof(*params), qparam_cmp);
    if (count)
        buf_reserve(out, total);
    for (size_t i = 0; i < count; i++) {
        char *o = out->ptr + out->len;
        if (i > 0)
            *o++ = '&';
        memcpy(o, params[i].name.ptr, params[i].name.len);
        o += params[i].name.len;
        *o++ = '=';
        memcpy(o, params[i].value.ptr, params[i].value.len);
        o += params[i].value.len;
        out->len = (size_t)(o - out->ptr);
    }
    if (count)
        out->ptr[out->len] = '\0';
    is_ok = true;
fail:
    free(heap);
    return is_ok;
}

/* The query parameters verification reads, found in one pass over the
 * query (query_scan), and their names. */
enum query_param_id {
    QP_ALGORITHM,
    QP_CREDENTIAL,
    QP_DATE,
    QP_SIGNED_HEADERS,
    QP_SIGNATURE,
    QP_EXPIRES,
    QP_CONTENT_SHA256,
    QP_V2_ACCESS_KEY,
    QP_V2_SIGNATURE,
    QP_COUNT
};

#define QP_NAME(s)                                                                                 \
    {                                                                                              \
        (s), sizeof(s) - 1                                                                         \
    }
static const struct slice query_param_names[QP_COUNT] = {
    [QP_ALGORITHM] = QP_NAME("X-Amz-Algorithm"),
    [QP_CREDENTIAL] = QP_NAME("X-Amz-Credential"),
    [QP_DATE] = QP_NAME("X-Amz-Date"),
    [QP_SIGNED_HEADERS] = QP_NAME("X-Amz-SignedHeaders"),
    [QP_SIGNATURE] = QP_NAME("X-Amz-Signature"),
    [QP_EXPIRES] = QP_NAME("X-Amz-Expires"),
    [QP_CONTENT_SHA256] = QP_NAME("X-Amz-Content-Sha256"),
    [QP_V2_ACCESS_KEY] = QP_NAME("AWSAccessKeyId"),
    [QP_V2_SIGNATURE] = QP_NAME("Signature"),
};

struct query_params {
    bool has[QP_COUNT];
    struct slice raw[QP_COUNT]; /* the raw (still %-encoded) value */
};

/* Fills 'qp' with the raw value of the first parameter of 'query' whose
 * decoded name is each of query_param_names (one pass, where a lookup per
 * name made ten). */
static void
query_scan(struct slice query, struct query_params *qp)
{
    memset(qp, 0, sizeof(*qp));
    struct slice rest = query, seg;
    while (slice_split_next(&rest, '&', &seg)) {
        struct slice n = SLICE_NULL;
        if (seg.len == 0)
            continue; /* "a&&b": slice_next would leave 'n' unset */
        slice_split_next(&seg, '=', &n);
        /* Decoding never grows a string: a raw name longer than this
         * buffer decodes longer than every name sought, or is malformed. */
        char tmp[64];
        if (n.len > sizeof(tmp))
            continue;
        long nl = uri_decode(n.ptr, n.len, tmp);
        for (size_t k = 0; nl >= 0 && k < QP_COUNT; k++) {
            if (!qp->has[k] && slice_eq((struct slice){tmp, (size_t)nl}, query_param_names[k])) {
                qp->has[k] = true;
                qp->raw[k] = seg;
                break;
            }
        }
    }
}

/* Decodes the value of parameter 'id' into 'out' (capacity 'cap',
 * NUL-terminated). Returns true when the query has the parameter; a value
 * longer than 'cap' - 1, or with a malformed escape, comes out empty. */
static bool
query_value(const struct query_params *qp, enum query_param_id id, char *out, size_t cap)
{
    if (!qp->has[id])
        return false;
    struct slice v = qp->raw[id];
    long vl = v.len < cap ? uri_decode(v.ptr, v.len, out) : -1;
    out[vl < 0 ? 0 : vl] = '\0';
    return true;
}

/* Appends a header value trimmed, with inner runs of spaces collapsed. */
static void
canon_header_value(struct buf *b, struct slice v)
{
    v = slice_trim(v);
    buf_reserve(b, v.len);
    bool in_space = false;
    for (size_t i = 0; i < v.len; i++) {
        char c = v.ptr[i];
        if (c == ' ' || c == '\t') {
            if (!in_space)
                b->ptr[b->len++] = ' ';
            in_space = true;
        } else {
            b->ptr[b->len++] = c;
            in_space = false;
        }
    }
}

/* Appends "name:value\n" for each name of the ';'-separated 'signed_headers',
 * values of repeated headers joined by ','. */
static void
canon_headers(const struct auth_request *req, struct slice signed_headers, struct buf *out)
{
    struct slice rest = signed_headers, name;
    while (slice_split_next(&rest, ';', &name)) {
        buf_reserve(out, name.len + 2);
        for (size_t i = 0; i < name.len; i++)
            out->ptr[out->len++] = (char)ascii_lower((unsigned char)name.ptr[i]);
        out->ptr[out->len++] = ':';
        bool first = true;
        for (size_t i = 0; i < req->n_headers; i++) {
            if (slice_casecmp(req->headers[i].name, name) != 0)
                continue;
            if (!first)
                buf_append(out, ",", 1);
            canon_header_value(out, req->headers[i].value);
            first = false;
        }
        buf_append(out, "\n", 1);
    }
}

static bool
find_header(const struct auth_request *req, const char *name, struct slice *out)
{
    struct slice n = slice_from_cstr(name);
    for (size_t i = 0; i < req->n_headers; i++) {
        if (slice_casecmp(req->headers[i].name, n) == 0) {
            *out = req->headers[i].value;
            return true;
        }
    }
    return false;
}

/* Returns true when the ';'-list 'list' contains 'name' (any case). */
static bool
list_has(struct slice list, struct slice name)
{
    struct slice item;
    while (slice_split_next(&list, ';', &item))
        if (slice_casecmp(item, name) == 0)
            return true;
    return false;
}

/* Returns true when the request carries an x-amz-* header that the ';'-list
 * 'signed_headers' does not name. S3 refuses such requests: the signature
 * would not cover a header that changes the operation (x-amz-copy-source,
 * x-amz-acl, x-amz-metadata-directive, ...). */
static bool
has_unsigned_amz_header(const struct auth_request *req, struct slice signed_headers)
{
    for (size_t i = 0; i < req->n_headers; i++) {
        struct slice n = req->headers[i].name;
        if (n.len >= 6 && slice_eq_nocase((struct slice){n.ptr, 6}, "x-amz-") &&
            !list_has(signed_headers, n))
            return true;
    }
    return false;
}

/* The per-thread signing-key cache (see derive_key). It never holds the
 * secret: entries are found by a salted hash of the secret, SHA-256(salt
 * || secret) with a random salt drawn once per thread, so a memory dump of
 * the cache yields derived keys (one day, one region, s3 only) and no
 * secret. (A plain salted hash rather than an HMAC: the fingerprint is
 * computed on every request, and is only compared, never a MAC anyone
 * checks; it costs half the SHA-256 blocks.) */
struct key_cache {
    bool has_salt;
    bool is_valid;
    uint8_t salt[32];
    uint8_t secret_mac[32]; /* SHA-256(salt || secret) */
    char date8[8];
    char region[64];
    size_t region_len;
    uint8_t key[32];
};

static __thread struct key_cache key_cache;

const void *
auth__key_cache_bytes(size_t *len)
{
    *len = sizeof(key_cache);
    return &key_cache;
}

/* Derives the SigV4 signing key for 'date8' and 'region' (service s3). */
static void
derive_key(const char *secret, struct slice date8, struct slice region, uint8_t out[32])
{
    /* The key changes once a day per secret and region: a connection thread
     * remembers the last one it derived (4 HMACs saved per request for 1). */
    struct key_cache *cache = &key_cache;
    size_t sl = strnlen(secret, SECRET_CAP - 1);
    uint8_t mac[32];
    bool can_cache = date8.len == 8 && region.len <= sizeof(cache->region);
    if (can_cache && !cache->has_salt)
        cache->has_salt = auth_random_bytes(cache->salt, sizeof(cache->salt)) == 0;
    can_cache = can_cache && cache->has_salt;
    if (can_cache) {
        uint8_t salted[sizeof(cache->salt) + SECRET_CAP];
        memcpy(salted, cache->salt, sizeof(cache->salt));
        memcpy(salted + sizeof(cache->salt), secret, sl);
        auth_sha256(salted, sizeof(cache->salt) + sl, mac);
        OPENSSL_cleanse(salted, sizeof(cache->salt) + sl);
        if (cache->is_valid && memcmp(cache->date8, date8.ptr, 8) == 0 &&
            region.len == cache->region_len && memcmp(cache->region, region.ptr, region.len) == 0 &&
            auth_equal_ct(cache->secret_mac, mac, sizeof(mac))) {
            memcpy(out, cache->key, 32);
            return;
        }
    }
    char k[4 + SECRET_CAP];
    memcpy(k, "AWS4", 4);
    memcpy(k + 4, secret, sl);
    uint8_t a[32], b[32];
    auth_hmac_sha256(k, 4 + sl, date8.ptr, date8.len, a);
    auth_hmac_sha256(a, 32, region.ptr, region.len, b);
    auth_hmac_sha256(b, 32, "s3", 2, a);
    auth_hmac_sha256(a, 32, "aws4_request", 12, out);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(a, sizeof(a));
    OPENSSL_cleanse(b, sizeof(b));
    if (can_cache) {
        memcpy(cache->secret_mac, mac, sizeof(mac));
        memcpy(cache->date8, date8.ptr, 8);
        memcpy(cache->region, region.ptr, region.len);
        cache->region_len = region.len;
        memcpy(cache->key, out, 32);
        cache->is_valid = true;
    }
}

/*
 * Builds the canonical request from its parts and writes the hex signature
 * of its string to sign under 'key' into 'sig'.
 */
static void
compute_signature(struct slice method, struct slice path, struct slice cquery,
                  struct slice cheaders, struct slice signed_headers, struct slice payload_hash,
                  const char *amz_date, const char *scope, const uint8_t key[32], char sig[65])
{
    struct buf cr;
    buf_init(&cr);
    buf_append(&cr, method.ptr, method.len);
    buf_append(&cr, "\n", 1);
    if (path.len == 0)
        buf_append(&cr, "/", 1);
    else
        buf_append(&cr, path.ptr, path.len);
    buf_append(&cr, "\n", 1);
    buf_append(&cr, cquery.ptr, cquery.len);
    buf_append(&cr, "\n", 1);
    buf_append(&cr, cheaders.ptr, cheaders.len);
    buf_append(&cr, "\n", 1);
    buf_reserve(&cr, signed_headers.len + 1);
    for (size_t i = 0; i < signed_headers.len; i++)
        cr.ptr[cr.len++] = (char)ascii_lower((unsigned char)signed_headers.ptr[i]);
    buf_append(&cr, "\n", 1);
    buf_append(&cr, payload_hash.ptr, payload_hash.len);

    uint8_t h[32];
    char hh[65];
    auth_sha256(cr.ptr, cr.len, h);
    hex_encode(h, 32, hh);
    cr.len = 0;
    buf_append(&cr, ALGORITHM "\n", sizeof(ALGORITHM));
    buf_append(&cr, amz_date, strlen(amz_date));
    buf_append(&cr, "\n", 1);
    buf_append(&cr, scope, strlen(scope));
    buf_append(&cr, "\n", 1);
    buf_append(&cr, hh, 64);
    auth__hmac_hex(key, cr.ptr, cr.len, sig);
    buf_cleanup(&cr);
}

/* ------------------------------------------------------------------------ */
/* Verification                                                              */
/* ------------------------------------------------------------------------ */

/* What the header and the query forms have in common once parsed. */
struct sigv4_input {
    struct slice credential;
    struct slice signed_headers;
    struct slice signature;
    struct slice amz_date; /* "YYYYMMDDTHHMMSSZ" */
    struct slice payload_hash;
    bool is_presigned;
};

static enum auth_result
classify_payload(struct slice h, struct auth_verdict *out)
{
    static const struct {
        const char *name;
        enum auth_payload payload;
    } modes[] = {
        {"UNSIGNED-PAYLOAD", AUTH_PAYLOAD_UNSIGNED},
        {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", AUTH_PAYLOAD_STREAMING_SIGNED},
        {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER},
        {"STREAMING-UNSIGNED-PAYLOAD-TRAILER", AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER},
    };
    for (size_t i = 0; i < ARRAY_LEN(modes); i++) {
        if (slice_eq(h, slice_from_cstr(modes[i].name))) {
            out->payload = modes[i].payload;
            return AUTH_OK;
        }
    }
    if (slice_has_prefix(h, SLICE_LIT("STREAMING-")))
        return AUTH_UNSUPPORTED; /* ECDSA and event streams */
    if (h.len != 64 || hex_decode(h.ptr, 64, out->payload_sha256) != 0)
        return AUTH_MALFORMED;
    out->payload = AUTH_PAYLOAD_HASH;
    return AUTH_OK;
}

/*
 * The checks and the computation shared by both forms: credential scope,
 * key lookup, canonical request and constant-time comparison. 'in' has
 * been parsed from the header or the query; the time rules were applied.
 */
static enum auth_result
verify_common(const struct auth_request *req, const struct sigv4_input *in,
              enum auth_result time_verdict, auth_secret_fn lookup, void *ctx,
              struct auth_verdict *out)
{
    enum auth_result r = AUTH_MALFORMED;
    char secret[SECRET_CAP];
    char want[65], got[65];
    struct buf cq, ch;
    buf_init(&cq);
    buf_init(&ch);
    memset(secret, 0, sizeof(secret));

    /* Credential = key/date/region/service/aws4_request; split from the right. */
    struct slice parts[4];
    struct slice cred = in->credential;
    for (int i = 3; i >= 0; i--) {
        const char *p = cred.ptr + cred.len;
        while (p > cred.ptr && p[-1] != '/')
            p--;
        if (p == cred.ptr)
            goto fail;
        parts[i] = (struct slice){p, (size_t)(cred.ptr + cred.len - p)};
        cred.len = (size_t)(p - 1 - cred.ptr);
    }
    struct slice key = cred, date8 = parts[0], region = parts[1];
    if (key.len == 0 || key.len >= sizeof(out->access_key) || date8.len != 8 ||
        !slice_eq(parts[3], SLICE_LIT("aws4_request")) || !slice_eq(parts[2], SLICE_LIT("s3")))
        goto fail;
    const char *server_region = req->region ? req->region : "us-east-1";
    if (!slice_eq(region, slice_from_cstr(server_region))) {
        r = AUTH_BAD_REGION;
        goto fail;
    }
    if (region.len > 100 || memcmp(date8.ptr, in->amz_date.ptr, 8) != 0)
        goto fail;
    if (in->signed_headers.len == 0 || !auth__parse_sig(in->signature, got))
        goto fail;
    /* AWS requires host among the signed headers: without it, one signature
     * would serve every virtual-hosted bucket (the bucket is in Host). */
    if (!list_has(in->signed_headers, SLICE_LIT("host"))) {
        r = AUTH_HEADERS_NOT_SIGNED;
        goto fail;
    }
    /* Scope problems are reported before the clock, as S3 does. */
    if (time_verdict != AUTH_OK) {
        r = time_verdict;
        goto fail;
    }

    memcpy(out->access_key, key.ptr, key.len);
    out->access_key[key.len] = '\0';
    memcpy(out->amz_date, in->amz_date.ptr, 16);
    out->amz_date[16] = '\0';
    /* date8/region/s3/aws4_request: at most 8 + 1 + 100 + 16 bytes (region checked). */
    char *sc = out->scope;
    memcpy(sc, date8.ptr, 8);
    sc[8] = '/';
    memcpy(sc + 9, region.ptr, region.len);
    memcpy(sc + 9 + region.len, "/s3/aws4_request", sizeof("/s3/aws4_request"));
    out->is_presigned = in->is_presigned;
    if (!canon_query(req->query, in->is_presigned, &cq))
        goto fail;

    if (lookup(ctx, key, secret, sizeof(secret)) != 0) {
        r = AUTH_UNKNOWN_KEY;
        goto fail;
    }
    secret[sizeof(secret) - 1] = '\0';
    derive_key(secret, date8, region, out->signing_key);
    canon_headers(req, in->signed_headers, &ch);
    compute_signature(req->method, req->path, (struct slice){cq.ptr, cq.len},
                      (struct slice){ch.ptr, ch.len}, in->signed_headers, in->payload_hash,
                      out->amz_date, out->scope, out->signing_key, want);
    if (!auth_equal_ct(want, got, 64)) {
        r = AUTH_BAD_SIGNATURE;
        goto fail;
    }
    if (has_unsigned_amz_header(req, in->signed_headers)) {
        r = AUTH_HEADERS_NOT_SIGNED;
        goto fail;
    }
    memcpy(out->seed_signature, want, 65);
    r = AUTH_OK;
fail:
    OPENSSL_cleanse(secret, sizeof(secret));
    buf_cleanup(&cq);
    buf_cleanup(&ch);
    return r;
}

static enum auth_result
verify_header(const struct auth_request *req, struct slice authz, auth_secret_fn lookup, void *ctx,
              struct auth_verdict *out)
{
    struct sigv4_input in = {.is_presigned = false};
    char date_buf[17];
    int64_t t;

    authz = slice_trim(authz);
    struct slice algo = SLICE_NULL;
    struct slice rest = authz;
    slice_split_next(&rest, ' ', &algo);
    if (algo.len == 0)
        return AUTH_MALFORMED;
    if (!slice_eq(algo, SLICE_LIT(ALGORITHM)))
        return AUTH_UNSUPPORTED; /* "AWS key:sig" (SigV2) and anything else */

    /* Credential=..., SignedHeaders=..., Signature=... (any order, spaces optional). */
    struct slice item;
    while (slice_split_next(&rest, ',', &item)) {
        item = slice_trim(item);
        if (item.len == 0)
            continue;
        struct slice k = SLICE_NULL;
        slice_split_next(&item, '=', &k);
        struct slice *dst = NULL;
        if (slice_eq(k, SLICE_LIT("Credential")))
            dst = &in.credential;
        else if (slice_eq(k, SLICE_LIT("SignedHeaders")))
            dst = &in.signed_headers;
        else if (slice_eq(k, SLICE_LIT("Signature")))
            dst = &in.signature;
        else
            return AUTH_MALFORMED;
        if (dst->ptr != NULL)
            return AUTH_MALFORMED;
        *dst = item.len ? item : (struct slice){"", 0};
    }
    if (in.credential.len == 0 || in.signed_headers.len == 0 || in.signature.len == 0)
        return AUTH_MALFORMED;

    struct slice d;
    if (find_header(req, "x-amz-date", &d)) {
        d = slice_trim(d);
        if (amz_date_parse(d, &t) != 0 || !list_has(in.signed_headers, SLICE_LIT("x-amz-date")))
            return AUTH_MALFORMED;
        in.amz_date = d;
    } else if (find_header(req, "date", &d)) {
        if (http_date_parse(d, &t) != 0 || !list_has(in.signed_headers, SLICE_LIT("date")))
            return AUTH_MALFORMED;
        amz_date_format(t, date_buf);
        in.amz_date = (struct slice){date_buf, 16};
    } else {
        return AUTH_MALFORMED;
    }

    if (!find_header(req, "x-amz-content-sha256", &in.payload_hash))
        return AUTH_MALFORMED;
    in.payload_hash = slice_trim(in.payload_hash);
    enum auth_result r = classify_payload(in.payload_hash, out);
    if (r != AUTH_OK)
        return r;

    bool is_skewed = t > req->now_s + MAX_SKEW_S || t < req->now_s - MAX_SKEW_S;
    return verify_common(req, &in, is_skewed ? AUTH_SKEWED : AUTH_OK, lookup, ctx, out);
}

static enum auth_result
verify_query(const struct auth_request *req, const struct query_params *qp, auth_secret_fn lookup,
             void *ctx, struct auth_verdict *out)
{
    /* Decoded copies of the X-Amz-* parameters. */
    char algo[32], cred[256], date[32], expires[32], signed_headers[1024], sig[80], sha[80];
    struct sigv4_input in = {.is_presigned = true};
    int64_t t;
    uint64_t exp;

    if (!query_value(qp, QP_ALGORITHM, algo, sizeof(algo)))
        return AUTH_MALFORMED;
    if (strcmp(algo, ALGORITHM) != 0)
        return AUTH_UNSUPPORTED;
    if (!query_value(qp, QP_CREDENTIAL, cred, sizeof(cred)) ||
        !query_value(qp, QP_DATE, date, sizeof(date)) ||
        !query_value(qp, QP_SIGNED_HEADERS, signed_headers, sizeof(signed_headers)) ||
        !query_value(qp, QP_SIGNATURE, sig, sizeof(sig)))
        return AUTH_MALFORMED;
    in.credential = slice_from_cstr(cred);
    in.amz_date = slice_from_cstr(date);
    in.signed_headers = slice_from_cstr(signed_headers);
    in.signature = slice_from_cstr(sig);
    if (in.credential.len == 0 || in.signed_headers.len == 0 || amz_date_parse(in.amz_date, &t))
        return AUTH_MALFORMED;
    if (!query_value(qp, QP_EXPIRES, expires, sizeof(expires)))
        return AUTH_MALFORMED;
    if (parse_u64(slice_from_cstr(expires), MAX_EXPIRES_S, &exp) != 0)
        return AUTH_BAD_EXPIRES;

    if (query_value(qp, QP_CONTENT_SHA256, sha, sizeof(sha))) {
        in.payload_hash = slice_from_cstr(sha);
    } else {
        in.payload_hash = SLICE_LIT("UNSIGNED-PAYLOAD");
    }
    enum auth_result r = classify_payload(in.payload_hash, out);
    if (r != AUTH_OK)
        return r;
    /* Expired, or not valid yet (signed for a moment well in the future). */
    bool is_expired = exp == 0 || req->now_s > t + (int64_t)exp || t > req->now_s + MAX_SKEW_S;
    return verify_common(req, &in, is_expired ? AUTH_EXPIRED : AUTH_OK, lookup, ctx, out);
}

enum auth_result
auth_sigv4_verify(const struct auth_request *req, auth_secret_fn lookup, void *ctx,
                  struct auth_verdict *out)
{
    struct slice authz;
    memset(out, 0, sizeof(*out));
    struct query_params qp;
    query_scan(req->query, &qp);
    bool has_header = find_header(req, "authorization", &authz);
    bool has_query = qp.has[QP_SIGNATURE] || qp.has[QP_ALGORITHM] || qp.has[QP_CREDENTIAL];
    if (has_header && has_query)
        return AUTH_MALFORMED;
    if (has_header)
        return verify_header(req, authz, lookup, ctx, out);
    if (has_query)
        return verify_query(req, &qp, lookup, ctx, out);
    if (qp.has[QP_V2_ACCESS_KEY] || qp.has[QP_V2_SIGNATURE])
        return AUTH_UNSUPPORTED; /* SigV2 presigned URL */
    return AUTH_ANONYMOUS;
}

const char *
auth_result_name(enum auth_result r)
{
    switch (r) {
    case AUTH_OK:
        return "OK";
    case AUTH_ANONYMOUS:
        return "Anonymous";
    case AUTH_MALFORMED:
        return "AuthorizationMalformed";
    case AUTH_UNSUPPORTED:
        return "UnsupportedAuthorizationType";
    case AUTH_UNKNOWN_KEY:
        return "InvalidAccessKeyId";
    case AUTH_BAD_SIGNATURE:
        return "SignatureDoesNotMatch";
    case AUTH_SKEWED:
        return "RequestTimeTooSkewed";
    case AUTH_EXPIRED:
        return "RequestExpired";
    case AUTH_BAD_EXPIRES:
        return "AuthorizationQueryParametersError";
    case AUTH_BAD_REGION:
        return "AuthorizationHeaderMalformedRegion";
    case AUTH_HEADERS_NOT_SIGNED:
        return "AccessDeniedHeadersNotSigned";
    case AUTH_PARAMS_NOT_SIGNED:
        return "AccessDeniedParametersNotSigned";
    }
    return "Unknown";
}

/* ------------------------------------------------------------------------ */
/* Signing                                                                   */
/* ------------------------------------------------------------------------ */

static int
header_ptr_cmp(const void *a, const void *b)
{
    const struct auth_header *x = *(const struct auth_header *const *)a;
    const struct auth_header *y = *(const struct auth_header *const *)b;
    return slice_casecmp(x->name, y->name);
}

int
auth_sigv4_sign(const struct auth_request *req, const char *access_key, const char *secret,
                char *out, size_t cap)
{
    int rc = -1;
    struct slice host, date, payload;
    const struct auth_header **sorted = NULL;
    struct buf sh, cq, ch;
    buf_init(&sh);
    buf_init(&cq);
    buf_init(&ch);
    int64_t t;

    if (!find_header(req, "host", &host) || !find_header(req, "x-amz-date", &date) ||
        !find_header(req, "x-amz-content-sha256", &payload))
        goto fail;
    date = slice_trim(date);
    payload = slice_trim(payload);
    if (amz_date_parse(date, &t) != 0)
        goto fail;

    /* Every header is signed: sorted lower-case names, duplicates once. */
    sorted = xcalloc(req->n_headers + 1, sizeof(*sorted));
    for (size_t i = 0; i < req->n_headers; i++)
        sorted[i] = &req->headers[i];
    qsort(sorted, req->n_headers, sizeof(*sorted), header_ptr_cmp);
    for (size_t i = 0; i < req->n_headers; i++) {
        if (i > 0 && header_ptr_cmp(&sorted[i - 1], &sorted[i]) == 0)
            continue;
        if (sh.len)
            buf_append(&sh, ";", 1);
        for (size_t j = 0; j < sorted[i]->name.len; j++) {
            char c = (char)ascii_lower((unsigned char)sorted[i]->name.ptr[j]);
            buf_append(&sh, &c, 1);
        }
    }

    const char *region = req->region ? req->region : "us-east-1";
    struct slice date8 = {date.ptr, 8};
    char amz_date[17], scope[160], sig[65];
    uint8_t key[32];
    memcpy(amz_date, date.ptr, 16);
    amz_date[16] = '\0';
    if ((size_t)snprintf(scope, sizeof(scope), "%.8s/%s/s3/aws4_request", date.ptr, region) >=
        sizeof(scope))
        goto fail;
    if (!canon_query(req->query, false, &cq))
        goto fail;
    derive_key(secret, date8, slice_from_cstr(region), key);
    canon_headers(req, (struct slice){sh.ptr, sh.len}, &ch);
    compute_signature(req->method, req->path, (struct slice){cq.ptr, cq.len},
                      (struct slice){ch.ptr, ch.len}, (struct slice){sh.ptr, sh.len}, payload,
                      amz_date, scope, key, sig);
    OPENSSL_cleanse(key, sizeof(key));
    int n = snprintf(out, cap, ALGORITHM " Credential=%s/%s, SignedHeaders=%.*s, Signature=%s",
                     access_key, scope, (int)sh.len, sh.ptr, sig);
    if (n < 0 || (size_t)n >= cap)
        goto fail;
    rc = 0;
fail:
    free(sorted);
    buf_cleanup(&sh);
    buf_cleanup(&cq);
    buf_cleanup(&ch);
    return rc;
}

int
auth_sigv4_presign(const struct auth_request *req, const char *access_key, const char *secret,
                   int64_t expires_s, char *out, size_t cap)
{
    int rc = -1;
    struct slice host;
    struct buf raw, cq, ch;
    buf_init(&raw);
    buf_init(&cq);
    buf_init(&ch);

    if (!find_header(req, "host", &host) || expires_s < 1 || expires_s > MAX_EXPIRES_S)
        goto fail;
    const char *region = req->region ? req->region : "us-east-1";
    char amz_date[17], scope[160], sig[65];
    uint8_t key[32];
    amz_date_format(req->now_s, amz_date);
    if ((size_t)snprintf(scope, sizeof(scope), "%.8s/%s/s3/aws4_request", amz_date, region) >=
        sizeof(scope))
        goto fail;

    /* The caller's query plus our parameters; canon_query sorts and encodes. */
    buf_append(&raw, req->query.ptr, req->query.len);
    if (req->query.len)
        buf_append(&raw, "&", 1);
    buf_append_str(&raw, "X-Amz-Algorithm=" ALGORITHM "&X-Amz-Credential=");
    uri_encode(&raw, access_key, strlen(access_key), false);
    buf_append(&raw, "%2F", 3);
    uri_encode(&raw, scope, strlen(scope), false);
    buf_printf(&raw, "&X-Amz-Date=%s&X-Amz-Expires=%lld&X-Amz-SignedHeaders=host", amz_date,
               (long long)expires_s);
    if (!canon_query((struct slice){raw.ptr, raw.len}, true, &cq))
        goto fail;
    canon_headers(req, SLICE_LIT("host"), &ch);
    derive_key(secret, (struct slice){amz_date, 8}, slice_from_cstr(region), key);
    compute_signature(req->method, req->path, (struct slice){cq.ptr, cq.len},
                      (struct slice){ch.ptr, ch.len}, SLICE_LIT("host"),
                      SLICE_LIT("UNSIGNED-PAYLOAD"), amz_date, scope, key, sig);
    OPENSSL_cleanse(key, sizeof(key));
    int n = snprintf(out, cap, "%.*s&X-Amz-Signature=%s", (int)cq.len, cq.ptr, sig);
    if (n < 0 || (size_t)n >= cap)
        goto fail;
    rc = 0;
fail:
    buf_cleanup(&raw);
    buf_cleanup(&cq);
    buf_cleanup(&ch);
    return rc;
}
