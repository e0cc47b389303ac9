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

static int
lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

static int
hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = lower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

bool
auth__eq_nocase(struct slice a, struct slice b)
{
    if (a.len != b.len)
        return false;
    for (size_t i = 0; i < a.len; i++)
        if (lower((unsigned char)a.ptr[i]) != lower((unsigned char)b.ptr[i]))
            return false;
    return true;
}

bool
auth__parse_sig(struct slice s, char out[65])
{
    if (s.len != 64)
        return false;
    for (size_t i = 0; i < 64; i++) {
        if (hexval((unsigned char)s.ptr[i]) < 0)
            return false;
        out[i] = (char)lower((unsigned char)s.ptr[i]);
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

static struct slice
slice_trim(struct slice s)
{
    while (s.len > 0 && (s.ptr[0] == ' ' || s.ptr[0] == '\t')) {
        s.ptr++;
        s.len--;
    }
    while (s.len > 0 && (s.ptr[s.len - 1] == ' ' || s.ptr[s.len - 1] == '\t'))
        s.len--;
    return s;
}

/* Splits 's' at the first 'sep': '*head' gets the part before it and 's'
 * the rest after it (empty when 'sep' is absent). Returns false when 's'
 * was already empty. */
static bool
slice_next(struct slice *s, char sep, struct slice *head)
{
    if (s->len == 0)
        return false;
    const char *p = memchr(s->ptr, sep, s->len);
    if (p == NULL) {
        *head = *s;
        s->ptr += s->len;
        s->len = 0;
    } else {
        head->ptr = s->ptr;
        head->len = (size_t)(p - s->ptr);
        s->len -= head->len + 1;
        s->ptr = p + 1;
    }
    return true;
}

/* unreserved[c]: byte c stays as is in a SigV4 URI encoding. */
static const bool unreserved[256] = {
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
    ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
    ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
    ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
    ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1,
    ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1,
    ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['-'] = 1, ['_'] = 1,
    ['.'] = 1, ['~'] = 1,
};

/* Appends 's' URI-encoded per SigV4: unreserved bytes kept, all others %XX. */
static void
uri_encode(struct buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    buf_reserve(b, len * 3);
    char *o = b->ptr + b->len;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved[c]) {
            *o++ = (char)c;
        } else {
            o[0] = '%';
            o[1] = hex[c >> 4];
            o[2] = hex[c & 15];
            o += 3;
        }
    }
    b->len = (size_t)(o - b->ptr);
}

/* Percent-decodes 'in' into 'out' (room for in.len bytes) and returns the
 * decoded length. '+' stays a literal '+'; a '%' not followed by two hex
 * digits is kept as is, so that it re-encodes to %25. Runs without '%'
 * are copied whole. */
