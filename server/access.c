/*
 * access.c: who is asking and may they. Authentication turns a request's
 * SigV4 (or SigV2 presigned) signature into a principal: the root key
 * (from the environment or DATA/credentials) or a user's access key from
 * the index, whose secret is unsealed with the server's seal key for this
 * one verification and wiped after it. Nothing is cached across requests,
 * so removing a key or a user takes effect at the next request. (auth/'s
 * per-thread signing-key cache is keyed by a salted HMAC of the secret and
 * consulted only after this lookup succeeded, so a removed key cannot
 * reach it.) Admin endpoints take header-signed SigV4 only; unsigned
 * requests may not ask for response-* header overrides.
 *
 * Authorization gathers the facts the policy needs (the bucket's owner
 * and public flag, the caller's grant) and asks auth_policy_allows.
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/acl.h"
#include "server/bucket_access.h"
#include "server/errors.h"
#include "server/metrics.h"
#include "server/req.h"
#include "server/server.h"

#include <errno.h>
#include <stdio.h>

/* ======================================================================
 * Authentication
 * ====================================================================== */

int
s3_lookup_secret(void *ctx, struct slice access_key, char *secret, size_t cap)
{
    struct s3_req *r = ctx;
    struct server *srv = r->srv;
    memset(&r->principal, 0, sizeof(r->principal));
    r->principal.user_id = r->user_id;
    r->user_id[0] = '\0';
    r->user_name[0] = '\0';
    if (slice_eq(access_key, slice_from_cstr(srv->access_key))) {
        size_t n = strlen(srv->secret_key);
        if (n + 1 > cap)
            return -1;
        memcpy(secret, srv->secret_key, n + 1);
        r->principal.is_root = true;
        r->principal.is_admin = true;
        snprintf(r->user_id, sizeof(r->user_id), "%s", srv->owner_id);
        snprintf(r->user_name, sizeof(r->user_name), "root");
        return 0;
    }
    struct index_key key;
    struct index_user user;
    if (index_key_get(srv->index, access_key, &key) != 0)
        return -1;
    if (index_user_get_by_id(srv->index, slice_from_cstr(key.user_id), &user) != 0)
        return -1;
    long n = auth_secret_open(srv->secret_seal_key, access_key, key.secret_blob,
                              key.secret_blob_len, secret, cap);
    auth_wipe(key.secret_blob, sizeof(key.secret_blob));
    if (n < 0) {
        log_warn("access key of user '%s' does not unseal (wrong secret key file?)", user.name);
        return -1;
    }
    r->principal.is_admin = user.is_admin;
    r->principal.is_read_only = key.is_read_only;
    memcpy(r->user_id, user.id, sizeof(r->user_id));
    memcpy(r->user_name, user.name, sizeof(r->user_name));
    return 0;
}

/* Returns true when the query carries a presigned-URL signature of either
 * version (SigV4 X-Amz-*, SigV2 AWSAccessKeyId/Signature). */
static bool
has_query_auth(const struct s3_req *r)
{
    return s3_req_param(r, "X-Amz-Signature") || s3_req_param(r, "X-Amz-Credential") ||
           s3_req_param(r, "X-Amz-Algorithm") || s3_req_param(r, "AWSAccessKeyId") ||
           s3_req_param(r, "Signature");
}

/* Returns true when the query asks for a response-* header override. */
static bool
has_response_override(const struct s3_req *r)
{
    for (size_t i = 0; i < r->n_params; i++)
        if (slice_has_prefix(r->params[i].name, SLICE_LIT("response-")))
            return true;
    return false;
}

/* The label of an authentication failure in the metrics. */
static const char *
auth_failure_reason(enum auth_result res)
{
    switch (res) {
    case AUTH_ANONYMOUS:
        return "unsigned";
    case AUTH_MALFORMED:
    case AUTH_BAD_EXPIRES:
        return "malformed";
    case AUTH_BAD_REGION:
        return "bad_region";
    case AUTH_UNSUPPORTED:
        return "unsupported";
    case AUTH_UNKNOWN_KEY:
        return "unknown_key";
    case AUTH_BAD_SIGNATURE:
        return "bad_signature";
    case AUTH_SKEWED:
        return "clock_skew";
    case AUTH_EXPIRED:
        return "expired";
    case AUTH_HEADERS_NOT_SIGNED:
        return "headers_not_signed";
    case AUTH_PARAMS_NOT_SIGNED:
        return "params_not_signed";
    case AUTH_OK:
        break;
    }
    return "other";
}

