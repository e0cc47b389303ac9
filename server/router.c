/*
 * router.c: from a parsed request to its handler. Resolves the bucket and
 * key (path-style, or virtual-hosted-style for the configured domains),
 * picks the route from method, level (service, bucket, object) and
 * sub-resource, and authorizes the route's action before the handler runs,
 * so no handler runs unauthorized. A sub-resource no route handles is
 * NotImplemented, never the plain operation.
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/bucket_log.h"
#include "server/errors.h"
#include "server/lifecycle.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/router.h"
#include "server/unsupported.h"
#include "server/server.h"
#include "server/sse.h"
#include "server/util.h"
#include "server/versioning.h"

#include <string.h>
#include <strings.h>

/* ======================================================================
 * Addressing
 * ====================================================================== */

/* Splits Host into a bucket when it is "<bucket>.<domain>[:port]" for one
 * of the configured domains (virtual-hosted-style addressing). */
static bool
virtual_host_bucket(struct s3_req *r, struct slice host, struct slice *bucket)
{
    const char *colon = memchr(host.ptr, ':', host.len);
    if (colon)
        host.len = (size_t)(colon - host.ptr);
    const char *d = r->srv->cfg.domains;
    while (*d) {
        const char *comma = strchr(d, ',');
        size_t dl = comma ? (size_t)(comma - d) : strlen(d);
        while (dl && *d == ' ') {
            d++;
            dl--;
        }
        if (dl && host.len > dl + 1 && host.ptr[host.len - dl - 1] == '.' &&
            strncasecmp(host.ptr + host.len - dl, d, dl) == 0) {
            *bucket = (struct slice){host.ptr, host.len - dl - 1};
            return true;
        }
        if (!comma)
            break;
        d = comma + 1;
    }
    return false;
}

/* Resolves bucket and key from the Host header and the path. */
static bool
resolve_address(struct s3_req *r)
{
    struct slice path = r->raw_path;
    struct slice vbucket;
    struct slice host = s3_req_header(r, "host");
    if (host.len && virtual_host_bucket(r, host, &vbucket)) {
        r->is_virtual_host = true;
        r->bucket = (struct slice){arena_strndup(r->arena, vbucket.ptr, vbucket.len), vbucket.len};
        struct slice k = path;
        if (k.len && k.ptr[0] == '/') {
            k.ptr++;
            k.len--;
        }
        return s3_uri_decode(r->arena, k, &r->key);
    }
    if (path.len == 0 || path.ptr[0] != '/')
        return false;
    path.ptr++;
    path.len--;
    const char *slash = memchr(path.ptr, '/', path.len);
    struct slice b = path;
    struct slice k = SLICE_NULL;
    if (slash) {
        b.len = (size_t)(slash - path.ptr);
        k = (struct slice){slash + 1, path.len - b.len - 1};
    }
    return s3_uri_decode(r->arena, b, &r->bucket) && s3_uri_decode(r->arena, k, &r->key);
}
/* ======================================================================
 * Routing
 * ====================================================================== */

enum route_level { LEVEL_SERVICE, LEVEL_BUCKET, LEVEL_OBJECT };

/* Which key a route is authorized for. */
enum route_key {
    RKEY_NONE,   /* bucket- or service-wide */
    RKEY_OBJECT, /* the request's object key */
    RKEY_PREFIX, /* the listing's ?prefix= */
    RKEY_EACH,   /* several keys, each checked by the handler (DeleteObjects) */
    RKEY_FORM,   /* a POST form: the handler authorizes once the fields are read */
};

/* A route names the action it needs, so every handler runs authorized, and
 * says what its steps do (ROUTE_* of router.h), so http.c knows before the
 * handler runs whether a body may follow and which steps must leave the
 * event loop. Invariant: no route both takes a body and blocks in its
 * first step (the handler runs before the body is read). Routes selected
 * by a header come before the same route without it. */
