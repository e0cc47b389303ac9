/*
 * op_bucket.c: bucket operations: ListBuckets, CreateBucket, HeadBucket,
 * DeleteBucket, GetBucketLocation, GetBucketVersioning, Get/PutBucketAcl.
 * Every bucket has an owner (the user that created it; root for buckets
 * made before users existed). ACLs are canned only: private or
 * public-read (anonymous GET/HEAD/List).
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/acl.h"
#include "server/bucket_access.h"
#include "server/body.h"
#include "server/errors.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/util.h"
#include "server/xml_in.h"
#include "server/xml_out.h"

#include <errno.h>
#include <stdio.h>
#include <microhttpd.h>

/* ListBuckets pages: max-buckets (1..10000), continuation-token (base64 of
 * the last name returned: opaque, and stable under concurrent creates and
 * deletes), prefix, bucket-region. Without max-buckets every visible bucket
 * is returned in one answer, as S3 does. */
#define LIST_BUCKETS_MAX 10000

struct list_buckets_ctx {
    struct s3_req *r;
    struct buf *b;
    struct slice prefix;
    struct slice after; /* names <= after are skipped */
    uint32_t max, n;
    bool is_truncated;
    char last[INDEX_MAX_BUCKET + 1];
};

static int
list_bucket_one(void *ctx, const struct index_bucket *bk)
{
    struct list_buckets_ctx *c = ctx;
    struct s3_req *r = c->r;
    struct slice name = slice_from_cstr(bk->name);
    if (c->after.len && slice_cmp(name, c->after) <= 0)
        return 0;
    if (!slice_has_prefix(name, c->prefix))
        return 0;
    /* Root sees every bucket; a user its own and those granted to it. */
    if (!r->principal.is_root && strcmp(s3_bucket_owner_id(r, bk), r->user_id) != 0) {
        struct index_grant g;
        if (index_grant_get(r->srv->index, slice_from_cstr(r->user_id), bk->id, &g) != 0)
            return 0;
    }
    if (c->n == c->max) {
        c->is_truncated = true;
        return 1;
    }
    c->n++;
    snprintf(c->last, sizeof(c->last), "%s", bk->name);
    char date[40];
    s3_format_iso_date(bk->created_ns, date);
    buf_append_str(c->b, "<Bucket>");
    xml_elem_str(c->b, "Name", bk->name);
    xml_elem_str(c->b, "CreationDate", date);
    xml_elem_str(c->b, "BucketRegion", r->srv->cfg.region);
    buf_append_str(c->b, "</Bucket>");
    return 0;
}

void
op_list_buckets(struct s3_req *r)
{
    struct list_buckets_ctx ctx = {.r = r, .max = UINT32_MAX};
    const struct s3_param *p;
    if ((p = s3_req_param(r, "max-buckets"))) {
        uint64_t v;
        if (parse_u64(p->value, LIST_BUCKETS_MAX, &v) != 0 || v == 0) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "max-buckets must be an integer from 1 to 10000");
            return;
        }
        ctx.max = (uint32_t)v;
    }
    if ((p = s3_req_param(r, "continuation-token"))) {
        char *dec = arena_alloc(r->arena, base64_decoded_cap(p->value.len) + 1);
        long n = base64_decode(p->value.ptr, p->value.len, dec);
        if (n <= 0 || n > INDEX_MAX_BUCKET) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "The continuation token provided is incorrect");
            return;
        }
        ctx.after = (struct slice){dec, (size_t)n};
    }
    if ((p = s3_req_param(r, "prefix")))
        ctx.prefix = p->value;
    /* Every bucket lives in this server's region. */
    p = s3_req_param(r, "bucket-region");
    bool other_region = p && !slice_eq(p->value, slice_from_cstr(r->srv->cfg.region));

    struct buf b;
    buf_init(&b);
    ctx.b = &b;
    xml_begin(&b, "ListAllMyBucketsResult");
    buf_append_str(&b, "<Owner>");
    xml_elem_str(&b, "ID", r->user_id);
    xml_elem_str(&b, "DisplayName", r->user_name);
    buf_append_str(&b, "</Owner><Buckets>");
    int rc = other_region ? 0 : index_bucket_list(r->srv->index, list_bucket_one, &ctx);
    buf_append_str(&b, "</Buckets>");
    if (ctx.is_truncated) {
        char *tok = arena_alloc(r->arena, base64_encoded_len(strlen(ctx.last)) + 1);
        base64_encode(ctx.last, strlen(ctx.last), tok);
        xml_elem_str(&b, "ContinuationToken", tok);
    }
    if (s3_req_param(r, "prefix"))
        xml_elem(&b, "Prefix", ctx.prefix);
    xml_end(&b, "ListAllMyBucketsResult");
    if (rc < 0)
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
    else
        s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

/* x-amz-object-ownership of CreateBucket: an OWNERSHIP_* value (absent:
 * BucketOwnerEnforced, AWS's default for new buckets since April 2023, so
 * ACLs start off), or -1 for an unknown one. The setting is stored with
 * every new bucket: a bucket with none stored (made before this default)
 * keeps ACLs on. */
static int
bucket_ownership_from_header(struct s3_req *r)
{
    struct slice v = s3_req_header(r, "x-amz-object-ownership");
    if (!v.ptr)
        return OWNERSHIP_BUCKET_OWNER_ENFORCED;
    if (slice_eq(v, SLICE_LIT("ObjectWriter")))
        return OWNERSHIP_OBJECT_WRITER;
    if (slice_eq(v, SLICE_LIT("BucketOwnerPreferred")))
        return OWNERSHIP_BUCKET_OWNER_PREFERRED;
    if (slice_eq(v, SLICE_LIT("BucketOwnerEnforced")))
        return OWNERSHIP_BUCKET_OWNER_ENFORCED;
    return -1;
}

