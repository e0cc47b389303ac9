/*
 * acl.c: S3 ACLs. GetBucketAcl/PutBucketAcl (?acl on a bucket),
 * GetObjectAcl/PutObjectAcl (?acl on an object), and the ACL headers of
 * CreateBucket, PutObject, CopyObject and CreateMultipartUpload.
 *
 * An ACL is the owner's implied FULL_CONTROL plus up to 100 grants to a
 * canonical user id (grants by e-mail address are resolved to the user's
 * id when set, as AWS does), AllUsers or AuthenticatedUsers. A bucket's
 * ACL lives in the bucket configuration store (bucket_access.c caches
 * it); its public-read flag (index_bucket.is_public_read, which also
 * serves the bucket's objects to anyone, as before ACLs existed) is kept
 * equal to "AllUsers may READ". An object's ACL lives in its metadata
 * (META_ACL) with the object's owner (the writer).
 *
 * With Object Ownership BucketOwnerEnforced, ACLs decide nothing and only
 * bucket-owner-full-control (or an ACL granting only the owner) may be set;
 * BlockPublicAcls refuses public grants; IgnorePublicAcls ignores them.
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/acl.h"
#include "server/body.h"
#include "server/bucket_access.h"
#include "server/commit.h"
#include "server/errors.h"
#include "server/meta.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/xml_in.h"
#include "server/xml_out.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>

#define ACL_BODY_MAX (64 * 1024)
#define ACL_SET_RETRIES 8

static const char URI_ALL_USERS[] = "http://acs.amazonaws.com/groups/global/AllUsers";
static const char URI_AUTH_USERS[] = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
static const char URI_LOG_DELIVERY[] = "http://acs.amazonaws.com/groups/s3/LogDelivery";

/* An error to answer: code and message. */
struct acl_error {
    enum s3_error code;
    const char *msg;
};

static bool
acl_fail(struct acl_error *e, enum s3_error code, const char *msg)
{
    e->code = code;
    e->msg = msg;
    return false;
}

static bool
grant_add(struct acl *acl, enum acl_grantee kind, unsigned perm, const char *id,
          struct acl_error *e)
{
    if (acl->n >= ACL_GRANTS_MAX)
        return acl_fail(e, S3_ERR_INVALID_ARGUMENT, "Too many grants");
    struct acl_grant *g = &acl->grants[acl->n++];
    g->kind = kind;
    g->perm = perm;
    snprintf(g->id, sizeof(g->id), "%s", id ? id : "");
    return true;
}

/* ======================================================================
 * From requests
 * ====================================================================== */

/* Fills 'acl' from canned ACL 'name' ('bucket_owner': for the
 * bucket-owner-* ones on objects). */
static bool
acl_canned(struct slice name, bool is_bucket, const char *bucket_owner, struct acl *acl,
           struct acl_error *e)
{
    acl->n = 0;
    /* aws-exec-read adds EC2's read, which has no counterpart here. */
    if (slice_eq(name, SLICE_LIT("private")) || slice_eq(name, SLICE_LIT("aws-exec-read")))
        return true;
    if (slice_eq(name, SLICE_LIT("public-read")))
        return grant_add(acl, ACL_GRANTEE_ALL_USERS, ACL_READ, NULL, e);
    if (slice_eq(name, SLICE_LIT("public-read-write")))
        return grant_add(acl, ACL_GRANTEE_ALL_USERS, ACL_READ, NULL, e) &&
               grant_add(acl, ACL_GRANTEE_ALL_USERS, ACL_WRITE, NULL, e);
    if (slice_eq(name, SLICE_LIT("authenticated-read")))
        return grant_add(acl, ACL_GRANTEE_AUTH_USERS, ACL_READ, NULL, e);
    if (slice_eq(name, SLICE_LIT("bucket-owner-read")))
        return is_bucket || grant_add(acl, ACL_GRANTEE_USER, ACL_READ, bucket_owner, e);
    if (slice_eq(name, SLICE_LIT("bucket-owner-full-control")))
        return is_bucket || grant_add(acl, ACL_GRANTEE_USER, ACL_FULL_CONTROL, bucket_owner, e);
    if (slice_eq(name, SLICE_LIT("log-delivery-write")) && is_bucket)
        return grant_add(acl, ACL_GRANTEE_LOG_DELIVERY, ACL_WRITE, NULL, e) &&
               grant_add(acl, ACL_GRANTEE_LOG_DELIVERY, ACL_READ_ACP, NULL, e);
    return acl_fail(e, S3_ERR_INVALID_ARGUMENT, NULL);
}