struct route {
    const char *method;
    enum route_level level;
    const char *subresource; /* query parameter that selects the route, NULL for none,
                                "*" for any */
    const char *header;      /* request header that selects the route, or NULL */
    enum auth_action action;
    enum route_key key;
    unsigned flags; /* ROUTE_* */
    void (*handler)(struct s3_req *r);
    const char *op; /* the S3 operation name, for metrics and the access log */
};

/* Shorthands for the table: takes a body whose end step may block (it
 * commits); takes no body and its handler may block. */
#define BODY_END (ROUTE_BODY | ROUTE_END_BLOCKS)
#define BLOCKS ROUTE_BLOCKS
#define COPY_SRC "x-amz-copy-source"

static const struct route routes[] = {
    {"GET", LEVEL_SERVICE, NULL, NULL, AUTH_ACTION_SERVICE, RKEY_NONE, 0, op_list_buckets,
     "ListBuckets"},
    {"GET", LEVEL_BUCKET, "location", NULL, AUTH_ACTION_BUCKET_INFO, RKEY_NONE, 0,
     op_get_bucket_location, "GetBucketLocation"},
    {"GET", LEVEL_BUCKET, "versioning", NULL, AUTH_ACTION_BUCKET_INFO, RKEY_NONE, 0,
     op_get_bucket_versioning, "GetBucketVersioning"},
    {"PUT", LEVEL_BUCKET, "versioning", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_bucket_versioning, "PutBucketVersioning"},
    {"GET", LEVEL_BUCKET, "object-lock", NULL, AUTH_ACTION_BUCKET_INFO, RKEY_NONE, 0,
     op_get_object_lock_config, "GetObjectLockConfiguration"},
    {"PUT", LEVEL_BUCKET, "object-lock", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_object_lock_config, "PutObjectLockConfiguration"},
    {"GET", LEVEL_OBJECT, "retention", NULL, AUTH_ACTION_READ, RKEY_OBJECT, 0,
     op_get_object_retention, "GetObjectRetention"},
    {"PUT", LEVEL_OBJECT, "retention", NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, BODY_END,
     op_put_object_retention, "PutObjectRetention"},
    {"GET", LEVEL_OBJECT, "legal-hold", NULL, AUTH_ACTION_READ, RKEY_OBJECT, 0,
     op_get_object_legal_hold, "GetObjectLegalHold"},
    {"PUT", LEVEL_OBJECT, "legal-hold", NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, BODY_END,
     op_put_object_legal_hold, "PutObjectLegalHold"},
    {"GET", LEVEL_BUCKET, "acl", NULL, AUTH_ACTION_READ_ACP, RKEY_NONE, 0, op_get_bucket_acl,
     "GetBucketAcl"},
    {"PUT", LEVEL_BUCKET, "acl", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_bucket_acl, "PutBucketAcl"},
    {"PUT", LEVEL_BUCKET, "policy", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_bucket_policy, "PutBucketPolicy"},
    {"GET", LEVEL_BUCKET, "policy", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, 0,
     op_get_bucket_policy, "GetBucketPolicy"},
    {"DELETE", LEVEL_BUCKET, "policy", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BLOCKS,
     op_delete_bucket_policy, "DeleteBucketPolicy"},
    {"GET", LEVEL_BUCKET, "policyStatus", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, 0,
     op_get_bucket_policy_status, "GetBucketPolicyStatus"},
    {"PUT", LEVEL_BUCKET, "publicAccessBlock", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_public_access_block, "PutPublicAccessBlock"},
    {"GET", LEVEL_BUCKET, "publicAccessBlock", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, 0,
     op_get_public_access_block, "GetPublicAccessBlock"},
    {"DELETE", LEVEL_BUCKET, "publicAccessBlock", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BLOCKS,
     op_delete_public_access_block, "DeletePublicAccessBlock"},
    {"PUT", LEVEL_BUCKET, "ownershipControls", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_bucket_ownership, "PutBucketOwnershipControls"},
    {"GET", LEVEL_BUCKET, "ownershipControls", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, 0,
     op_get_bucket_ownership, "GetBucketOwnershipControls"},
    {"DELETE", LEVEL_BUCKET, "ownershipControls", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BLOCKS,
     op_delete_bucket_ownership, "DeleteBucketOwnershipControls"},
    {"GET", LEVEL_BUCKET, "lifecycle", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, 0,
     op_get_bucket_lifecycle, "GetBucketLifecycleConfiguration"},
    {"PUT", LEVEL_BUCKET, "lifecycle", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_bucket_lifecycle, "PutBucketLifecycleConfiguration"},
    {"DELETE", LEVEL_BUCKET, "lifecycle", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BLOCKS,
     op_delete_bucket_lifecycle, "DeleteBucketLifecycle"},
    {"GET", LEVEL_BUCKET, "encryption", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, 0,
     op_get_bucket_encryption, "GetBucketEncryption"},
    {"PUT", LEVEL_BUCKET, "encryption", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_bucket_encryption, "PutBucketEncryption"},
    {"DELETE", LEVEL_BUCKET, "encryption", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BLOCKS,
     op_delete_bucket_encryption, "DeleteBucketEncryption"},
    {"GET", LEVEL_BUCKET, "logging", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, 0,
     op_get_bucket_logging, "GetBucketLogging"},
    {"PUT", LEVEL_BUCKET, "logging", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_bucket_logging, "PutBucketLogging"},
    {"GET", LEVEL_BUCKET, "cors", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, 0, op_get_bucket_cors,
     "GetBucketCors"},
    {"PUT", LEVEL_BUCKET, "cors", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_bucket_cors, "PutBucketCors"},
    {"DELETE", LEVEL_BUCKET, "cors", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BLOCKS,
     op_delete_bucket_cors, "DeleteBucketCors"},
    /* The preflight of any request: "*" matches every sub-resource (a
     * browser's multipart upload preflights ?uploadId=&partNumber=). */
    {"OPTIONS", LEVEL_BUCKET, "*", NULL, AUTH_ACTION_READ, RKEY_NONE, ROUTE_NO_AUTHZ,
     op_cors_preflight, "PreflightRequest"},
    {"OPTIONS", LEVEL_OBJECT, "*", NULL, AUTH_ACTION_READ, RKEY_NONE, ROUTE_NO_AUTHZ,
     op_cors_preflight, "PreflightRequest"},
    {"GET", LEVEL_BUCKET, "tagging", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, 0,
     op_get_bucket_tagging, "GetBucketTagging"},
    {"PUT", LEVEL_BUCKET, "tagging", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BODY_END,
     op_put_bucket_tagging, "PutBucketTagging"},
    {"DELETE", LEVEL_BUCKET, "tagging", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BLOCKS,
     op_delete_bucket_tagging, "DeleteBucketTagging"},
    {"GET", LEVEL_BUCKET, "versions", NULL, AUTH_ACTION_LIST, RKEY_PREFIX, 0,
     op_list_object_versions, "ListObjectVersions"},
    {"GET", LEVEL_BUCKET, NULL, NULL, AUTH_ACTION_LIST, RKEY_PREFIX, 0, op_list_objects,
     "ListObjects"},
    {"PUT", LEVEL_BUCKET, NULL, NULL, AUTH_ACTION_CREATE_BUCKET, RKEY_NONE, BODY_END,
     op_create_bucket, "CreateBucket"},
    {"HEAD", LEVEL_BUCKET, NULL, NULL, AUTH_ACTION_BUCKET_INFO, RKEY_NONE, 0, op_head_bucket,
     "HeadBucket"},
    {"DELETE", LEVEL_BUCKET, NULL, NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, BLOCKS,
     op_delete_bucket, "DeleteBucket"},
    {"POST", LEVEL_BUCKET, "delete", NULL, AUTH_ACTION_WRITE, RKEY_EACH, BODY_END,
     op_delete_objects, "DeleteObjects"},
    /* Batch GET: the read grant, checked per entry by the handler. */
    {"POST", LEVEL_BUCKET, "batch", NULL, AUTH_ACTION_READ, RKEY_EACH, BODY_END, op_batch_get,
     "GetObjectBatch"},
    /* POST Object: the key, the signer and the policy are in the form. */
    {"POST", LEVEL_BUCKET, NULL, NULL, AUTH_ACTION_WRITE, RKEY_FORM, BODY_END, op_post_object,
     "PostObject"},
    {"GET", LEVEL_BUCKET, "uploads", NULL, AUTH_ACTION_LIST, RKEY_PREFIX, 0, op_list_uploads,
     "ListMultipartUploads"},
    {"POST", LEVEL_OBJECT, "uploads", NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, BLOCKS,
     op_create_multipart, "CreateMultipartUpload"},
    {"POST", LEVEL_OBJECT, "uploadId", NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, BODY_END,
     op_complete_multipart, "CompleteMultipartUpload"},
    /* UploadPartCopy: op_upload_part sees the header and copies. */
    {"PUT", LEVEL_OBJECT, "uploadId", COPY_SRC, AUTH_ACTION_WRITE, RKEY_OBJECT, BLOCKS,
     op_upload_part, "UploadPartCopy"},
    {"PUT", LEVEL_OBJECT, "uploadId", NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, BODY_END,
     op_upload_part, "UploadPart"},
    {"DELETE", LEVEL_OBJECT, "uploadId", NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, BLOCKS,
     op_abort_multipart, "AbortMultipartUpload"},
    {"GET", LEVEL_OBJECT, "uploadId", NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, 0, op_list_parts,
     "ListParts"},
    {"GET", LEVEL_OBJECT, "acl", NULL, AUTH_ACTION_READ_ACP, RKEY_OBJECT, 0, op_get_object_acl,
     "GetObjectAcl"},
    {"PUT", LEVEL_OBJECT, "acl", NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_OBJECT, BODY_END,
     op_put_object_acl, "PutObjectAcl"},
    {"PUT", LEVEL_OBJECT, "tagging", NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, BODY_END,
     op_put_object_tagging, "PutObjectTagging"},
    {"GET", LEVEL_OBJECT, "tagging", NULL, AUTH_ACTION_READ, RKEY_OBJECT, 0, op_get_object_tagging,
     "GetObjectTagging"},
    {"GET", LEVEL_OBJECT, "attributes", NULL, AUTH_ACTION_READ, RKEY_OBJECT, 0,
     op_get_object_attributes, "GetObjectAttributes"},
    {"DELETE", LEVEL_OBJECT, "tagging", NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, BLOCKS,
     op_delete_object_tagging, "DeleteObjectTagging"},
    /* Tar members: the object's read grant. They answer on the event loop
     * from the member index; an object that has none yet gets it built in
     * the end step, on a worker (a scan of its headers and a commit). */
    {"GET", LEVEL_OBJECT, "member", NULL, AUTH_ACTION_READ, RKEY_OBJECT, ROUTE_END_BLOCKS,
     op_get_member, "GetObjectMember"},
    {"HEAD", LEVEL_OBJECT, "member", NULL, AUTH_ACTION_READ, RKEY_OBJECT, ROUTE_END_BLOCKS,
     op_head_member, "HeadObjectMember"},
    {"GET", LEVEL_OBJECT, "list-members", NULL, AUTH_ACTION_READ, RKEY_OBJECT, ROUTE_END_BLOCKS,
     op_list_members, "ListObjectMembers"},
    /* GetObject over RDMA: the transfer blocks, so it runs on a worker. */
    {"GET", LEVEL_OBJECT, NULL, "x-amz-rdma-token", AUTH_ACTION_READ, RKEY_OBJECT, BLOCKS,
     op_get_object, "GetObject"},
    {"GET", LEVEL_OBJECT, NULL, NULL, AUTH_ACTION_READ, RKEY_OBJECT, 0, op_get_object, "GetObject"},
    {"HEAD", LEVEL_OBJECT, NULL, NULL, AUTH_ACTION_READ, RKEY_OBJECT, 0, op_head_object,
     "HeadObject"},
    {"PUT", LEVEL_OBJECT, NULL, COPY_SRC, AUTH_ACTION_WRITE, RKEY_OBJECT, BLOCKS, op_copy_object,
     "CopyObject"},
    {"PUT", LEVEL_OBJECT, NULL, NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, BODY_END, op_put_object,
     "PutObject"},
    {"DELETE", LEVEL_OBJECT, NULL, NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, BLOCKS, op_delete_object,
     "DeleteObject"},
};