/* S3's AccessDenied message for an X-Amz-Expires out of 0..604800. */
static const char *
bad_expires_message(const struct s3_req *r)
{
    struct slice v = s3_req_param_value(r, "X-Amz-Expires");
    bool is_negative = v.len > 1 && v.ptr[0] == '-';
    uint64_t n;
    if (parse_u64(is_negative ? (struct slice){v.ptr + 1, v.len - 1} : v, UINT64_MAX, &n) != 0)
        return "X-Amz-Expires should be a number";
    if (is_negative)
        return "X-Amz-Expires must be non-negative";
    return "X-Amz-Expires must be less than a week (in seconds) that is 7 days";
}

/* Verifies the signature; 'allow_anonymous' lets an unsigned request pass
 * as the anonymous principal. Responds on failure.
 *
 * Admin endpoints (/_/) take header-signed SigV4 only: a presigned URL
 * (either version) would let whoever sees the link replay an admin change,
 * and SigV2 does not sign the query that says what the change is. */
static bool
authenticate(struct s3_req *r, bool allow_anonymous)
{
    bool is_admin = slice_has_prefix(r->raw_path, SLICE_LIT("/_/"));
    if (is_admin && has_query_auth(r)) {
        atomic_fetch_add(&r->srv->metrics.auth_failures, 1);
        s3_respond_error(r, S3_ERR_ACCESS_DENIED,
                         "Admin endpoints accept only requests signed with SigV4 in the "
                         "Authorization header (no presigned URLs, no SigV2)");
        return false;
    }
    struct auth_request ar = {
        .method = r->method,
        .path = r->raw_path,
        .query = r->raw_query,
        .headers = r->headers,
        .n_headers = r->n_headers,
        .now_s = clock_now_ns() / 1000000000,
        .region = r->srv->cfg.region,
    };
    r->user_id[0] = '\0';
    r->principal = (struct auth_principal){.is_anonymous = true, .user_id = r->user_id};
    enum auth_result res = auth_sigv4_verify(&ar, s3_lookup_secret, r, &r->auth);
    bool is_sigv2 = res == AUTH_UNSUPPORTED && s3_req_param(r, "AWSAccessKeyId") &&
                    s3_req_param(r, "Signature") && !s3_req_has_header(r, "authorization");
    if (is_sigv2) {
        /* A SigV2 presigned URL (aws-cli v1 `aws s3 presign`). */
        struct slice prefix = SLICE_NULL;
        if (r->is_virtual_host)
            prefix = slice_from_cstr(
                arena_sprintf(r->arena, "/%.*s", (int)r->bucket.len, r->bucket.ptr));
        res = auth_sigv2_verify_query(&ar, prefix, s3_lookup_secret, r, &r->auth);
    }
    if (res == AUTH_OK && is_admin && r->auth.is_presigned) {
        /* Refused above already; kept in case auth/ learns another form. */
        res = AUTH_UNSUPPORTED;
    } else if (res == AUTH_OK) {
        r->is_authenticated = true;
        return true;
    }
    /* Whatever a failed lookup filled in does not stand. */
    r->user_id[0] = '\0';
    r->principal = (struct auth_principal){.is_anonymous = true, .user_id = r->user_id};
    if (res == AUTH_ANONYMOUS && allow_anonymous && has_response_override(r)) {
        /* A response-content-type override on a public object would let
         * anyone serve a stored object as text/html (stored XSS): S3
         * allows the overrides on signed requests only. */
        s3_respond_error(r, S3_ERR_INVALID_REQUEST,
                         "Request specific response headers cannot be used for anonymous GET "
                         "requests.");
        return false;
    }
    if (res == AUTH_ANONYMOUS && allow_anonymous) {
        memset(&r->auth, 0, sizeof(r->auth));
        r->auth.payload = AUTH_PAYLOAD_UNSIGNED;
        return true;
    }
    atomic_fetch_add(&r->srv->metrics.auth_failures, 1);
    metrics_auth_failure(auth_failure_reason(res));
    bool is_query = s3_req_param(r, "X-Amz-Signature") || s3_req_param(r, "X-Amz-Credential");
    switch (res) {
    case AUTH_ANONYMOUS:
        s3_respond_error(r, S3_ERR_ACCESS_DENIED, NULL);
        break;
    case AUTH_MALFORMED:
    case AUTH_BAD_EXPIRES:
        if (is_sigv2 && res == AUTH_BAD_EXPIRES)
            s3_respond_error(r, S3_ERR_ACCESS_DENIED,
                             "Invalid date (should be seconds since epoch, at most 604800 "
                             "seconds from now): Expires");
        else if (res == AUTH_BAD_EXPIRES)
            s3_respond_error(r, S3_ERR_ACCESS_DENIED, bad_expires_message(r));
        else
            s3_respond_error(r, is_query ? S3_ERR_AUTH_QUERY_ERROR : S3_ERR_AUTH_HEADER_MALFORMED,
                             NULL);
        break;
    case AUTH_BAD_REGION: {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "The authorization header is malformed; the region is wrong; "
                 "expecting '%s'",
                 r->srv->cfg.region);
        s3_respond_error(r, is_query ? S3_ERR_AUTH_QUERY_ERROR : S3_ERR_AUTH_HEADER_MALFORMED, msg);
        break;
    }
    case AUTH_UNSUPPORTED:
        s3_respond_error(r, S3_ERR_INVALID_REQUEST,
                         "The authorization mechanism you have provided is not supported. "
                         "Please use AWS4-HMAC-SHA256.");
        break;
    case AUTH_UNKNOWN_KEY:
        s3_respond_error(r, S3_ERR_INVALID_ACCESS_KEY_ID, NULL);
        break;
    case AUTH_BAD_SIGNATURE:
        s3_respond_error(r, S3_ERR_SIGNATURE_DOES_NOT_MATCH, NULL);
        break;
    case AUTH_SKEWED:
        s3_respond_error(r, S3_ERR_REQUEST_TIME_TOO_SKEWED, NULL);
        break;
    case AUTH_EXPIRED:
        s3_respond_error(r, S3_ERR_ACCESS_DENIED, "Request has expired");
        break;
    case AUTH_HEADERS_NOT_SIGNED:
        s3_respond_error(r, S3_ERR_ACCESS_DENIED,
                         "There were headers present in the request which were not signed");
        break;
    case AUTH_PARAMS_NOT_SIGNED:
        s3_respond_error(r, S3_ERR_ACCESS_DENIED,
                         "Signature Version 2 does not sign this query parameter: use only "
                         "sub-resources and response-* overrides, or SigV4");
        break;
    case AUTH_OK:
        break;
    }
    return false;
}

