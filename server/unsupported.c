/*
 * unsupported.c: the one table of request headers the server refuses
 * because it does not do what they ask. Accepting such a header and
 * ignoring it would claim a behaviour that is not applied (a redirect
 * that never happens), so the request is answered 501 NotImplemented
 * naming the header, as S3 answers what it cannot do. When a feature lands, its rows leave this
 * table.
 *
 * Each row applies to some kinds of request (scope) and may accept the
 * values the server honours anyway (is_honoured). Headers every SDK sends
 * by default (x-amz-checksum-*, x-amz-sdk-checksum-algorithm, Content-MD5,
 * x-amz-content-sha256) are implemented elsewhere and are not listed.
 * x-amz-request-payer is accepted: it acknowledges charges and asks for no
 * behaviour, so ignoring it claims nothing.
 */
#include "common/common.h"
#include "index/index.h"
#include "server/errors.h"
#include "server/req.h"
#include "server/unsupported.h"

#include <stdio.h>

/* Kinds of request a row applies to. */
enum {
    SCOPE_OBJECT_WRITE = 1, /* PUT or POST on an object: PutObject, CopyObject, multipart */
    SCOPE_OBJECT_READ = 2,  /* GET or HEAD on an object */
    SCOPE_BUCKET_WRITE = 4, /* PUT on a bucket: CreateBucket, PutBucketAcl */
    SCOPE_ANY = 7,
};

struct refused_header {
    const char *name; /* lower case; a prefix when it ends with '-' */
    unsigned scope;
    bool (*is_honoured)(struct s3_req *r, struct slice value); /* NULL: never */
    const char *feature;                                       /* for the message */
};

/* Order matters only for the message: the first matching row names the
 * feature. (Server-side encryption headers are implemented: sse.c; object
 * ACLs, private ones in a public-read bucket included: acl.c.) */
static const struct refused_header refused[] = {
    {"x-amz-website-redirect-location", SCOPE_OBJECT_WRITE, NULL, "website redirects"},
};

/* Which kinds of request 'r' is (a SCOPE_* bit, or 0 for none of them). */
static unsigned
request_scope(const struct s3_req *r)
{
    bool is_write = slice_eq(r->method, SLICE_LIT("PUT")) || slice_eq(r->method, SLICE_LIT("POST"));
    bool is_read = slice_eq(r->method, SLICE_LIT("GET")) || slice_eq(r->method, SLICE_LIT("HEAD"));
    if (r->key.len)
        return is_write ? SCOPE_OBJECT_WRITE : is_read ? SCOPE_OBJECT_READ : 0;
    if (r->bucket.len && slice_eq(r->method, SLICE_LIT("PUT")))
        return SCOPE_BUCKET_WRITE;
    return 0;
}

static bool
row_matches(const struct refused_header *row, struct slice name)
{
    size_t n = strlen(row->name);
    if (row->name[n - 1] == '-')
        return name.len > n && slice_eq_nocase((struct slice){name.ptr, n}, row->name);
    return slice_eq_nocase(name, row->name);
}

bool
s3_refuse_unsupported(struct s3_req *r)
{
    unsigned scope = request_scope(r);
    if (scope == 0)
        return false;
    for (size_t i = 0; i < r->n_headers; i++) {
        struct slice name = r->headers[i].name;
        /* Every row names an x-amz-* header: skip the rest cheaply. */
        if (name.len < 9 || (name.ptr[0] | 0x20) != 'x' || name.ptr[1] != '-')
            continue;
        for (size_t k = 0; k < ARRAY_LEN(refused); k++) {
            const struct refused_header *row = &refused[k];
            if (!(row->scope & scope) || !row_matches(row, name))
                continue;
            if (row->is_honoured && row->is_honoured(r, r->headers[i].value))
                break;
            char msg[320];
            snprintf(msg, sizeof(msg),
                     "The header %.*s asks for %s, which this server does not implement.",
                     (int)MIN(name.len, 64), name.ptr, row->feature);
            log_debug("request %s: refused header %.*s", r->request_id, (int)MIN(name.len, 64),
                      name.ptr);
            s3_respond_error(r, S3_ERR_NOT_IMPLEMENTED, msg);
            return true;
        }
    }
    return false;
}