#undef BODY_END
#undef BLOCKS
#undef COPY_SRC

/* Authorizes route 'rt' for 'r' before its handler runs; responds
 * AccessDenied and returns false when the policy says no. */
static bool
route_authorize(struct s3_req *r, const struct route *rt)
{
    struct slice key = SLICE_NULL;
    const struct s3_param *p;
    switch (rt->key) {
    case RKEY_NONE:
        break;
    case RKEY_OBJECT:
        key = r->key;
        break;
    case RKEY_PREFIX:
        p = s3_req_param(r, "prefix");
        key = p ? p->value : SLICE_NULL;
        break;
    case RKEY_FORM:
        break;
    case RKEY_EACH:
        /* Only the level here: the handler checks every key. A prefix
         * grant's own prefix stands in for "some key under it". */
        if (!s3_is_allowed(r, rt->action, SLICE_NULL) && r->has_grant)
            key = slice_from_cstr(r->grant.prefix);
        break;
    }
    if (rt->key == RKEY_FORM)
        return true;
    r->has_route_action = true;
    r->route_action = rt->action;
    r->route_key = key;
    return s3_authorize(r, rt->action, key);
}

/* Query parameters that name an S3 sub-resource: a request carrying one
 * that no route handles is NotImplemented rather than silently treated as
 * the plain operation. */
