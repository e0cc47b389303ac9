/*
 * op_access.c: the bucket access configurations: Put/Get/DeleteBucketPolicy
 * and GetBucketPolicyStatus (?policy, ?policyStatus), Put/Get/Delete
 * PublicAccessBlock (?publicAccessBlock) and Put/Get/Delete
 * BucketOwnershipControls (?ownershipControls).
 *
 * Each is stored in index/'s per-bucket configuration store (the policy as
 * the JSON the user sent, which a Get returns byte for byte) and, after
 * every change, recompiled into the cache of bucket_access.c, which the
 * next request's authorization reads. A policy is validated and compiled
 * before it is stored, so a stored policy always compiles.
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/body.h"
#include "server/bucket_access.h"
#include "server/errors.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/xml_in.h"
#include "server/xml_out.h"

#include <errno.h>

/* Policy bodies past AWS's 20 KiB are refused with MalformedPolicy; the
 * body reader stops a little beyond. */
#define POLICY_BODY_MAX (AUTH_IAM_POLICY_MAX + 1024)
#define SMALL_BODY_MAX (16 * 1024)

/* Stores (or, with 'val' NULL, removes) configuration 'kind' of 'bk' and
 * republishes its compiled form. Responds on failure; true on success. */
static bool
config_store(struct s3_req *r, const struct index_bucket *bk, int kind, const void *val, size_t len)
{
    int rc = val ? index_bucket_config_put(r->srv->index, bk->id,
                                           (enum index_bucket_config_kind)kind, val, len)
                 : index_bucket_config_delete(r->srv->index, bk->id,
                                              (enum index_bucket_config_kind)kind);
    if (rc == -ENOENT && !val)
        rc = 0;
    if (rc == 0)
        rc = bucket_access_reload(r->srv->access, r->srv->index, bk->id);
    if (rc == -ENOENT)
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
    else if (rc < 0)
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    return rc == 0;
}

/* Answers stored configuration 'kind' of the request's bucket with
 * 'content_type', or 'missing' when none is set. */
static void
config_answer(struct s3_req *r, int kind, enum s3_error missing, const char *content_type)
{
    struct index_bucket bk;
    const void *val;
    size_t len;
    if (!s3_bucket_lookup(r, &bk))
        return;
    int rc = index_bucket_config_get(r->srv->index, bk.id, (enum index_bucket_config_kind)kind,
                                     r->arena, &val, &len);
    if (rc == -ENOENT)
        s3_respond_error(r, missing, NULL);
    else if (rc < 0)
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    else
        s3_respond_body(r, 200, content_type, val, len);
}

static void
config_remove(struct s3_req *r, int kind)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    if (config_store(r, &bk, kind, NULL, 0))
        s3_respond_empty(r, 204);
}

/* ======================================================================
 * Bucket policy
 * ====================================================================== */

static bool
user_exists(void *ctx, struct slice name)
{
    struct s3_req *r = ctx;
    struct index_user u;
    if (slice_eq(name, SLICE_LIT("root")))
        return true;
    return index_user_get(r->srv->index, name, &u) == 0;
}

static void
put_policy_end(struct s3_req *r)
{
    struct index_bucket bk;
    const struct auth_iam_policy *p;
    const char *msg = NULL;
    if (!s3_bucket_lookup(r, &bk))
        return;
    struct slice doc = {r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len};
    if (auth_iam_compile(doc.ptr, doc.len, slice_from_cstr(bk.name), user_exists, r, r->arena, &p,
                         &msg) != 0) {
        s3_respond_error(r, S3_ERR_MALFORMED_POLICY, msg);
        return;
    }
    if (auth_iam_is_public(p) && r->access && r->access->block_public_policy) {
        s3_respond_error(r, S3_ERR_ACCESS_DENIED, NULL);
        return;
    }
    if (!config_store(r, &bk, BUCKET_ACCESS_KIND_POLICY, doc.ptr, doc.len))
        return;
    log_info("bucket %s: policy set, %zu bytes (by %s)", bk.name, doc.len, r->user_name);
    s3_respond_empty(r, 204);
}

void
op_put_bucket_policy(struct s3_req *r)
{
    s3_req_expect_xml(r, POLICY_BODY_MAX, put_policy_end);
}

void
op_get_bucket_policy(struct s3_req *r)
{
    config_answer(r, BUCKET_ACCESS_KIND_POLICY, S3_ERR_NO_SUCH_BUCKET_POLICY, "application/json");
}

void
op_delete_bucket_policy(struct s3_req *r)
{
    config_remove(r, BUCKET_ACCESS_KIND_POLICY);
}

