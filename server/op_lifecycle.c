/*
 * op_lifecycle.c: Put/Get/DeleteBucketLifecycleConfiguration (?lifecycle)
 * and Put/Get/DeleteBucketTagging (bucket-level ?tagging).
 *
 * Both configurations live in the index's per-bucket configuration store
 * as the XML a Get answers (lifecycle_xml.c formats it after validation),
 * so a Get returns the stored bytes and the worker re-parses them. A Put
 * needs Content-MD5 or an x-amz-checksum-* of the body, as S3 does. A
 * Transition to a storage class no tier serves (tier.h) is refused: a
 * rule is never accepted only to be silently not applied.
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/body.h"
#include "server/errors.h"
#include "server/lifecycle.h"
#include "server/lifecycle_xml.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/tier.h"

#include <errno.h>
#include <inttypes.h>

/* Bodies up to this size; the formatted configuration is at most four
 * times larger (escaping), within INDEX_BUCKET_CONFIG_MAX. */
#define LIFECYCLE_BODY_MAX (INDEX_BUCKET_CONFIG_MAX / 4)
#define TAGGING_BODY_MAX (64 * 1024)

static enum s3_error
status_error(enum lc_status st)
{
    switch (st) {
    case LC_OK:
        return S3_OK;
    case LC_MALFORMED:
        return S3_ERR_MALFORMED_XML;
    case LC_INVALID_ARGUMENT:
        return S3_ERR_INVALID_ARGUMENT;
    case LC_INVALID_REQUEST:
        return S3_ERR_INVALID_REQUEST;
    case LC_INVALID_TAG:
        return S3_ERR_INVALID_TAG;
    case LC_INVALID_CLASS:
        return S3_ERR_INVALID_STORAGE_CLASS;
    }
    return S3_ERR_INTERNAL_ERROR;
}

static void
respond_store_error(struct s3_req *r, int rc)
{
    if (rc == -ENOENT)
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
    else if (rc == -EINVAL)
        s3_respond_error(r, S3_ERR_INVALID_REQUEST, "The configuration is too large");
    else
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
}

static void
put_lifecycle_end(struct s3_req *r)
{
    struct index_bucket bk;
    struct lc_config cfg;
    const char *msg = NULL;
    if (!s3_xml_body_begin(r, &bk))
        return;
    enum lc_status st =
        lc_parse(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len, r->arena, &cfg, &msg);
    if (st != LC_OK) {
        s3_respond_error(r, status_error(st), msg);
        return;
    }
    /* Every Transition names a storage class some tier serves. */
    for (uint32_t i = 0; i < cfg.n_rules; i++) {
        for (uint32_t k = 0; k < cfg.rules[i].n_transitions; k++) {
            const char *cls = cfg.rules[i].transitions[k].storage_class;
            uint32_t flags;
            if (tier_class_parse(r->srv->tiers, slice_from_cstr(cls), &flags) < 0) {
                s3_respond_error(
                    r, S3_ERR_INVALID_STORAGE_CLASS,
                    arena_sprintf(r->arena, "No tier is configured for storage class %s", cls));
                return;
            }
        }
    }
    struct buf b;
    buf_init(&b);
    lc_format(&cfg, &b);
    int rc =
        index_bucket_config_put(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_LIFECYCLE, b.ptr, b.len);
    buf_cleanup(&b);
    lifecycle_invalidate(r->srv->lifecycle, bk.id);
    if (rc < 0) {
        respond_store_error(r, rc);
        return;
    }
    log_info("bucket %s: lifecycle configuration set, %" PRIu32 " rule(s) (by %s)", bk.name,
             cfg.n_rules, r->user_name);
    s3_respond_empty(r, 200);
}

void
op_put_bucket_lifecycle(struct s3_req *r)
{
    s3_req_expect_xml(r, LIFECYCLE_BODY_MAX, put_lifecycle_end);
}

/* Answers the stored configuration 'kind', or 'missing' when none. */
static void
config_get(struct s3_req *r, enum index_bucket_config_kind kind, enum s3_error missing)
{
    struct index_bucket bk;
    const void *val;
    size_t len;
    if (!s3_bucket_lookup(r, &bk))
        return;
    int rc = index_bucket_config_get(r->srv->index, bk.id, kind, r->arena, &val, &len);
    if (rc == -ENOENT)
        s3_respond_error(r, missing, NULL);
    else if (rc < 0)
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    else
        s3_respond_body(r, 200, "application/xml", val, len);
}

static void
config_delete(struct s3_req *r, enum index_bucket_config_kind kind)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    int rc = index_bucket_config_delete(r->srv->index, bk.id, kind);
    if (kind == INDEX_BUCKET_CONFIG_LIFECYCLE)
        lifecycle_invalidate(r->srv->lifecycle, bk.id);
    /* S3 answers 204 whether or not a configuration was set. */
    if (rc < 0 && rc != -ENOENT)
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    else
        s3_respond_empty(r, 204);
}

void
op_get_bucket_lifecycle(struct s3_req *r)
{
    config_get(r, INDEX_BUCKET_CONFIG_LIFECYCLE, S3_ERR_NO_SUCH_LIFECYCLE_CONFIGURATION);
}

void
op_delete_bucket_lifecycle(struct s3_req *r)
{
    config_delete(r, INDEX_BUCKET_CONFIG_LIFECYCLE);
}

static void
put_tagging_end(struct s3_req *r)
{
    struct index_bucket bk;
    struct lc_tag *tags;
    uint32_t n_tags;
    const char *msg = NULL;
    if (!s3_xml_body_begin(r, &bk))
        return;
    enum lc_status st = lc_parse_tagging(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len,
                                         r->arena, &tags, &n_tags, &msg);
    if (st != LC_OK) {
        s3_respond_error(r, status_error(st), msg);
        return;
    }
    int rc;
    if (n_tags == 0) {
        /* An empty tag set removes the tags, as S3 does. */
        rc = index_bucket_config_delete(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_TAGGING);
        if (rc == -ENOENT)
            rc = 0;
    } else {
        struct buf b;
        buf_init(&b);
        lc_format_tagging(tags, n_tags, &b);
        rc = index_bucket_config_put(r->srv->index, bk.id, INDEX_BUCKET_CONFIG_TAGGING, b.ptr,
                                     b.len);
        buf_cleanup(&b);
    }
    if (rc < 0) {
        respond_store_error(r, rc);
        return;
    }
    s3_respond_empty(r, 204);
}

void
op_put_bucket_tagging(struct s3_req *r)
{
    s3_req_expect_xml(r, TAGGING_BODY_MAX, put_tagging_end);
}

void
op_get_bucket_tagging(struct s3_req *r)
{
    config_get(r, INDEX_BUCKET_CONFIG_TAGGING, S3_ERR_NO_SUCH_TAG_SET);
}

void
op_delete_bucket_tagging(struct s3_req *r)
{
    config_delete(r, INDEX_BUCKET_CONFIG_TAGGING);
}