/* Resolves one grantee (type "id", "emailAddress" or "uri") into 'acl'. */
static bool
grantee_add(struct s3_req *r, struct slice type, struct slice value, unsigned perm, struct acl *acl,
            struct acl_error *e)
{
    struct index_user u;
    if (slice_eq_nocase(type, "uri")) {
        if (slice_eq(value, slice_from_cstr(URI_ALL_USERS)))
            return grant_add(acl, ACL_GRANTEE_ALL_USERS, perm, NULL, e);
        if (slice_eq(value, slice_from_cstr(URI_AUTH_USERS)))
            return grant_add(acl, ACL_GRANTEE_AUTH_USERS, perm, NULL, e);
        if (slice_eq(value, slice_from_cstr(URI_LOG_DELIVERY)))
            return grant_add(acl, ACL_GRANTEE_LOG_DELIVERY, perm, NULL, e);
        return acl_fail(e, S3_ERR_INVALID_ARGUMENT, "Invalid group uri");
    }
    if (slice_eq_nocase(type, "emailAddress")) {
        if (index_user_get_by_email(r->srv->index, value, &u) != 0)
            return acl_fail(e, S3_ERR_UNRESOLVABLE_GRANT_BY_EMAIL, NULL);
        return grant_add(acl, ACL_GRANTEE_USER, perm, u.id, e);
    }
    if (slice_eq_nocase(type, "id")) {
        if (!slice_eq(value, slice_from_cstr(r->srv->owner_id)) &&
            index_user_get_by_id(r->srv->index, value, &u) != 0)
            return acl_fail(e, S3_ERR_INVALID_ARGUMENT, "Invalid id");
        char id[72];
        snprintf(id, sizeof(id), "%.*s", (int)value.len, value.ptr);
        return grant_add(acl, ACL_GRANTEE_USER, perm, id, e);
    }
    return acl_fail(e, S3_ERR_INVALID_ARGUMENT, "Invalid grantee type");
}

static const struct {
    const char *header;
    const char *name;
    unsigned perm;
} grant_headers[] = {
    {"x-amz-grant-read", "READ", ACL_READ},
    {"x-amz-grant-write", "WRITE", ACL_WRITE},
    {"x-amz-grant-read-acp", "READ_ACP", ACL_READ_ACP},
    {"x-amz-grant-write-acp", "WRITE_ACP", ACL_WRITE_ACP},
    {"x-amz-grant-full-control", "FULL_CONTROL", ACL_FULL_CONTROL},
};

/* Parses one x-amz-grant-* value: 'type="value", type=value, ...'. */
static bool
grant_header_parse(struct s3_req *r, struct slice v, unsigned perm, struct acl *acl,
                   struct acl_error *e)
{
    struct slice item;
    while (slice_split_next(&v, ',', &item)) {
        item = slice_trim(item);
        if (item.len == 0)
            continue;
        const char *eq = memchr(item.ptr, '=', item.len);
        if (!eq)
            return acl_fail(e, S3_ERR_INVALID_ARGUMENT, "Invalid grant header");
        struct slice type = slice_trim((struct slice){item.ptr, (size_t)(eq - item.ptr)});
        struct slice value =
            slice_trim((struct slice){eq + 1, item.len - (size_t)(eq + 1 - item.ptr)});
        if (value.len >= 2 && value.ptr[0] == '"' && value.ptr[value.len - 1] == '"') {
            value.ptr++;
            value.len -= 2;
        }
        if (!grantee_add(r, type, value, perm, acl, e))
            return false;
    }
    return true;
}