bool
s3_authenticate(struct s3_req *r)
{
    return authenticate(r, false);
}

bool
s3_authenticate_or_anonymous(struct s3_req *r)
{
    return authenticate(r, true);
}

void
s3_as_anonymous(struct s3_req *r)
{
    r->user_id[0] = '\0';
    r->principal = (struct auth_principal){.is_anonymous = true, .user_id = r->user_id};
    memset(&r->auth, 0, sizeof(r->auth));
    r->auth.payload = AUTH_PAYLOAD_UNSIGNED;
}

/* ======================================================================
 * Authorization
 * ====================================================================== */

const char *
s3_bucket_owner_id(struct s3_req *r, const struct index_bucket *bk)
{
    return bk->owner[0] ? bk->owner : r->srv->owner_id;
}

void
s3_owner_name(struct s3_req *r, const char *owner, char *out, size_t cap)
{
    struct index_user u;
    if (!owner[0] || !strcmp(owner, r->srv->owner_id))
        snprintf(out, cap, "root");
    else if (index_user_get_by_id(r->srv->index, slice_from_cstr(owner), &u) == 0)
        snprintf(out, cap, "%s", u.name);
    else
        snprintf(out, cap, "%s", owner);
}

/* Looks up the request's bucket, the caller's grant on it and the
 * bucket's access configuration once. */