static void
create_bucket_end(struct s3_req *r)
{
    struct slice location = SLICE_NULL;
    if (xml_parse_create_bucket(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len, r->arena,
                                &location) != XML_IN_OK) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    if (location.len && !slice_eq(location, slice_from_cstr(r->srv->cfg.region))) {
        s3_respond_error(r, S3_ERR_INVALID_LOCATION_CONSTRAINT, NULL);
        return;
    }
    if (!s3_bucket_acl_check_create(r))
        return;
    int own = bucket_ownership_from_header(r);
    if (own < 0) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid x-amz-object-ownership header");
        return;
    }
    struct slice lock = s3_req_header(r, "x-amz-bucket-object-lock-enabled");
    bool is_locked = slice_eq_nocase(lock, "true");
    if (lock.ptr && !is_locked && !slice_eq_nocase(lock, "false")) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                         "x-amz-bucket-object-lock-enabled must be true or false");
        return;
    }
    struct index_bucket bk;
    int rc = index_bucket_create(r->srv->index, r->bucket, r->user_id, clock_now_ns(), &bk);
    if (rc == -EEXIST) {
        bool is_mine = !strcmp(s3_bucket_owner_id(r, &bk), r->user_id);
        /* us-east-1 answers its owner 200 and changes nothing (AWS's
         * legacy behaviour); every other region BucketAlreadyOwnedByYou. */
        bool is_legacy = is_mine && !strcmp(r->srv->cfg.region, "us-east-1");
        if (!is_legacy) {
            s3_respond_error(
                r, is_mine ? S3_ERR_BUCKET_ALREADY_OWNED_BY_YOU : S3_ERR_BUCKET_ALREADY_EXISTS,
                NULL);
            return;
        }
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        s3_resp_header(resp, "Location",
                       arena_sprintf(r->arena, "/%.*s", (int)r->bucket.len, r->bucket.ptr));
        s3_respond(r, 200, resp);
        return;
    }
    /* Object Lock turns versioning on for good (it cannot be suspended). */
    if (rc == 0 && is_locked)
        rc = index_versioning_put(r->srv->index, bk.id, INDEX_VERSIONING_ENABLED, true);
    if (rc < 0) {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
        return;
    }
    {
        char v = (char)('0' + own);
        rc = index_bucket_config_put(r->srv->index, bk.id,
                                     (enum index_bucket_config_kind)BUCKET_ACCESS_KIND_OWNERSHIP,
                                     &v, 1);
        if (rc == 0)
            rc = bucket_access_reload(r->srv->access, r->srv->index, bk.id);
        if (rc < 0) {
            s3_respond_error(r, s3_error_from_errno(rc), NULL);
            return;
        }
    }
    if (!s3_bucket_acl_after_create(r, &bk))
        return;
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    char *loc = arena_sprintf(r->arena, "/%.*s", (int)r->bucket.len, r->bucket.ptr);
    s3_resp_header(resp, "Location", loc);
    s3_respond(r, 200, resp);
}

void
op_create_bucket(struct s3_req *r)
{
    if (!s3_bucket_name_is_valid(r->bucket)) {
        s3_respond_error(r, S3_ERR_INVALID_BUCKET_NAME, NULL);
        return;
    }
    s3_req_expect_xml(r, 64 * 1024, create_bucket_end);
}

void
op_head_bucket(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    s3_resp_header(resp, "x-amz-bucket-region", r->srv->cfg.region);
    s3_respond(r, 200, resp);
}

void
op_delete_bucket(struct s3_req *r)
{
    struct index_bucket bk;
    /* The lookup re-authorizes when the bucket appeared or was re-created
     * since the route was authorized; the delete then acts only on the id
     * that was authorized, so a bucket re-created in between survives. */
    if (!s3_bucket_lookup(r, &bk))
        return;
    int rc = index_bucket_delete(r->srv->index, r->bucket, bk.id);
    /* Only uploads in progress remain: S3 aborts them with the bucket.
     * Uploads created meanwhile are aborted in the next round. */
    for (int round = 0; rc == -EBUSY && round < 8; round++) {
        rc = s3_bucket_abort_uploads(r, bk.id);
        if (rc == 0)
            rc = index_bucket_delete(r->srv->index, r->bucket, bk.id);
    }
    if (rc == 0) /* its configurations went with it: drop the cached entry */
        bucket_access_reload(r->srv->access, r->srv->index, bk.id);
    if (rc == 0)
        s3_respond_empty(r, 204);
    else if (rc == -ENOENT)
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
    else if (rc == -ENOTEMPTY || rc == -EBUSY)
        s3_respond_error(r, S3_ERR_BUCKET_NOT_EMPTY, NULL);
    else if (rc == -ESTALE)
        s3_respond_error(r, S3_ERR_SLOW_DOWN, "The bucket changed during the request");
    else
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
}

void
op_get_bucket_location(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    struct buf b;
    buf_init(&b);
    buf_append_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint "
                       "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    /* us-east-1 is spelled as an empty constraint, as S3 does. */
    if (strcmp(r->srv->cfg.region, "us-east-1") != 0)
        xml_escape(&b, slice_from_cstr(r->srv->cfg.region));
    buf_append_str(&b, "</LocationConstraint>");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}