/* Reads x-amz-acl / x-amz-grant-*; '*has' false when neither is present. */
static bool
acl_from_headers(struct s3_req *r, bool is_bucket, const char *bucket_owner, struct acl *acl,
                 bool *has, struct acl_error *e)
{
    struct slice canned = s3_req_header(r, "x-amz-acl");
    bool has_grants = false;
    acl->n = 0;
    for (size_t i = 0; i < ARRAY_LEN(grant_headers); i++)
        has_grants = has_grants || s3_req_has_header(r, grant_headers[i].header);
    *has = canned.ptr || has_grants;
    if (canned.ptr && has_grants)
        return acl_fail(e, S3_ERR_INVALID_REQUEST,
                        "Specifying both Canned ACLs and Header Grants is not allowed");
    if (canned.ptr)
        return acl_canned(canned, is_bucket, bucket_owner, acl, e);
    for (size_t k = 0; k < r->n_headers; k++) {
        for (size_t i = 0; i < ARRAY_LEN(grant_headers); i++) {
            if (!slice_eq_nocase(r->headers[k].name, grant_headers[i].header))
                continue;
            if (!grant_header_parse(r, r->headers[k].value, grant_headers[i].perm, acl, e))
                return false;
        }
    }
    return true;
}

static bool
acl_from_xml(struct s3_req *r, struct acl *acl, struct acl_error *e)
{
    struct xml_acp_request req;
    enum xml_in_status st =
        xml_parse_acp(r->xml_body.ptr ? r->xml_body.ptr : "", r->xml_body.len, r->arena, &req);
    acl->n = 0;
    if (st != XML_IN_OK)
        return acl_fail(e, S3_ERR_MALFORMED_ACL, NULL);
    for (size_t i = 0; i < req.n_grants; i++) {
        const struct xml_acp_grant *g = &req.grants[i];
        unsigned perm = 0;
        for (size_t k = 0; k < ARRAY_LEN(grant_headers); k++)
            if (slice_eq(g->permission, slice_from_cstr(grant_headers[k].name)))
                perm = grant_headers[k].perm;
        if (!perm)
            return acl_fail(e, S3_ERR_MALFORMED_ACL, NULL);
        bool ok = g->uri.ptr     ? grantee_add(r, SLICE_LIT("uri"), g->uri, perm, acl, e)
                  : g->email.ptr ? grantee_add(r, SLICE_LIT("emailAddress"), g->email, perm, acl, e)
                                 : grantee_add(r, SLICE_LIT("id"), g->id, perm, acl, e);
        if (!ok)
            return false;
    }
    return true;
}

/* Whether 'acl' grants only 'owner' (so ACLs stay meaningless). */
static bool
acl_is_owner_only(const struct acl *acl, const char *owner)
{
    for (size_t i = 0; i < acl->n; i++)
        if (acl->grants[i].kind != ACL_GRANTEE_USER || strcmp(acl->grants[i].id, owner) != 0)
            return false;
    return true;
}

/* The checks of an ACL-setting request against the bucket's Object
 * Ownership and Public Access Block ('ba' may be NULL). */
static bool
acl_allowed_by_bucket(const struct bucket_access *ba, const struct acl *acl,
                      const char *bucket_owner, struct acl_error *e)
{
    if (!ba)
        return true;
    if (ba->ownership == OWNERSHIP_BUCKET_OWNER_ENFORCED && !acl_is_owner_only(acl, bucket_owner))
        return acl_fail(e, S3_ERR_ACL_NOT_SUPPORTED, NULL);
    if (ba->block_public_acls && acl_is_public(acl))
        return acl_fail(e, S3_ERR_ACCESS_DENIED, NULL);
    return true;
}