#define SUB(s)                                                                                     \
    {                                                                                              \
        s, sizeof(s) - 1                                                                           \
    }
static const struct {
    const char *name;
    size_t len;
} subresources[] = {
    SUB("accelerate"),
    SUB("acl"),
    SUB("analytics"),
    SUB("attributes"),
    SUB("batch"),
    SUB("cors"),
    SUB("delete"),
    SUB("encryption"),
    SUB("intelligent-tiering"),
    SUB("inventory"),
    SUB("legal-hold"),
    SUB("lifecycle"),
    SUB("list-members"),
    SUB("location"),
    SUB("logging"),
    SUB("member"),
    SUB("metrics"),
    SUB("notification"),
    SUB("object-lock"),
    SUB("ownershipControls"),
    SUB("policy"),
    SUB("policyStatus"),
    SUB("publicAccessBlock"),
    SUB("replication"),
    SUB("requestPayment"),
    SUB("restore"),
    SUB("retention"),
    SUB("select"),
    SUB("tagging"),
    SUB("torrent"),
    SUB("uploadId"),
    SUB("uploads"),
    SUB("versioning"),
    SUB("versions"),
    SUB("website"),
};
#undef SUB

/* The first query parameter that names a sub-resource, or NULL. Runs on
 * every request: lengths are compared before bytes. */