static size_t
pct_decode(struct slice in, char *out)
{
    size_t o = 0, i = 0;
    while (i < in.len) {
        const char *pct = memchr(in.ptr + i, '%', in.len - i);
        size_t run = pct ? (size_t)(pct - (in.ptr + i)) : in.len - i;
        memcpy(out + o, in.ptr + i, run);
        o += run;
        i += run;
        if (i >= in.len)
            break;
        if (i + 2 < in.len) {
            int hi = hexval((unsigned char)in.ptr[i + 1]);
            int lo = hexval((unsigned char)in.ptr[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out[o++] = (char)(hi << 4 | lo);
                i += 3;
                continue;
            }
        }
        out[o++] = in.ptr[i++];
    }
    return o;
}

/* ------------------------------------------------------------------------ */
/* Dates                                                                     */
/* ------------------------------------------------------------------------ */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t
days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void
civil_from_days(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int
digits(const char *p, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

static int
to_epoch(int y, int mo, int d, int h, int mi, int s, int64_t *out)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
        mi > 59 || s > 60)
        return -1;
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
    return 0;
}

/* Parses "YYYYMMDDTHHMMSSZ". Returns 0 or -1. */
static int
parse_amz_date(struct slice s, int64_t *out)
{
    int y, mo, d, h, mi, sec;
    if (s.len != 16 || s.ptr[8] != 'T' || s.ptr[15] != 'Z')
        return -1;
    if (digits(s.ptr, 4, &y) || digits(s.ptr + 4, 2, &mo) || digits(s.ptr + 6, 2, &d) ||
        digits(s.ptr + 9, 2, &h) || digits(s.ptr + 11, 2, &mi) || digits(s.ptr + 13, 2, &sec))
        return -1;
    return to_epoch(y, mo, d, h, mi, sec, out);
}

static void
put_digits(char *p, int v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

static void
format_amz_date(int64_t t, char out[17])
{
    int y, mo, d;
    if (t < 0)
        t = 0;
    int64_t days = t / 86400;
    int rem = (int)(t - days * 86400);
    civil_from_days(days, &y, &mo, &d);
    put_digits(out, y % 10000, 4);
    put_digits(out + 4, mo, 2);
    put_digits(out + 6, d, 2);
    out[8] = 'T';
    put_digits(out + 9, rem / 3600, 2);
    put_digits(out + 11, rem / 60 % 60, 2);
    put_digits(out + 13, rem % 60, 2);
    out[15] = 'Z';
    out[16] = '\0';
}

/* Parses an RFC 1123 date, "Fri, 24 May 2013 00:00:00 GMT" (the weekday is
 * optional and not checked). Returns 0 or -1. */
static int
parse_http_date(struct slice s, int64_t *out)
{
    static const char months[] = "janfebmaraprmayjunjulaugsepoctnovdec";
    const char *comma = s.len ? memchr(s.ptr, ',', s.len) : NULL;
    if (comma != NULL) {
        s.len -= (size_t)(comma + 1 - s.ptr);
        s.ptr = comma + 1;
    }
    s = slice_trim(s);
    /* d[d] Mon yyyy hh:mm:ss GMT */
    size_t dl = (s.len > 1 && s.ptr[1] == ' ') ? 1 : 2;
    if (s.len != dl + 22)
        return -1;
    int y, mo = 0, d, h, mi, sec;
    const char *p = s.ptr + dl;
    if (digits(s.ptr, dl, &d) || p[0] != ' ' || p[4] != ' ' || p[9] != ' ' || p[12] != ':' ||
        p[15] != ':' || p[18] != ' ' ||
        !auth__eq_nocase((struct slice){p + 19, 3}, SLICE_LIT("GMT")))
        return -1;
    for (int i = 0; i < 12; i++)
        if (auth__eq_nocase((struct slice){p + 1, 3}, (struct slice){months + 3 * i, 3}))
            mo = i + 1;
    if (mo == 0 || digits(p + 5, 4, &y) || digits(p + 10, 2, &h) || digits(p + 13, 2, &mi) ||
        digits(p + 16, 2, &sec))
        return -1;
    return to_epoch(y, mo, d, h, mi, sec, out);
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

/*
 * Appends the canonical form of the raw query 'query' to 'out': every
 * name=value decoded then re-encoded, sorted by name then value, joined by
 * '&'. When 'skip_signature' is set, X-Amz-Signature is left out (presigned
 * verification).
 */
static void
canon_query(struct slice query, bool skip_signature, struct buf *out)
{
    size_t n = 1;
    for (size_t i = 0; i < query.len; i++)
        n += query.ptr[i] == '&';
    struct qparam *params = xcalloc(n, sizeof(*params));
    size_t *offs = xcalloc(n * 3, sizeof(*offs));
    char *tmp = xmalloc(query.len + 1);
    struct buf enc;
    buf_init(&enc);
    size_t count = 0;

    struct slice rest = query, seg;
    while (slice_next(&rest, '&', &seg)) {
        if (seg.len == 0)
            continue;
        struct slice name, value = SLICE_NULL;
        slice_next(&seg, '=', &name);
        value = seg;
        size_t nl = pct_decode(name, tmp);
        if (skip_signature && slice_eq((struct slice){tmp, nl}, SLICE_LIT("X-Amz-Signature")))
            continue;
        offs[3 * count] = enc.len;
        uri_encode(&enc, tmp, nl);
        offs[3 * count + 1] = enc.len;
        uri_encode(&enc, tmp, pct_decode(value, tmp));
        offs[3 * count + 2] = enc.len;
        count++;
    }
    for (size_t i = 0; i < count; i++) {
        params[i].name = (struct slice){enc.ptr + offs[3 * i], offs[3 * i + 1] - offs[3 * i]};
        params[i].value =
            (struct slice){enc.ptr + offs[3 * i + 1], offs[3 * i + 2] - offs[3 * i + 1]};
    }
    if (count > 1)
        qsort(params, count, sizeof(*params), qparam_cmp);
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            buf_append(out, "&", 1);
        buf_append(out, params[i].name.ptr, params[i].name.len);
        buf_append(out, "=", 1);
        buf_append(out, params[i].value.ptr, params[i].value.len);
    }
    buf_cleanup(&enc);
    free(tmp);
    free(offs);
    free(params);
}

/* Looks up the first query parameter whose decoded name is 'name' and
 * decodes its value into 'out' (capacity 'cap', NUL-terminated). Returns
 * true when found; a value longer than 'cap' - 1 is truncated to empty. */
static bool
query_get(struct slice query, const char *name, char *out, size_t cap)
{
    struct slice rest = query, seg;
    size_t want = strlen(name);
    while (slice_next(&rest, '&', &seg)) {
        struct slice n = SLICE_NULL;
        if (seg.len == 0)
            continue; /* "a&&b": slice_next would leave 'n' unset */
        slice_next(&seg, '=', &n);
        /* Decoding never grows a string, so a name longer than 3x 'want'
         * cannot match and the stack buffer below is enough. */
        char tmp[64];
        if (n.len > sizeof(tmp) || want >= sizeof(tmp))
            continue;
        size_t nl = pct_decode(n, tmp);
        if (nl != want || memcmp(tmp, name, nl) != 0)
            continue;
        if (seg.len >= cap) {
            out[0] = '\0';
            return true;
        }
        out[pct_decode(seg, out)] = '\0';
        return true;
    }
    return false;
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
    while (slice_next(&rest, ';', &name)) {
        buf_reserve(out, name.len + 2);
        for (size_t i = 0; i < name.len; i++)
            out->ptr[out->len++] = (char)lower((unsigned char)name.ptr[i]);
        out->ptr[out->len++] = ':';
        bool first = true;
        for (size_t i = 0; i < req->n_headers; i++) {
            if (!auth__eq_nocase(req->headers[i].name, name))
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
        if (auth__eq_nocase(req->headers[i].name, n)) {
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
    while (slice_next(&list, ';', &item))
        if (auth__eq_nocase(item, name))
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
        if (n.len >= 6 && auth__eq_nocase((struct slice){n.ptr, 6}, SLICE_LIT("x-amz-")) &&
            !list_has(signed_headers, n))
            return true;
    }
    return false;
}

/* The per-thread signing-key cache (see derive_key). It never holds the
 * secret: entries are found by an HMAC of the secret under a random salt
 * drawn once per thread, so a memory dump of the cache yields derived keys
 * (one day, one region, s3 only) and no secret. */
struct key_cache {
    bool has_salt;
    bool is_valid;
    uint8_t salt[32];
    uint8_t secret_mac[32]; /* HMAC-SHA256(salt, secret) */
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
        auth_hmac_sha256(cache->salt, sizeof(cache->salt), secret, sl, mac);
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
    for (size_t i = 0; i < signed_headers.len; i++) {
        char c = (char)lower((unsigned char)signed_headers.ptr[i]);
        buf_append(&cr, &c, 1);
    }
    buf_append(&cr, "\n", 1);
    buf_append(&cr, payload_hash.ptr, payload_hash.len);

    uint8_t h[32];
    char hh[65];
    auth_sha256(cr.ptr, cr.len, h);
    hex_encode(h, 32, hh);
    cr.len = 0;
    buf_printf(&cr, ALGORITHM "\n%s\n%s\n%s", amz_date, scope, hh);
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
    if (h.len != 64)
        return AUTH_MALFORMED;
    for (size_t i = 0; i < 64; i++) {
        int hi = hexval((unsigned char)h.ptr[i]);
        if (hi < 0)
            return AUTH_MALFORMED;
        if (i % 2 == 0)
            out->payload_sha256[i / 2] = (uint8_t)(hi << 4);
        else
            out->payload_sha256[i / 2] |= (uint8_t)hi;
    }
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
    snprintf(out->scope, sizeof(out->scope), "%.8s/%.*s/s3/aws4_request", date8.ptr,
             (int)region.len, region.ptr);
    out->is_presigned = in->is_presigned;

    if (lookup(ctx, key, secret, sizeof(secret)) != 0) {
        r = AUTH_UNKNOWN_KEY;
        goto fail;
    }
    secret[sizeof(secret) - 1] = '\0';
    derive_key(secret, date8, region, out->signing_key);

    canon_query(req->query, in->is_presigned, &cq);
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
    slice_next(&rest, ' ', &algo);
    if (algo.len == 0)
        return AUTH_MALFORMED;
    if (!slice_eq(algo, SLICE_LIT(ALGORITHM)))
        return AUTH_UNSUPPORTED; /* "AWS key:sig" (SigV2) and anything else */

    /* Credential=..., SignedHeaders=..., Signature=... (any order, spaces optional). */
    struct slice item;
    while (slice_next(&rest, ',', &item)) {
        item = slice_trim(item);
        if (item.len == 0)
            continue;
        struct slice k = SLICE_NULL;
        slice_next(&item, '=', &k);
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
        if (parse_amz_date(d, &t) != 0 || !list_has(in.signed_headers, SLICE_LIT("x-amz-date")))
            return AUTH_MALFORMED;
        in.amz_date = d;
    } else if (find_header(req, "date", &d)) {
        if (parse_http_date(d, &t) != 0 || !list_has(in.signed_headers, SLICE_LIT("date")))
            return AUTH_MALFORMED;
        format_amz_date(t, date_buf);
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
verify_query(const struct auth_request *req, auth_secret_fn lookup, void *ctx,
             struct auth_verdict *out)
{
    /* Decoded copies of the X-Amz-* parameters. */
    char algo[32], cred[256], date[32], expires[32], signed_headers[1024], sig[80], sha[80];
    struct sigv4_input in = {.is_presigned = true};
    int64_t t;
    uint64_t exp;

    if (!query_get(req->query, "X-Amz-Algorithm", algo, sizeof(algo)))
        return AUTH_MALFORMED;
    if (strcmp(algo, ALGORITHM) != 0)
        return AUTH_UNSUPPORTED;
    if (!query_get(req->query, "X-Amz-Credential", cred, sizeof(cred)) ||
        !query_get(req->query, "X-Amz-Date", date, sizeof(date)) ||
        !query_get(req->query, "X-Amz-SignedHeaders", signed_headers, sizeof(signed_headers)) ||
        !query_get(req->query, "X-Amz-Signature", sig, sizeof(sig)))
        return AUTH_MALFORMED;
    in.credential = slice_from_cstr(cred);
    in.amz_date = slice_from_cstr(date);
    in.signed_headers = slice_from_cstr(signed_headers);
    in.signature = slice_from_cstr(sig);
    if (in.credential.len == 0 || in.signed_headers.len == 0 || parse_amz_date(in.amz_date, &t))
        return AUTH_MALFORMED;
    if (!query_get(req->query, "X-Amz-Expires", expires, sizeof(expires)) ||
        parse_u64(slice_from_cstr(expires), MAX_EXPIRES_S, &exp) != 0 || exp == 0)
        return AUTH_BAD_EXPIRES;

    if (query_get(req->query, "X-Amz-Content-Sha256", sha, sizeof(sha))) {
        in.payload_hash = slice_from_cstr(sha);
    } else {
        in.payload_hash = SLICE_LIT("UNSIGNED-PAYLOAD");
    }
    enum auth_result r = classify_payload(in.payload_hash, out);
    if (r != AUTH_OK)
        return r;
    /* Expired, or not valid yet (signed for a moment well in the future). */
    bool is_expired = req->now_s > t + (int64_t)exp || t > req->now_s + MAX_SKEW_S;
    return verify_common(req, &in, is_expired ? AUTH_EXPIRED : AUTH_OK, lookup, ctx, out);
}

/* Returns true when the query has a parameter whose raw name is 'name'. */
static bool
query_has(struct slice query, const char *name)
{
    char v[1];
    return query_get(query, name, v, sizeof(v));
}

enum auth_result
auth_sigv4_verify(const struct auth_request *req, auth_secret_fn lookup, void *ctx,
                  struct auth_verdict *out)
{
    struct slice authz;
    memset(out, 0, sizeof(*out));
    bool has_header = find_header(req, "authorization", &authz);
    bool has_query = query_has(req->query, "X-Amz-Signature") ||
                     query_has(req->query, "X-Amz-Algorithm") ||
                     query_has(req->query, "X-Amz-Credential");
    if (has_header && has_query)
        return AUTH_MALFORMED;
    if (has_header)
        return verify_header(req, authz, lookup, ctx, out);
    if (has_query)
        return verify_query(req, lookup, ctx, out);
    if (query_has(req->query, "AWSAccessKeyId") || query_has(req->query, "Signature"))
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
    size_t n = MIN(x->name.len, y->name.len);
    for (size_t i = 0; i < n; i++) {
        int c = lower((unsigned char)x->name.ptr[i]) - lower((unsigned char)y->name.ptr[i]);
        if (c != 0)
            return c;
    }
    return x->name.len < y->name.len ? -1 : x->name.len > y->name.len;
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
    if (parse_amz_date(date, &t) != 0)
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
            char c = (char)lower((unsigned char)sorted[i]->name.ptr[j]);
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
    derive_key(secret, date8, slice_from_cstr(region), key);
    canon_query(req->query, false, &cq);
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
    format_amz_date(req->now_s, amz_date);
    if ((size_t)snprintf(scope, sizeof(scope), "%.8s/%s/s3/aws4_request", amz_date, region) >=
        sizeof(scope))
        goto fail;

    /* The caller's query plus our parameters; canon_query sorts and encodes. */
    buf_append(&raw, req->query.ptr, req->query.len);
    if (req->query.len)
        buf_append(&raw, "&", 1);
    buf_append_str(&raw, "X-Amz-Algorithm=" ALGORITHM "&X-Amz-Credential=");
    uri_encode(&raw, access_key, strlen(access_key));
    buf_append(&raw, "%2F", 3);
    uri_encode(&raw, scope, strlen(scope));
    buf_printf(&raw, "&X-Amz-Date=%s&X-Amz-Expires=%lld&X-Amz-SignedHeaders=host", amz_date,
               (long long)expires_s);
    canon_query((struct slice){raw.ptr, raw.len}, true, &cq);
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