/* ======================================================================
 * XML out
 * ====================================================================== */

static void
grantee_xml(struct s3_req *r, struct buf *b, const struct acl_grant *g)
{
    static const char xsi[] = "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" ";
    char name[INDEX_USER_NAME_MAX + 1];
    buf_append_str(b, xsi);
    switch (g->kind) {
    case ACL_GRANTEE_USER:
        buf_append_str(b, "xsi:type=\"CanonicalUser\">");
        xml_elem_str(b, "ID", g->id);
        s3_owner_name(r, g->id, name, sizeof(name));
        xml_elem_str(b, "DisplayName", name);
        break;
    case ACL_GRANTEE_ALL_USERS:
        buf_append_str(b, "xsi:type=\"Group\">");
        xml_elem_str(b, "URI", URI_ALL_USERS);
        break;
    case ACL_GRANTEE_AUTH_USERS:
        buf_append_str(b, "xsi:type=\"Group\">");
        xml_elem_str(b, "URI", URI_AUTH_USERS);
        break;
    case ACL_GRANTEE_LOG_DELIVERY:
        buf_append_str(b, "xsi:type=\"Group\">");
        xml_elem_str(b, "URI", URI_LOG_DELIVERY);
        break;
    }
    buf_append_str(b, "</Grantee>");
}

static const char *
perm_name(unsigned perm)
{
    for (size_t k = 0; k < ARRAY_LEN(grant_headers); k++)
        if (grant_headers[k].perm == perm)
            return grant_headers[k].name;
    return "READ";
}

/* Answers the AccessControlPolicy of 'owner' with 'acl' (plus AllUsers
 * READ when 'add_public_read' and the ACL lacks it). */
static void
acl_respond(struct s3_req *r, const char *owner, const struct acl *acl, bool add_public_read)
{
    char name[INDEX_USER_NAME_MAX + 1];
    struct buf b;
    struct acl_grant owner_grant = {.kind = ACL_GRANTEE_USER, .perm = ACL_FULL_CONTROL};
    snprintf(owner_grant.id, sizeof(owner_grant.id), "%s", owner);
    s3_owner_name(r, owner, name, sizeof(name));
    buf_init(&b);
    xml_begin(&b, "AccessControlPolicy");
    buf_append_str(&b, "<Owner>");
    xml_elem_str(&b, "ID", owner);
    xml_elem_str(&b, "DisplayName", name);
    buf_append_str(&b, "</Owner><AccessControlList>");
    buf_append_str(&b, "<Grant>");
    grantee_xml(r, &b, &owner_grant);
    buf_append_str(&b, "<Permission>FULL_CONTROL</Permission></Grant>");
    bool has_public_read = false;
    for (size_t i = 0; i < acl->n; i++) {
        const struct acl_grant *g = &acl->grants[i];
        if (g->kind == ACL_GRANTEE_USER && g->perm == ACL_FULL_CONTROL && !strcmp(g->id, owner))
            continue;
        has_public_read =
            has_public_read || (g->kind == ACL_GRANTEE_ALL_USERS && g->perm == ACL_READ);
        buf_append_str(&b, "<Grant>");
        grantee_xml(r, &b, g);
        xml_elem_str(&b, "Permission", perm_name(g->perm));
        buf_append_str(&b, "</Grant>");
    }
    if (add_public_read && !has_public_read) {
        struct acl_grant pr = {.kind = ACL_GRANTEE_ALL_USERS, .perm = ACL_READ};
        buf_append_str(&b, "<Grant>");
        grantee_xml(r, &b, &pr);
        buf_append_str(&b, "<Permission>READ</Permission></Grant>");
    }
    buf_append_str(&b, "</AccessControlList>");
    xml_end(&b, "AccessControlPolicy");
    s3_respond_body(r, 200, "application/xml", b.ptr, b.len);
    buf_cleanup(&b);
}

/* ======================================================================
 * Bucket ACLs
 * ====================================================================== */