static void
load_bucket_facts(struct s3_req *r)
{
    if (r->has_bucket || r->bucket.len == 0)
        return;
    bucket_access_release(r->access);
    r->access = NULL;
    if (index_bucket_get(r->srv->index, r->bucket, &r->bucket_rec) != 0)
        return;
    r->has_bucket = true;
    r->access = bucket_access_get(r->srv->access, r->bucket_rec.id);
    if (!r->principal.is_anonymous && !r->principal.is_root &&
        index_grant_get(r->srv->index, slice_from_cstr(r->user_id), r->bucket_rec.id, &r->grant) ==
            0)
        r->has_grant = true;
}

/* Whether the bucket's public-read flag counts: not when Public Access
 * Block ignores public ACLs. With Object Ownership BucketOwnerEnforced no
 * ACL can set the flag (PutBucketAcl is refused, and so is enforcing
 * ownership on a public bucket), so there it is the operator's own
 * setting (admin API) and counts like a grant. */
static bool
public_read_counts(const struct bucket_access *ba)
{
    return !ba || !ba->ignore_public_acls;
}

/* Whether 'action' addresses the bucket itself (its IAM resource is the
 * bucket ARN, whatever key the route checks). */
static bool
is_bucket_resource(const struct s3_req *r, enum auth_action action)
{
    return action == AUTH_ACTION_LIST || action == AUTH_ACTION_BUCKET_INFO ||
           ((action == AUTH_ACTION_READ_ACP || action == AUTH_ACTION_BUCKET_ADMIN) &&
            r->key.len == 0);
}

bool
s3_is_allowed(struct s3_req *r, enum auth_action action, struct slice key)
{
    load_bucket_facts(r);
    bool is_public = r->bucket_rec.is_public_read && public_read_counts(r->access);
    struct auth_bucket_view bv = {.owner = r->bucket_rec.owner, .is_public_read = is_public};
    struct auth_grant_view gv = {.level = r->has_grant ? (int)r->grant.level : 0,
                                 .prefix = slice_from_cstr(r->grant.prefix)};
    bool is_bucket_action = action != AUTH_ACTION_SERVICE && action != AUTH_ACTION_CREATE_BUCKET &&
                            action != AUTH_ACTION_ADMIN_READ && action != AUTH_ACTION_ADMIN_WRITE;
    /* A read-only key never writes, whether or not the bucket exists. */
    if (r->principal.is_read_only && auth_action_is_write(action))
        return false;
    if (is_bucket_action && !r->has_bucket) {
        /* No such bucket: the handler answers NoSuchBucket, to anonymous
         * callers too, as S3 does (a name's existence is public). */
        return true;
    }
    bool is_bucket_res = is_bucket_resource(r, action);
    /* An object with an ACL of its own is read by that ACL, not by the
     * bucket's public-read flag (a private object in a public-read bucket
     * stays private): decide without the flag first, and look at the
     * object only when the flag is what would let the caller in. (The
     * operation's table lookup is paid only in public-read buckets.) */
    unsigned need = 0;
    if (is_bucket_action && is_public && !is_bucket_res && key.len)
        need = bucket_access_object_acl_need(r);
    bool is_object_read = need != 0;
    if (is_object_read)
        bv.is_public_read = false;
    bool base = auth_policy_allows(&r->principal, is_bucket_action ? &bv : NULL,
                                   r->has_grant ? &gv : NULL, action, key, r->srv->owner_id);
    if (is_object_read && !base && s3_object_acl_decide(r, key, need) < 0) {
        bv.is_public_read = true;
        base = auth_policy_allows(&r->principal, &bv, r->has_grant ? &gv : NULL, action, key,
                                  r->srv->owner_id);
    }
    if (!is_bucket_action)
        return base;
    int verdict = r->access ? bucket_access_decide(r, r->access, base, bucket_access_iam_action(r),
                                                   is_bucket_res ? SLICE_NULL : key,
                                                   bucket_access_acl_need(r))
                            : base;
    if (verdict != 0)
        return verdict > 0;
    /* Denied so far, but not explicitly: the object's own ACL may allow
     * (read only when the request would otherwise fail). */
    if (!need)
        need = bucket_access_object_acl_need(r);
    return need && !is_bucket_res && s3_object_acl_allows(r, key, need);
}

bool
s3_authorize(struct s3_req *r, enum auth_action action, struct slice key)
{
    if (s3_is_allowed(r, action, key))
        return true;
    log_debug("request %s: user '%s' denied", r->request_id,
              r->principal.is_anonymous ? "(anonymous)" : r->user_name);
    s3_respond_error(r, S3_ERR_ACCESS_DENIED, NULL);
    return false;
}

