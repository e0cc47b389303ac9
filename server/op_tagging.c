/*
 * op_tagging.c: PutObjectTagging, GetObjectTagging, DeleteObjectTagging
 * (?tagging on an object), and the tagging headers of the other object
 * operations: x-amz-tagging (PutObject, CreateMultipartUpload, CopyObject
 * with x-amz-tagging-directive) and x-amz-tagging-count (GET, HEAD).
 *
 * Tags live in the object's metadata blob (META_TAGS, meta.h). Changing
 * them is one INDEX_OP_SET_META: the record keeps its data, ETag and
 * Last-Modified, and the op applies only to the version read (a
 * concurrent overwrite makes it -ESTALE, and the change is retried on the
 * new version, as S3 tags whatever version is current).
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/body.h"
#include "server/commit.h"
#include "server/errors.h"
#include "server/meta.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/tags.h"
#include "server/versioning.h"
#include "server/xml_in.h"
#include "server/xml_out.h"

#include <errno.h>
#include <inttypes.h>

/* A Tagging body of 10 tags at their longest is about 16 KiB of UTF-8. */
#define TAGGING_BODY_MAX (64u << 10)
/* Attempts at tagging an object that keeps being overwritten meanwhile. */
#define TAGGING_RETRIES 8

/* Responds with the S3 error for 'e' and AWS's message. */
static void
respond_tags_error(struct s3_req *r, enum tags_error e)
{
    enum s3_error s3e = S3_ERR_INVALID_TAG;
    if (e == TAGS_TOO_MANY)
        s3e = S3_ERR_BAD_REQUEST;
    else if (e == TAGS_BAD_HEADER)
        s3e = S3_ERR_INVALID_ARGUMENT;
    s3_respond_error(r, s3e, tags_error_message(e));
}

/*
 * Replaces the tags of r->key in 'bk' with 'tags'/'n': reads the current
 * version, commits its metadata with the new tags, and starts again when
 * the object was replaced in between. Responds either way ('status' on
 * success).
 */
static void
tags_replace(struct s3_req *r, const struct index_bucket *bk, const struct s3_tag *tags, size_t n,
             int status)
{
    int rc = -ESTALE;
    bool has_vid;
    uint8_t vid[INDEX_VERSION_ID_LEN];
    if (!s3_req_version_id(r, &has_vid, vid))
        return;
    for (int attempt = 0; attempt < TAGGING_RETRIES && rc == -ESTALE; attempt++) {
        struct index_object obj;
        struct meta m, nm;
        rc = has_vid ? index_object_version_get(r->srv->index, bk->id, r->key, vid, r->arena, &obj)
                     : index_object_get(r->srv->index, bk->id, r->key, r->arena, &obj);
        if (rc == 0 && (obj.version_flags & INDEX_VERSION_MARKER))
            rc = -ENOENT;
        if (rc != 0)
            break;
        if (!meta_decode(r->arena, obj.meta, obj.meta_len, &m)) {
            rc = -EIO;
            break;
        }
        meta_tags_set(r->arena, &m, tags, n, &nm);
        meta_encode(r->arena, &nm, &obj.meta, &obj.meta_len);
        struct index_op op = {.kind = INDEX_OP_SET_META,
                              .bucket_id = bk->id,
                              .key = r->key,
                              .object = &obj,
                              .has_version_id = has_vid,
                              .arena = r->arena};
        memcpy(op.version_id, vid, INDEX_VERSION_ID_LEN);
        rc = committer_run(r->srv->committer, &op, 1);
        if (rc == 0)
            rc = op.result;
    }
    if (rc == -ENOENT)
        s3_respond_error(r, has_vid ? S3_ERR_NO_SUCH_VERSION : S3_ERR_NO_SUCH_KEY, NULL);
    else if (rc < 0)
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    else
        s3_respond_empty(r, status);
}

static void
put_tagging_end(struct s3_req *r)
{
    struct index_bucket bk;
    struct xml_tagging_request req;
    if (!s3_xml_body_begin(r, &bk))
        return;
    enum xml_in_status st = xml_parse_tagging(r->xml_body.ptr ? r->xml_body.ptr : "",
                                              r->xml_body.len, TAGS_OBJECT_MAX, r->arena, &req);
    if (st == XML_IN_TOO_MANY) {
        respond_tags_error(r, TAGS_TOO_MANY);
        return;
    }
    if (st != XML_IN_OK) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    /* struct xml_tag and struct s3_tag are both a key and a value slice. */
    struct s3_tag *tags = arena_calloc(r->arena, req.n_tags + 1, sizeof(*tags));
    for (size_t i = 0; i < req.n_tags; i++)
        tags[i] = (struct s3_tag){req.tags[i].key, req.tags[i].value};
    enum tags_error te = tags_validate(tags, req.n_tags, TAGS_OBJECT_MAX);
    if (te != TAGS_OK) {
        respond_tags_error(r, te);
        return;
    }
    tags_replace(r, &bk, tags, req.n_tags, 200);
}

void
op_put_object_tagging(struct s3_req *r)
{
    s3_req_expect_xml(r, TAGGING_BODY_MAX, put_tagging_end);
}

void
op_delete_object_tagging(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    tags_replace(r, &bk, NULL, 0, 204);
}

void
op_get_object_tagging(struct s3_req *r)
{
    struct index_bucket bk;
    struct index_object obj;
    struct meta m;
    struct s3_tag *tags;
    size_t n;
    if (!s3_bucket_lookup(r, &bk) || !s3_object_lookup(r, &bk, &obj))
        return;
    if (!meta_decode(r->arena, obj.meta, obj.meta_len, &m) ||
        !meta_tags_get(&m, r->arena, &tags, &n)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "Tagging");
    buf_append_str(&b, "<TagSet>");
    for (size_t i = 0; i < n; i++) {
        buf_append_str(&b, "<Tag>");
        xml_elem(&b, "Key", tags[i].key);
        xml_elem(&b, "Value", tags[i].value);
        buf_append_str(&b, "</Tag>");
    }
    buf_append_str(&b, "</TagSet>");
    xml_end(&b, "Tagging");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

bool
s3_tagging_from_request(struct s3_req *r, struct meta *m)
{
    struct slice h = s3_req_header(r, "x-amz-tagging");
    struct s3_tag *tags;
    size_t n;
    struct meta nm;
    if (!h.ptr)
        return true;
    enum tags_error e = tags_parse_header(h, r->arena, &tags, &n);
    if (e != TAGS_OK) {
        respond_tags_error(r, e);
        return false;
    }
    meta_tags_set(r->arena, m, tags, n, &nm);
    *m = nm;
    return true;
}

bool
s3_tagging_for_copy(struct s3_req *r, struct meta *m)
{
    struct slice directive = s3_req_header(r, "x-amz-tagging-directive");
    struct meta nm;
    if (!directive.ptr || slice_eq_nocase(directive, "COPY"))
        return true; /* 'm' holds the source's tags */
    if (!slice_eq_nocase(directive, "REPLACE")) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Unknown tagging directive.");
        return false;
    }
    meta_tags_set(r->arena, m, NULL, 0, &nm);
    *m = nm;
    return s3_tagging_from_request(r, m);
}

void
s3_tagging_count_header(struct s3_req *r, struct MHD_Response *resp, const struct meta *m)
{
    struct s3_tag *tags;
    size_t n;
    if (meta_tags_get(m, r->arena, &tags, &n) && n > 0)
        s3_resp_header(resp, "x-amz-tagging-count", arena_sprintf(r->arena, "%zu", n));
}