/* Whether 'acl' lets AllUsers READ (the bucket's public-read flag). */
static bool
acl_has_public_read(const struct acl *acl)
{
    for (size_t i = 0; i < acl->n; i++)
        if (acl->grants[i].kind == ACL_GRANTEE_ALL_USERS && (acl->grants[i].perm & ACL_READ))
            return true;
    return false;
}

/* Stores 'acl' as bucket 'bk's ACL and sets its public-read flag to match.
 * Returns 0 or -errno. */
static int
bucket_acl_store(struct s3_req *r, const struct index_bucket *bk, const struct acl *acl)
{
    struct slice text;
    int rc;
    acl_format(r->arena, acl, &text);
    if (acl->n)
        rc = index_bucket_config_put(r->srv->index, bk->id,
                                     (enum index_bucket_config_kind)BUCKET_ACCESS_KIND_ACL,
                                     text.ptr, text.len);
    else
        rc = index_bucket_config_delete(r->srv->index, bk->id,
                                        (enum index_bucket_config_kind)BUCKET_ACCESS_KIND_ACL);
    if (rc == -ENOENT && !acl->n)
        rc = 0;
    if (rc == 0)
        rc = index_bucket_set_public(r->srv->index, slice_from_cstr(bk->name),
                                     acl_has_public_read(acl));
    if (rc == 0)
        rc = bucket_access_reload(r->srv->access, r->srv->index, bk->id);
    return rc;
}

int
s3_bucket_public_set(struct s3_req *r, struct slice name, bool is_on)
{
    struct index_bucket bk;
    int rc = index_bucket_get(r->srv->index, name, &bk);
    if (rc != 0)
        return rc;
    struct acl *acl = arena_calloc(r->arena, 1, sizeof(*acl));
    struct bucket_access *ba = bucket_access_get(r->srv->access, bk.id);
    if (ba && ba->has_acl)
        *acl = ba->acl;
    bucket_access_release(ba);
    /* Drop AllUsers READ, then add it back when turning public on. */
    size_t n = 0;
    for (size_t i = 0; i < acl->n; i++)
        if (!(acl->grants[i].kind == ACL_GRANTEE_ALL_USERS && acl->grants[i].perm == ACL_READ))
            acl->grants[n++] = acl->grants[i];
    acl->n = n;
    struct acl_error e;
    if (is_on && !grant_add(acl, ACL_GRANTEE_ALL_USERS, ACL_READ, NULL, &e))
        return -EINVAL;
    return bucket_acl_store(r, &bk, acl);
}

void
op_get_bucket_acl(struct s3_req *r)
{
    struct index_bucket bk;
    struct acl empty = {.n = 0};
    if (!s3_bucket_lookup(r, &bk))
        return;
    const struct acl *acl = r->access && r->access->has_acl ? &r->access->acl : &empty;
    /* With ACLs off the answer is the owner's FULL_CONTROL, as AWS reads
     * it (an operator's public-read flag is not an ACL then). */
    bool is_enforced = r->access && r->access->ownership == OWNERSHIP_BUCKET_OWNER_ENFORCED;
    acl_respond(r, s3_bucket_owner_id(r, &bk), is_enforced ? &empty : acl,
                bk.is_public_read && !is_enforced);
}

/* The ACL a PutBucketAcl ('is_bucket') or PutObjectAcl asks for: its
 * x-amz-acl / x-amz-grant-* headers or its AccessControlPolicy body (one
 * of the two, as S3 requires), checked against the bucket's ownership
 * and public access block. Fills 'acl' or '*e'. */