/* s3_object_acl_decide for READ of 'key' in bucket 'bk' (access 'ba'),
 * which need not be the request's bucket. */
static int
other_object_acl_decide(struct s3_req *r, const struct index_bucket *bk, struct bucket_access *ba,
                        struct slice key)
{
    struct index_bucket saved = r->bucket_rec;
    struct bucket_access *saved_access = r->access;
    bool had_bucket = r->has_bucket;
    r->bucket_rec = *bk;
    r->has_bucket = true;
    r->access = ba;
    int d = s3_object_acl_decide(r, key, ACL_READ);
    r->bucket_rec = saved;
    r->has_bucket = had_bucket;
    r->access = saved_access;
    return d;
}

bool
s3_authorize_bucket(struct s3_req *r, const struct index_bucket *bk, enum auth_action action,
                    struct slice key)
{
    struct index_grant g;
    bool has_grant = !r->principal.is_anonymous && !r->principal.is_root &&
                     index_grant_get(r->srv->index, slice_from_cstr(r->user_id), bk->id, &g) == 0;
    struct bucket_access *ba = bucket_access_get(r->srv->access, bk->id);
    bool is_public = bk->is_public_read && public_read_counts(ba);
    bool is_object_read = action == AUTH_ACTION_READ && key.len;
    struct auth_bucket_view bv = {.owner = bk->owner,
                                  .is_public_read = is_public && !is_object_read};
    struct auth_grant_view gv = {.level = has_grant ? (int)g.level : 0,
                                 .prefix = has_grant ? slice_from_cstr(g.prefix) : SLICE_NULL};
    bool is_allowed = auth_policy_allows(&r->principal, &bv, has_grant ? &gv : NULL, action, key,
                                         r->srv->owner_id);
    if (!is_allowed && is_object_read) {
        /* The source object's own ACL, else the bucket's public-read flag
         * (as s3_is_allowed reads a GET). */
        int d = other_object_acl_decide(r, bk, ba, key);
        if (d < 0 && is_public) {
            bv.is_public_read = true;
            is_allowed = auth_policy_allows(&r->principal, &bv, has_grant ? &gv : NULL, action, key,
                                            r->srv->owner_id);
        }
        is_allowed = is_allowed || d > 0;
    }
    if (ba) {
        /* The policy is the source bucket's, and speaks of its name. */
        struct index_bucket saved = r->bucket_rec;
        bool had_bucket = r->has_bucket;
        r->bucket_rec = *bk;
        r->has_bucket = true;
        is_allowed = bucket_access_decide(r, ba, is_allowed,
                                          action == AUTH_ACTION_READ ? "s3:GetObject"
                                                                     : bucket_access_iam_action(r),
                                          key, action == AUTH_ACTION_READ ? 0 : ACL_WRITE) > 0;
        r->bucket_rec = saved;
        r->has_bucket = had_bucket;
        bucket_access_release(ba);
    }
    if (is_allowed)
        return true;
    s3_respond_error(r, S3_ERR_ACCESS_DENIED, NULL);
    return false;
}

bool
s3_bucket_lookup(struct s3_req *r, struct index_bucket *out)
{
    /* The route's authorization already read this bucket: reuse it. */
    if (r->has_bucket) {
        *out = r->bucket_rec;
        return true;
    }
    int rc = index_bucket_get(r->srv->index, r->bucket, out);
    if (rc == -ENOENT) {
        s3_respond_error(r, S3_ERR_NO_SUCH_BUCKET, NULL);
        return false;
    }
    if (rc < 0) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return false;
    }
    /* The route was authorized against the bucket as it was then: when it
     * did not exist yet, or was re-created since (a new id), decide again
     * against the bucket the handler is about to use. */
    if (r->has_route_action && (!r->has_bucket || r->bucket_rec.id != out->id)) {
        r->has_bucket = false;
        r->has_grant = false;
        if (!s3_authorize(r, r->route_action, r->route_key))
            return false;
        if (!r->has_bucket || r->bucket_rec.id != out->id) {
            s3_respond_error(r, S3_ERR_SLOW_DOWN, "The bucket changed during the request");
            return false;
        }
    }
    return true;
}
