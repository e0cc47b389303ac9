/*
 * util.c: small formatters and parsers the handlers share: ETags, HTTP and
 * ISO dates, URI decoding into the request arena and bucket-name rules.
 * All are pure but s3_req_key_check, which answers the request whose key
 * it refuses; the codecs themselves are common/'s (one copy each).
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/errors.h"
#include "server/key.h"
#include "server/req.h"
#include "server/util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void
s3_format_etag(const uint8_t md5[16], uint32_t parts, char *out)
{
    char *p = out;
    *p++ = '"';
    hex_encode(md5, 16, p); /* 32 digits and a NUL */
    p += 32;
    if (parts) {
        *p++ = '-';
        p += u64_format(parts, p);
    }
    *p++ = '"';
    *p = '\0';
}

bool
s3_parse_etag(struct slice s, uint8_t md5[16])
{
    while (s.len && (s.ptr[0] == ' ' || s.ptr[0] == '\t')) {
        s.ptr++;
        s.len--;
    }
    if (s.len >= 2 && s.ptr[0] == 'W' && s.ptr[1] == '/') {
        s.ptr += 2;
        s.len -= 2;
    }
    if (s.len >= 2 && s.ptr[0] == '"' && s.ptr[s.len - 1] == '"') {
        s.ptr++;
        s.len -= 2;
    }
    const char *dash = memchr(s.ptr, '-', s.len);
    if (dash)
        s.len = (size_t)(dash - s.ptr);
    if (s.len != 32)
        return false;
    return hex_decode(s.ptr, 32, md5) == 0;
}

int
server_thread_start(pthread_t *t, const char *name, size_t stack_len, void *(*fn)(void *),
                    void *arg)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (stack_len)
        pthread_attr_setstacksize(&attr, stack_len);
    int err = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (err == 0)
        pthread_setname_np(*t, name); /* a name is a label: its failure is not one */
    return -err;
}

void
s3_format_http_date(int64_t ns, char *out)
{
    http_date_format(ns / 1000000000, out);
}

void
s3_format_iso_date(int64_t ns, char *out)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 40 - n, ".%03dZ", (int)((ns / 1000000) % 1000));
}

bool
s3_uri_decode(struct arena *a, struct slice in, struct slice *out)
{
    char *o = arena_alloc(a, in.len + 1);
    long n = uri_decode(in.ptr, in.len, o);
    if (n < 0)
        return false;
    o[n] = '\0';
    out->ptr = o;
    out->len = (size_t)n;
    return true;
}

bool
s3_bucket_name_is_valid(struct slice n)
{
    if (n.len < 3 || n.len > INDEX_MAX_BUCKET)
        return false;
    int dots = 0;
    bool all_digits_dots = true;
    for (size_t i = 0; i < n.len; i++) {
        char c = n.ptr[i];
        bool is_alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!is_alnum && c != '.' && c != '-')
            return false;
        if ((i == 0 || i == n.len - 1) && !is_alnum)
            return false;
        if (c == '.') {
            dots++;
            if (i > 0 && (n.ptr[i - 1] == '.' || n.ptr[i - 1] == '-'))
                return false;
            if (i + 1 < n.len && n.ptr[i + 1] == '-')
                return false;
        }
        if (!(c == '.' || (c >= '0' && c <= '9')))
            all_digits_dots = false;
    }
    if (all_digits_dots && dots == 3)
        return false; /* looks like an IPv4 address */
    if (slice_has_prefix(n, SLICE_LIT("xn--")) || slice_has_prefix(n, SLICE_LIT("sthree-")))
        return false;
    if (n.len >= 8 && memcmp(n.ptr + n.len - 8, "-s3alias", 8) == 0)
        return false;
    if (n.len >= 7 && memcmp(n.ptr + n.len - 7, "--ol-s3", 7) == 0)
        return false;
    return true;
}

bool
s3_req_key_check(struct s3_req *r)
{
    bool is_write = slice_eq(r->method, SLICE_LIT("PUT")) || slice_eq(r->method, SLICE_LIT("POST"));
    if (!is_write || r->key.len == 0 || key_is_writable(r->key))
        return true;
    s3_respond_error(r, S3_ERR_INVALID_URI,
                     "Object keys must be UTF-8 text without NUL characters");
    return false;
}