static bool
acl_from_put_request(struct s3_req *r, bool is_bucket, const char *owner, struct acl *acl,
                     struct acl_error *e)
{
    bool has_headers;
    if (!acl_from_headers(r, is_bucket, owner, acl, &has_headers, e))
        return false;
    if (has_headers && r->xml_body.len)
        return acl_fail(e, S3_ERR_UNEXPECTED_CONTENT, NULL);
    if (!has_headers && !r->xml_body.len)
        return acl_fail(e, S3_ERR_MISSING_ACL_SECURITY_HEADER, NULL);
    if (!has_headers && !acl_from_xml(r, acl, e))
        return false;
    return acl_allowed_by_bucket(r->access, acl, owner, e);
}

static void
put_bucket_acl_end(struct s3_req *r)
{
    struct index_bucket bk;
    struct acl *acl = arena_calloc(r->arena, 1, sizeof(*acl));
    struct acl_error e = {S3_OK, NULL};
    if (!s3_bucket_lookup(r, &bk))
        return;
    const char *owner = s3_bucket_owner_id(r, &bk);
    if (!acl_from_put_request(r, true, owner, acl, &e))
        goto fail;
    int rc = bucket_acl_store(r, &bk, acl);
    if (rc < 0) {
        s3_respond_error(r, rc == -ENOENT ? S3_ERR_NO_SUCH_BUCKET : s3_error_from_errno(rc), NULL);
        return;
    }
    log_info("bucket %s: acl set, %zu grant(s) (by %s)", bk.name, acl->n, r->user_name);
    s3_respond_empty(r, 200);
    return;

fail:
    s3_respond_error(r, e.code, e.msg);
}

void
op_put_bucket_acl(struct s3_req *r)
{
    s3_req_expect_xml(r, ACL_BODY_MAX, put_bucket_acl_end);
}

bool
s3_bucket_acl_after_create(struct s3_req *r, const struct index_bucket *bk)
{
    struct acl *acl = arena_calloc(r->arena, 1, sizeof(*acl));
    struct acl_error e = {S3_OK, NULL};
    bool has;
    if (!acl_from_headers(r, true, r->user_id, acl, &has, &e)) {
        s3_respond_error(r, e.code, e.msg);
        return false;
    }
    if (!has || acl->n == 0)
        return true;
    int rc = bucket_acl_store(r, bk, acl);
    if (rc < 0) {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
        return false;
    }
    return true;
}

bool
s3_bucket_acl_check_create(struct s3_req *r)
{
    struct acl *acl = arena_calloc(r->arena, 1, sizeof(*acl));
    struct acl_error e = {S3_OK, NULL};
    bool has;
    if (!acl_from_headers(r, true, r->user_id, acl, &has, &e)) {
        s3_respond_error(r, e.code, e.msg);
        return false;
    }
    /* A new bucket with BucketOwnerEnforced (asked for, or the default
     * when x-amz-object-ownership is absent) takes no ACL but the owner's. */
    struct slice own = s3_req_header(r, "x-amz-object-ownership");
    bool is_enforced = !own.ptr || slice_eq(own, SLICE_LIT("BucketOwnerEnforced"));
    if (is_enforced && !acl_is_owner_only(acl, r->user_id[0] ? r->user_id : r->srv->owner_id)) {
        s3_respond_error(r, S3_ERR_INVALID_BUCKET_ACL_WITH_OWNERSHIP, NULL);
        return false;
    }
    return true;
}

/* ======================================================================
 * Object ACLs
 * ====================================================================== */

/* Splits META_ACL's value into the owner id and the ACL. */
static bool
object_acl_parse(struct slice v, char owner[72], struct acl *acl)
{
    const char *nl = memchr(v.ptr, '\n', v.len);
    if (!nl || (size_t)(nl - v.ptr) >= 72)
        return false;
    memcpy(owner, v.ptr, (size_t)(nl - v.ptr));
    owner[nl - v.ptr] = '\0';
    return acl_parse((struct slice){nl + 1, v.len - (size_t)(nl + 1 - v.ptr)}, acl);
}

