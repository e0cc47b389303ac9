/*
 * op_bucket.c: bucket operations: ListBuckets, CreateBucket, HeadBucket,
 * DeleteBucket, GetBucketLocation, GetBucketVersioning.
 */
#include "server/server.h"
#include "server/xml_in.h"

#include <errno.h>
#include <microhttpd.h>

bool
s3_bucket_lookup(struct s3_req *r, struct index_bucket *out)
{
    int rc = index_bucket_get(r->srv->index, r->bucket, out);
    if (rc == 0)
        return true;
    if (rc == -ENOENT)
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
    else
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
    return false;
}

struct list_buckets_ctx {
    struct buf *b;
};

static int
list_bucket_one(void *ctx, const struct index_bucket *bk)
{
    struct list_buckets_ctx *c = ctx;
    char date[40];
    s3_format_iso_date(bk->created_ns, date);
    buf_append_str(c->b, "<Bucket>");
    xml_elem_str(c->b, "Name", bk->name);
    xml_elem_str(c->b, "CreationDate", date);
    buf_append_str(c->b, "</Bucket>");
    return 0;
}

void
op_list_buckets(struct s3_req *r)
{
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "ListAllMyBucketsResult");
    buf_append_str(&b, "<Owner>");
    xml_elem_str(&b, "ID", r->srv->owner_id);
    xml_elem_str(&b, "DisplayName", "root");
    buf_append_str(&b, "</Owner><Buckets>");
    struct list_buckets_ctx ctx = {&b};
    int rc = index_bucket_list(r->srv->index, list_bucket_one, &ctx);
    buf_append_str(&b, "</Buckets>");
    xml_end(&b, "ListAllMyBucketsResult");
    if (rc < 0)
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
    else
        s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
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
    struct index_bucket bk;
    int rc = index_bucket_create(r->srv->index, r->bucket, r->srv->owner_id, clock_now_ns(), &bk);
    if (rc == -EEXIST) {
        s3_respond_error(r, S3_ERR_BUCKET_ALREADY_OWNED_BY_YOU, NULL);
        return;
    }
    if (rc < 0) {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
        return;
    }
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
    int rc = index_bucket_delete(r->srv->index, r->bucket);
    if (rc == 0)
        s3_respond_empty(r, 204);
    else if (rc == -ENOENT)
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
    else if (rc == -ENOTEMPTY)
        s3_respond_error(r, S3_ERR_BUCKET_NOT_EMPTY, NULL);
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

void
op_get_bucket_versioning(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    static const char body[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<VersioningConfiguration "
        "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>";
    s3_respond_body(r, 200, "application/xml", body, sizeof(body) - 1);
}