void
op_get_bucket_policy_status(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    if (!r->access || !r->access->policy) {
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET_POLICY, NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "PolicyStatus");
    xml_elem_bool(&b, "IsPublic", auth_iam_is_public(r->access->policy));
    xml_end(&b, "PolicyStatus");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

/* ======================================================================
 * Public Access Block
 * ====================================================================== */

static void
put_pab_end(struct s3_req *r)
{
    struct index_bucket bk;
    bool flags[4];
    if (!s3_xml_body_begin(r, &bk))
        return;
    if (xml_parse_public_access_block(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len,
                                      flags) != XML_IN_OK) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    char v[4];
    for (int i = 0; i < 4; i++)
        v[i] = flags[i] ? '1' : '0';
    if (!config_store(r, &bk, BUCKET_ACCESS_KIND_PAB, v, sizeof(v)))
        return;
    log_info("bucket %s: public access block %.4s (by %s)", bk.name, v, r->user_name);
    s3_respond_empty(r, 200);
}

void
op_put_public_access_block(struct s3_req *r)
{
    s3_req_expect_xml(r, SMALL_BODY_MAX, put_pab_end);
}

void
op_get_public_access_block(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    const struct bucket_access *ba = r->access;
    if (!ba || !ba->has_pab) {
        s3_respond_error(r, S3_ERR_NO_SUCH_PUBLIC_ACCESS_BLOCK, NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "PublicAccessBlockConfiguration");
    xml_elem_bool(&b, "BlockPublicAcls", ba->block_public_acls);
    xml_elem_bool(&b, "IgnorePublicAcls", ba->ignore_public_acls);
    xml_elem_bool(&b, "BlockPublicPolicy", ba->block_public_policy);
    xml_elem_bool(&b, "RestrictPublicBuckets", ba->restrict_public_buckets);
    xml_end(&b, "PublicAccessBlockConfiguration");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

void
op_delete_public_access_block(struct s3_req *r)
{
    config_remove(r, BUCKET_ACCESS_KIND_PAB);
}

/* ======================================================================
 * Object Ownership
 * ====================================================================== */

static const char *const ownership_names[] = {
    [OWNERSHIP_NONE] = "",
    [OWNERSHIP_OBJECT_WRITER] = "ObjectWriter",
    [OWNERSHIP_BUCKET_OWNER_PREFERRED] = "BucketOwnerPreferred",
    [OWNERSHIP_BUCKET_OWNER_ENFORCED] = "BucketOwnerEnforced",
};

static void
put_ownership_end(struct s3_req *r)
{
    struct index_bucket bk;
    struct slice value;
    if (!s3_xml_body_begin(r, &bk))
        return;
    if (xml_parse_ownership_controls(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len,
                                     r->arena, &value) != XML_IN_OK) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    int own = 0;
    for (int i = 1; i < (int)ARRAY_LEN(ownership_names); i++)
        if (slice_eq(value, slice_from_cstr(ownership_names[i])))
            own = i;
    if (own == 0) {
        s3_respond_error(r, S3_ERR_MALFORMED_XML, NULL);
        return;
    }
    /* ACLs cannot be turned off while the bucket's own ACL grants others. */
    if (own == OWNERSHIP_BUCKET_OWNER_ENFORCED &&
        ((r->access && r->access->has_acl && r->access->acl.n) || bk.is_public_read)) {
        s3_respond_error(r, S3_ERR_INVALID_BUCKET_ACL_WITH_OWNERSHIP, NULL);
        return;
    }
    char v = (char)('0' + own);
    if (!config_store(r, &bk, BUCKET_ACCESS_KIND_OWNERSHIP, &v, 1))
        return;
    log_info("bucket %s: object ownership %s (by %s)", bk.name, ownership_names[own], r->user_name);
    s3_respond_empty(r, 200);
}

void
op_put_bucket_ownership(struct s3_req *r)
{
    s3_req_expect_xml(r, SMALL_BODY_MAX, put_ownership_end);
}

void
op_get_bucket_ownership(struct s3_req *r)
{
    struct index_bucket bk;
    if (!s3_bucket_lookup(r, &bk))
        return;
    const struct bucket_access *ba = r->access;
    if (!ba || ba->ownership == OWNERSHIP_NONE) {
        s3_respond_error(r, S3_ERR_OWNERSHIP_CONTROLS_NOT_FOUND, NULL);
        return;
    }
    struct buf b;
    buf_init(&b);
    xml_begin(&b, "OwnershipControls");
    buf_append_str(&b, "<Rule>");
    xml_elem_str(&b, "ObjectOwnership", ownership_names[ba->ownership]);
    buf_append_str(&b, "</Rule>");
    xml_end(&b, "OwnershipControls");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

void
op_delete_bucket_ownership(struct s3_req *r)
{
    config_remove(r, BUCKET_ACCESS_KIND_OWNERSHIP);
}