/* 'm' without META_ACL, then with it set to 'owner' + 'acl' when 'acl'. */
static void
object_acl_set(struct s3_req *r, const struct meta *m, const char *owner, const struct acl *acl,
               struct meta *out)
{
    out->entries = arena_calloc(r->arena, m->n + 1, sizeof(*out->entries));
    out->n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!slice_eq(m->entries[i].name, SLICE_LIT(META_ACL)))
            out->entries[out->n++] = m->entries[i];
    if (!acl)
        return;
    struct slice text;
    acl_format(r->arena, acl, &text);
    char *v = arena_sprintf(r->arena, "%s\n%.*s", owner, (int)text.len, text.ptr);
    out->entries[out->n++] = (struct meta_entry){SLICE_LIT(META_ACL), slice_from_cstr(v)};
}

/* Whether the request carries x-amz-acl or an x-amz-grant-* header. */
static bool
has_acl_headers(const struct s3_req *r)
{
    for (size_t i = 0; i < r->n_headers; i++) {
        struct slice n = r->headers[i].name;
        if (n.len >= 9 && slice_eq_nocase((struct slice){n.ptr, 9}, "x-amz-acl"))
            return true;
        if (n.len > 12 && slice_eq_nocase((struct slice){n.ptr, 12}, "x-amz-grant-"))
            return true;
    }
    return false;
}

bool
s3_acl_from_request(struct s3_req *r, struct meta *m)
{
    /* The common PUT: no ACL asked for, none inherited (a copy's source). */
    if (!has_acl_headers(r) && !meta_get(m, META_ACL).ptr)
        return true;
    struct acl *acl = arena_calloc(r->arena, 1, sizeof(*acl));
    struct acl_error e = {S3_OK, NULL};
    bool has;
    struct meta nm;
    const char *bucket_owner = r->has_bucket ? s3_bucket_owner_id(r, &r->bucket_rec) : "";
    if (!acl_from_headers(r, false, bucket_owner, acl, &has, &e) ||
        (has && !acl_allowed_by_bucket(r->access, acl, bucket_owner, &e))) {
        s3_respond_error(r, e.code, e.msg);
        return false;
    }
    /* Stored even when it grants nobody (private): an object ACL of its own
     * decides reads of the object instead of the bucket's public-read flag.
     * With ACLs off nothing is stored (only owner-only ACLs got here). */
    bool is_stored = has && !(r->access && r->access->ownership == OWNERSHIP_BUCKET_OWNER_ENFORCED);
    const char *owner = r->user_id[0] ? r->user_id : r->srv->owner_id;
    object_acl_set(r, m, owner, is_stored ? acl : NULL, &nm);
    *m = nm;
    return true;
}

int
s3_object_acl_decide(struct s3_req *r, struct slice key, unsigned need)
{
    struct index_object obj;
    struct meta m;
    char owner[72];
    struct acl *acl;
    if (!r->has_bucket || key.len == 0 ||
        (r->access && r->access->ownership == OWNERSHIP_BUCKET_OWNER_ENFORCED))
        return -1;
    if (index_object_get(r->srv->index, r->bucket_rec.id, key, r->arena, &obj) != 0 ||
        !meta_decode(r->arena, obj.meta, obj.meta_len, &m))
        return -1;
    struct slice v = meta_get(&m, META_ACL);
    if (!v.ptr)
        return -1;
    acl = arena_calloc(r->arena, 1, sizeof(*acl));
    if (!object_acl_parse(v, owner, acl))
        return 0; /* unreadable: grants nothing */
    /* The object's writer owns it and has full control of it. */
    if (!r->principal.is_anonymous && !strcmp(owner, r->user_id))
        return 1;
    bool ignore_public = r->access && r->access->ignore_public_acls;
    return (acl_perms_for(acl, r, ignore_public) & need) == need ? 1 : 0;
}

bool
s3_object_acl_allows(struct s3_req *r, struct slice key, unsigned need)
{
    return s3_object_acl_decide(r, key, need) > 0;
}