static const char *
request_subresource(const struct s3_req *r)
{
    for (size_t i = 0; i < r->n_params; i++) {
        struct slice n = r->params[i].name;
        if (n.len == 0 || n.ptr[0] < 'a' || n.ptr[0] > 'w')
            continue; /* all start with a lower-case letter; X-Amz-* never match */
        for (size_t k = 0; k < ARRAY_LEN(subresources); k++)
            if (n.len == subresources[k].len && memcmp(n.ptr, subresources[k].name, n.len) == 0)
                return subresources[k].name;
    }
    return NULL;
}

static enum route_level
request_level(const struct s3_req *r)
{
    if (r->bucket.len == 0)
        return LEVEL_SERVICE;
    return r->key.len == 0 ? LEVEL_BUCKET : LEVEL_OBJECT;
}

/* The route of 'r', or NULL; '*has_method' tells whether some route of
 * the level has the method. Reads only the request line and headers. */
static const struct route *
route_find(const struct s3_req *r, const char *sub, bool *has_method)
{
    enum route_level level = request_level(r);
    *has_method = false;
    for (size_t i = 0; i < ARRAY_LEN(routes); i++) {
        const struct route *rt = &routes[i];
        if (rt->level != level || r->method.len != strlen(rt->method) ||
            memcmp(r->method.ptr, rt->method, r->method.len) != 0)
            continue;
        *has_method = true;
        if (rt->header && !s3_req_has_header(r, rt->header))
            continue;
        if (rt->subresource && rt->subresource[0] == '*')
            return rt;
        if (rt->subresource ? (sub && !strcmp(sub, rt->subresource)) : !sub)
            return rt;
    }
    return NULL;
}