void
op_get_object_acl(struct s3_req *r)
{
    struct index_bucket bk;
    struct index_object obj;
    struct meta m;
    char owner[72];
    struct acl *acl = arena_calloc(r->arena, 1, sizeof(*acl));
    if (!s3_bucket_lookup(r, &bk))
        return;
    int rc = index_object_get(r->srv->index, bk.id, r->key, r->arena, &obj);
    if (rc == -ENOENT) {
        s3_respond_error(r, S3_ERR_NO_SUCH_KEY, NULL);
        return;
    }
    if (rc < 0 || !meta_decode(r->arena, obj.meta, obj.meta_len, &m)) {
        s3_respond_error(r, rc < 0 ? s3_error_from_errno(rc) : S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    struct slice v = meta_get(&m, META_ACL);
    snprintf(owner, sizeof(owner), "%s", s3_bucket_owner_id(r, &bk));
    /* With ACLs off the bucket owner owns every object and the answer is
     * its FULL_CONTROL, whatever an object written earlier carries. */
    if (r->access && r->access->ownership == OWNERSHIP_BUCKET_OWNER_ENFORCED)
        v = SLICE_NULL;
    if (v.ptr && !object_acl_parse(v, owner, acl)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    acl_respond(r, owner, acl, false);
}

/* Replaces the ACL of r->key (retrying when the object is overwritten
 * meanwhile, as tagging does). Returns 0 or -errno. */
static int
object_acl_replace(struct s3_req *r, const struct index_bucket *bk, const struct acl *acl)
{
    int rc = -ESTALE;
    for (int attempt = 0; attempt < ACL_SET_RETRIES && rc == -ESTALE; attempt++) {
        struct index_object obj;
        struct meta m, nm;
        char owner[72];
        struct acl *old = arena_calloc(r->arena, 1, sizeof(*old));
        rc = index_object_get(r->srv->index, bk->id, r->key, r->arena, &obj);
        if (rc != 0)
            break;
        if (!meta_decode(r->arena, obj.meta, obj.meta_len, &m)) {
            rc = -EIO;
            break;
        }
        struct slice v = meta_get(&m, META_ACL);
        snprintf(owner, sizeof(owner), "%s", s3_bucket_owner_id(r, bk));
        if (v.ptr && !object_acl_parse(v, owner, old)) {
            rc = -EIO;
            break;
        }
        /* Kept even when it grants nobody: see s3_acl_from_request. With
         * ACLs off only an owner-only ACL got here, and none is stored. */
        bool is_enforced = r->access && r->access->ownership == OWNERSHIP_BUCKET_OWNER_ENFORCED;
        object_acl_set(r, &m, owner, is_enforced ? NULL : acl, &nm);
        meta_encode(r->arena, &nm, &obj.meta, &obj.meta_len);
        struct index_op op = {.kind = INDEX_OP_SET_META,
                              .bucket_id = bk->id,
                              .key = r->key,
                              .object = &obj,
                              .arena = r->arena};
        rc = committer_run(r->srv->committer, &op, 1);
        if (rc == 0)
            rc = op.result;
    }
    return rc;
}

static void
put_object_acl_end(struct s3_req *r)
{
    struct index_bucket bk;
    struct acl *acl = arena_calloc(r->arena, 1, sizeof(*acl));
    struct acl_error e = {S3_OK, NULL};
    if (!s3_bucket_lookup(r, &bk))
        return;
    const char *owner = s3_bucket_owner_id(r, &bk);
    if (!acl_from_put_request(r, false, owner, acl, &e))
        goto fail;
    int rc = object_acl_replace(r, &bk, acl);
    if (rc == -ENOENT)
        s3_respond_error(r, S3_ERR_NO_SUCH_KEY, NULL);
    else if (rc < 0)
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    else
        s3_respond_empty(r, 200);
    return;

fail:
    s3_respond_error(r, e.code, e.msg);
}

void
op_put_object_acl(struct s3_req *r)
{
    s3_req_expect_xml(r, ACL_BODY_MAX, put_object_acl_end);
}