bool
router_prepare(struct s3_req *r)
{
    if (slice_has_prefix(r->raw_path, SLICE_LIT("/_/"))) {
        /* op_admin: health and metrics only read; scrub and the user
         * admin API write (or may: scrub reads every object). None takes
         * a body: the user API takes query parameters. */
        r->is_admin = true;
        r->op = slice_eq(r->raw_path, SLICE_LIT("/_/health"))            ? "AdminHealth"
                : slice_eq(r->raw_path, SLICE_LIT("/_/metrics"))         ? "AdminMetrics"
                : slice_has_prefix(r->raw_path, SLICE_LIT("/_/console")) ? "AdminConsole"
                                                                         : "Admin";
        bool is_read =
            slice_eq(r->method, SLICE_LIT("GET")) || slice_eq(r->method, SLICE_LIT("HEAD"));
        /* The console's bucket counts scan the index (bounded): a worker. */
        bool is_scan = slice_eq(r->raw_path, SLICE_LIT("/_/console/api/buckets"));
        r->route_flags = is_read && !is_scan ? 0 : ROUTE_BLOCKS;
        return true;
    }
    if (!resolve_address(r)) {
        s3_respond_error(r, S3_ERR_INVALID_REQUEST, "Bad request path");
        return false;
    }
    bool has_method;
    r->route = route_find(r, request_subresource(r), &has_method);
    /* No route: the answer is an error sent at once, whatever the body. */
    r->route_flags = r->route ? r->route->flags : ROUTE_BODY;
    r->op = r->route ? r->route->op : NULL;
    r->cors_origin = s3_req_header(r, "origin");
    return true;
}

void
router_route(struct s3_req *r)
{
    enum route_level level = request_level(r);
    if (level != LEVEL_SERVICE && (r->bucket.len > INDEX_MAX_BUCKET || r->bucket.ptr[0] == '_')) {
        s3_respond_error(r, S3_ERR_INVALID_BUCKET_NAME, NULL);
        return;
    }
    if (r->key.len > INDEX_MAX_KEY) {
        s3_respond_error(r, S3_ERR_KEY_TOO_LONG, NULL);
        return;
    }
    if (!s3_req_key_check(r))
        return;
    const struct route *rt = r->route;
    if (rt) {
        if ((rt->flags & ROUTE_NO_AUTHZ) || (route_authorize(r, rt) && !s3_refuse_unsupported(r)))
            rt->handler(r);
        return;
    }
    const char *sub = request_subresource(r);
    bool has_method;
    route_find(r, sub, &has_method);
    if (r->principal.is_anonymous)
        s3_respond_error(r, S3_ERR_ACCESS_DENIED, NULL);
    else if (sub || has_method)
        s3_respond_error(r, S3_ERR_NOT_IMPLEMENTED, NULL);
    else
        s3_respond_error(r, S3_ERR_METHOD_NOT_ALLOWED, NULL);
}
