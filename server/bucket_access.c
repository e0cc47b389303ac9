/*
 * bucket_access.c: the bucket policy, bucket ACL, Object Ownership and
 * Public Access Block of each bucket, compiled once when set (or at
 * start) and kept in a small hash by bucket id. A request takes a counted
 * reference to its bucket's entry; a change publishes a new entry and the
 * old one goes when its last reader drops it. With no bucket configured
 * the lookup is one atomic load, so the common path pays nothing.
 *
 * The decision (bucket_access_decide) follows AWS: an explicit Deny in the
 * policy wins over every allow (the owner's, a grant, root's included,
 * except that root may always manage the policy itself so it cannot lock
 * itself out); then an Allow from the policy, an ACL grant or shardstore's
 * own rules lets the request through. Public Access Block's
 * IgnorePublicAcls drops public ACL grants (and the public-read flag);
 * RestrictPublicBuckets drops public policy Allows for callers outside
 * the account (anonymous ones).
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/bucket_access.h"
#include "server/http.h"
#include "server/meta.h"
#include "server/req.h"
#include "server/server.h"
#include "server/tags.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CACHE_SLOTS 64

struct cache_node {
    struct bucket_access *ba;
    struct cache_node *next;
};

struct bucket_access_cache {
    pthread_rwlock_t lock;
    atomic_size_t n_entries;
    struct cache_node *slots[CACHE_SLOTS];
};

/* ======================================================================
 * ACL text form
 * ====================================================================== */

void
acl_format(struct arena *a, const struct acl *acl, struct slice *out)
{
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < acl->n; i++)
        buf_printf(&b, "%u %d %s\n", acl->grants[i].perm, (int)acl->grants[i].kind,
                   acl->grants[i].kind == ACL_GRANTEE_USER ? acl->grants[i].id : "-");
    *out = (struct slice){arena_memdup(a, b.ptr ? b.ptr : "", b.len), b.len};
    buf_cleanup(&b);
}

bool
acl_parse(struct slice text, struct acl *out)
{
    struct slice line;
    out->n = 0;
    while (slice_split_next(&text, '\n', &line)) {
        if (line.len == 0)
            continue;
        char buf[128];
        unsigned perm;
        int kind;
        char id[72];
        if (line.len >= sizeof(buf) || out->n >= ACL_GRANTS_MAX)
            return false;
        memcpy(buf, line.ptr, line.len);
        buf[line.len] = '\0';
        if (sscanf(buf, "%u %d %71s", &perm, &kind, id) != 3 || perm == 0 || perm > 15 ||
            kind < 0 || kind > ACL_GRANTEE_LOG_DELIVERY)
            return false;
        struct acl_grant *g = &out->grants[out->n++];
        g->perm = perm;
        g->kind = (enum acl_grantee)kind;
        snprintf(g->id, sizeof(g->id), "%s", kind == ACL_GRANTEE_USER ? id : "");
    }
    return true;
}

bool
acl_is_public(const struct acl *acl)
{
    for (size_t i = 0; i < acl->n; i++)
        if (acl->grants[i].kind == ACL_GRANTEE_ALL_USERS ||
            acl->grants[i].kind == ACL_GRANTEE_AUTH_USERS)
            return true;
    return false;
}

unsigned
acl_perms_for(const struct acl *acl, const struct s3_req *r, bool ignore_public)
{
    unsigned perms = 0;
    for (size_t i = 0; i < acl->n; i++) {
        const struct acl_grant *g = &acl->grants[i];
        switch (g->kind) {
        case ACL_GRANTEE_USER:
            if (!r->principal.is_anonymous && !strcmp(g->id, r->user_id))
                perms |= g->perm;
            break;
        case ACL_GRANTEE_ALL_USERS:
            if (!ignore_public)
                perms |= g->perm;
            break;
        case ACL_GRANTEE_AUTH_USERS:
            if (!ignore_public && !r->principal.is_anonymous)
                perms |= g->perm;
            break;
        case ACL_GRANTEE_LOG_DELIVERY:
            break;
        }
    }
    return perms;
}

/* ======================================================================
 * The cache
 * ====================================================================== */

static void
entry_free(struct bucket_access *ba)
{
    if (!ba)
        return;
    arena_destroy(ba->arena);
    free(ba);
}

void
bucket_access_release(struct bucket_access *ba)
{
    if (ba && atomic_fetch_sub(&ba->refs, 1) == 1)
        entry_free(ba);
}

/* Reads the stored configuration 'kind' of 'id' into 'a'; false when none. */
static bool
config_read(struct index *ix, uint64_t id, int kind, struct arena *a, struct slice *out)
{
    const void *val;
    size_t len;
    if (index_bucket_config_get(ix, id, (enum index_bucket_config_kind)kind, a, &val, &len) != 0)
        return false;
    *out = (struct slice){val, len};
    return true;
}

/* Builds the entry of 'id' from the store; *out NULL when it has nothing. */
static int
entry_load(struct index *ix, uint64_t id, struct bucket_access **out)
{
    struct bucket_access *ba = xcalloc(1, sizeof(*ba));
    struct slice v;
    const char *msg = NULL;
    bool has_any = false;
    int rc = 0;
    ba->arena = arena_create(4096);
    ba->bucket_id = id;
    atomic_init(&ba->refs, 1);
    if (config_read(ix, id, BUCKET_ACCESS_KIND_POLICY, ba->arena, &v)) {
        /* Validated when set: no bucket name or user check again here. */
        if (auth_iam_compile(v.ptr, v.len, SLICE_NULL, NULL, NULL, ba->arena, &ba->policy, &msg) !=
            0) {
            log_error("bucket id %" PRIu64 ": stored policy does not compile: %s", id,
                      msg ? msg : "?");
            rc = -EIO;
            goto fail;
        }
        has_any = true;
    }
    if (config_read(ix, id, BUCKET_ACCESS_KIND_ACL, ba->arena, &v)) {
        if (!acl_parse(v, &ba->acl)) {
            rc = CORRUPT_BKPT("stored bucket ACL");
            goto fail;
        }
        ba->has_acl = has_any = true;
    }
    if (config_read(ix, id, BUCKET_ACCESS_KIND_OWNERSHIP, ba->arena, &v) && v.len == 1) {
        ba->ownership = (enum bucket_ownership)(v.ptr[0] - '0');
        has_any = true;
    }
    if (config_read(ix, id, BUCKET_ACCESS_KIND_PAB, ba->arena, &v) && v.len == 4) {
        ba->has_pab = has_any = true;
        ba->block_public_acls = v.ptr[0] == '1';
        ba->ignore_public_acls = v.ptr[1] == '1';
        ba->block_public_policy = v.ptr[2] == '1';
        ba->restrict_public_buckets = v.ptr[3] == '1';
    }
    if (!has_any) {
        entry_free(ba);
        ba = NULL;
    }
    *out = ba;
    return 0;

fail:
    entry_free(ba);
    *out = NULL;
    return rc;
}

/* Publishes 'ba' (NULL: none) as the entry of 'id'. */
static void
cache_publish(struct bucket_access_cache *c, uint64_t id, struct bucket_access *ba)
{
    struct bucket_access *old = NULL;
    struct cache_node **pp;
    pthread_rwlock_wrlock(&c->lock);
    for (pp = &c->slots[id % CACHE_SLOTS]; *pp; pp = &(*pp)->next)
        if ((*pp)->ba->bucket_id == id)
            break;
    if (*pp) {
        old = (*pp)->ba;
        if (ba) {
            (*pp)->ba = ba;
        } else {
            struct cache_node *dead = *pp;
            *pp = dead->next;
            free(dead);
            atomic_fetch_sub(&c->n_entries, 1);
        }
    } else if (ba) {
        struct cache_node *n = xcalloc(1, sizeof(*n));
        n->ba = ba;
        n->next = c->slots[id % CACHE_SLOTS];
        c->slots[id % CACHE_SLOTS] = n;
        atomic_fetch_add(&c->n_entries, 1);
    }
    pthread_rwlock_unlock(&c->lock);
    bucket_access_release(old);
}

int
bucket_access_reload(struct bucket_access_cache *c, struct index *ix, uint64_t bucket_id)
{
    struct bucket_access *ba;
    int rc = entry_load(ix, bucket_id, &ba);
    if (rc == 0)
        cache_publish(c, bucket_id, ba);
    return rc;
}

struct load_ctx {
    struct bucket_access_cache *c;
    struct index *ix;
    int rc;
};

static int
load_one(void *ctx, uint64_t bucket_id, const void *val, size_t len)
{
    struct load_ctx *lc = ctx;
    (void)val;
    (void)len;
    struct bucket_access *ba = bucket_access_get(lc->c, bucket_id);
    if (ba) {
        /* Already loaded through another of its kinds. */
        bucket_access_release(ba);
        return 0;
    }
    lc->rc = bucket_access_reload(lc->c, lc->ix, bucket_id);
    return lc->rc;
}

struct bucket_access_cache *
bucket_access_cache_create(struct index *ix)
{
    struct bucket_access_cache *c = xcalloc(1, sizeof(*c));
    pthread_rwlock_init(&c->lock, NULL);
    atomic_init(&c->n_entries, 0);
    static const int kinds[] = {BUCKET_ACCESS_KIND_POLICY, BUCKET_ACCESS_KIND_ACL,
                                BUCKET_ACCESS_KIND_OWNERSHIP, BUCKET_ACCESS_KIND_PAB};
    struct load_ctx lc = {.c = c, .ix = ix};
    for (size_t i = 0; i < ARRAY_LEN(kinds); i++) {
        int rc =
            index_bucket_config_list(ix, (enum index_bucket_config_kind)kinds[i], load_one, &lc);
        if (rc != 0 || lc.rc != 0) {
            bucket_access_cache_destroy(c);
            return NULL;
        }
    }
    return c;
}

void
bucket_access_cache_destroy(struct bucket_access_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < CACHE_SLOTS; i++) {
        struct cache_node *n = c->slots[i];
        while (n) {
            struct cache_node *next = n->next;
            bucket_access_release(n->ba);
            free(n);
            n = next;
        }
    }
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

struct bucket_access *
bucket_access_get(struct bucket_access_cache *c, uint64_t bucket_id)
{
    struct bucket_access *ba = NULL;
    if (!c || atomic_load_explicit(&c->n_entries, memory_order_relaxed) == 0)
        return NULL;
    pthread_rwlock_rdlock(&c->lock);
    for (struct cache_node *n = c->slots[bucket_id % CACHE_SLOTS]; n; n = n->next) {
        if (n->ba->bucket_id == bucket_id) {
            ba = n->ba;
            atomic_fetch_add(&ba->refs, 1);
            break;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return ba;
}

/* ======================================================================
 * Actions
 * ====================================================================== */

/* S3 operation (the route's name) -> IAM action and the bucket ACL
 * permission that grants it (0: no ACL permission does). */
static const struct {
    const char *op;
    const char *action;
    unsigned acl;
    unsigned object_acl; /* the object ACL permission that grants it */
} op_actions[] = {
    {"GetObject", "s3:GetObject", 0, ACL_READ},
    {"HeadObject", "s3:GetObject", 0, ACL_READ},
    {"GetObjectMember", "s3:GetObject", 0, ACL_READ},
    {"HeadObjectMember", "s3:GetObject", 0, ACL_READ},
    {"ListObjectMembers", "s3:GetObject", 0, ACL_READ},
    {"PutObject", "s3:PutObject", ACL_WRITE, 0},
    {"CopyObject", "s3:PutObject", ACL_WRITE, 0},
    {"PostObject", "s3:PutObject", ACL_WRITE, 0},
    {"CreateMultipartUpload", "s3:PutObject", ACL_WRITE, 0},
    {"UploadPart", "s3:PutObject", ACL_WRITE, 0},
    {"UploadPartCopy", "s3:PutObject", ACL_WRITE, 0},
    {"CompleteMultipartUpload", "s3:PutObject", ACL_WRITE, 0},
    {"AbortMultipartUpload", "s3:AbortMultipartUpload", ACL_WRITE, 0},
    {"ListParts", "s3:ListMultipartUploadParts", ACL_WRITE, 0},
    {"DeleteObject", "s3:DeleteObject", ACL_WRITE, 0},
    {"DeleteObjects", "s3:DeleteObject", ACL_WRITE, 0},
    {"PutObjectTagging", "s3:PutObjectTagging", 0, 0},
    {"GetObjectTagging", "s3:GetObjectTagging", 0, 0},
    {"DeleteObjectTagging", "s3:DeleteObjectTagging", 0, 0},
    {"GetObjectAcl", "s3:GetObjectAcl", 0, ACL_READ_ACP},
    {"PutObjectAcl", "s3:PutObjectAcl", 0, ACL_WRITE_ACP},
    {"ListObjects", "s3:ListBucket", ACL_READ, 0},
    {"ListObjectVersions", "s3:ListBucketVersions", ACL_READ, 0},
    {"ListMultipartUploads", "s3:ListBucketMultipartUploads", ACL_READ, 0},
    {"HeadBucket", "s3:ListBucket", ACL_READ, 0},
    {"GetBucketLocation", "s3:GetBucketLocation", 0, 0},
    {"GetBucketVersioning", "s3:GetBucketVersioning", 0, 0},
    {"GetBucketAcl", "s3:GetBucketAcl", ACL_READ_ACP, 0},
    {"PutBucketAcl", "s3:PutBucketAcl", ACL_WRITE_ACP, 0},
    {"DeleteBucket", "s3:DeleteBucket", 0, 0},
    {"GetBucketPolicy", "s3:GetBucketPolicy", 0, 0},
    {"PutBucketPolicy", "s3:PutBucketPolicy", 0, 0},
    {"DeleteBucketPolicy", "s3:DeleteBucketPolicy", 0, 0},
    {"GetBucketPolicyStatus", "s3:GetBucketPolicyStatus", 0, 0},
    {"GetBucketOwnershipControls", "s3:GetBucketOwnershipControls", 0, 0},
    {"PutBucketOwnershipControls", "s3:PutBucketOwnershipControls", 0, 0},
    {"DeleteBucketOwnershipControls", "s3:PutBucketOwnershipControls", 0, 0},
    {"GetPublicAccessBlock", "s3:GetBucketPublicAccessBlock", 0, 0},
    {"PutPublicAccessBlock", "s3:PutBucketPublicAccessBlock", 0, 0},
    {"DeletePublicAccessBlock", "s3:PutBucketPublicAccessBlock", 0, 0},
    {"GetBucketLifecycleConfiguration", "s3:GetLifecycleConfiguration", 0, 0},
    {"PutBucketLifecycleConfiguration", "s3:PutLifecycleConfiguration", 0, 0},
    {"DeleteBucketLifecycle", "s3:PutLifecycleConfiguration", 0, 0},
    {"GetBucketTagging", "s3:GetBucketTagging", 0, 0},
    {"PutBucketTagging", "s3:PutBucketTagging", 0, 0},
    {"DeleteBucketTagging", "s3:PutBucketTagging", 0, 0},
};

static int
op_index(const struct s3_req *r)
{
    if (!r->op)
        return -1;
    for (size_t i = 0; i < ARRAY_LEN(op_actions); i++)
        if (!strcmp(op_actions[i].op, r->op))
            return (int)i;
    return -1;
}

const char *
bucket_access_iam_action(const struct s3_req *r)
{
    int i = op_index(r);
    return i >= 0 ? op_actions[i].action : "s3:Unknown";
}

unsigned
bucket_access_acl_need(const struct s3_req *r)
{
    int i = op_index(r);
    return i >= 0 ? op_actions[i].acl : 0;
}

unsigned
bucket_access_object_acl_need(const struct s3_req *r)
{
    int i = op_index(r);
    return i >= 0 ? op_actions[i].object_acl : 0;
}

/* ======================================================================
 * Condition values
 * ====================================================================== */

struct value_ctx {
    struct s3_req *r;
    const struct bucket_access *ba;
    struct slice key;
    char buf[96];
    char ip[INET6_ADDRSTRLEN]; /* aws:SourceIp, found on first use */
    bool has_ip;
    /* The object's tags (s3:ExistingObjectTag), read on first use. */
    bool has_read_tags;
    struct s3_tag *tags;
    size_t n_tags;
    /* The request's x-amz-tagging (s3:RequestObjectTag*), parsed on first use. */
    bool has_parsed_request_tags;
    struct s3_tag *req_tags;
    size_t n_req_tags;
};

static bool
source_ip(struct value_ctx *vc, struct slice *out)
{
    if (vc->has_ip) {
        *out = slice_from_cstr(vc->ip);
        return vc->ip[0] != '\0';
    }
    vc->has_ip = true;
    const union MHD_ConnectionInfo *ci =
        vc->r->conn ? MHD_get_connection_info(vc->r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS)
                    : NULL;
    if (!ci || !ci->client_addr)
        return false;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, vc->ip,
                  sizeof(vc->ip));
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, vc->ip,
                  sizeof(vc->ip));
    else
        return false;
    *out = slice_from_cstr(vc->ip);
    return true;
}

static bool
header_value(struct s3_req *r, const char *name, struct slice *out)
{
    if (!s3_req_has_header(r, name))
        return false;
    *out = s3_req_header(r, name);
    return true;
}

static bool
param_value(struct s3_req *r, const char *name, struct slice *out)
{
    const struct s3_param *p = s3_req_param(r, name);
    if (!p)
        return false;
    *out = p->value;
    return true;
}

static bool
existing_tag(struct value_ctx *vc, struct slice name, struct slice *out)
{
    if (!vc->has_read_tags) {
        struct index_object obj;
        struct meta m;
        vc->has_read_tags = true;
        if (vc->key.len && vc->r->has_bucket &&
            index_object_get(vc->r->srv->index, vc->r->bucket_rec.id, vc->key, vc->r->arena,
                             &obj) == 0 &&
            meta_decode(vc->r->arena, obj.meta, obj.meta_len, &m) &&
            !meta_tags_get(&m, vc->r->arena, &vc->tags, &vc->n_tags))
            vc->n_tags = 0;
    }
    for (size_t i = 0; i < vc->n_tags; i++) {
        if (slice_eq(vc->tags[i].key, name)) {
            *out = vc->tags[i].value;
            return true;
        }
    }
    return false;
}

static void
parse_request_tags(struct value_ctx *vc)
{
    if (vc->has_parsed_request_tags)
        return;
    vc->has_parsed_request_tags = true;
    struct slice h;
    if (!header_value(vc->r, "x-amz-tagging", &h) ||
        tags_parse_header(h, vc->r->arena, &vc->req_tags, &vc->n_req_tags) != TAGS_OK)
        vc->n_req_tags = 0;
}

static bool
condition_value(void *ctx, enum auth_iam_key key, struct slice suffix, size_t i, struct slice *out)
{
    struct value_ctx *vc = ctx;
    struct s3_req *r = vc->r;
    if (key == AUTH_IAM_KEY_REQUEST_TAG_KEYS) {
        parse_request_tags(vc);
        if (i >= vc->n_req_tags)
            return false;
        *out = vc->req_tags[i].key;
        return true;
    }
    if (i > 0)
        return false;
    switch (key) {
    case AUTH_IAM_KEY_SOURCE_IP:
        return source_ip(vc, out);
    case AUTH_IAM_KEY_SECURE_TRANSPORT:
        *out = r->conn && http_conn_is_tls(r->conn) ? SLICE_LIT("true") : SLICE_LIT("false");
        return true;
    case AUTH_IAM_KEY_CURRENT_TIME: {
        int64_t s = clock_now_ns() / 1000000000;
        int64_t days = s >= 0 ? s / 86400 : (s - 86399) / 86400;
        int64_t sod = s - days * 86400, y;
        unsigned mo, d;
        civil_from_days(days, &y, &mo, &d);
        snprintf(vc->buf, sizeof(vc->buf), "%04" PRId64 "-%02u-%02uT%02d:%02d:%02dZ", y, mo, d,
                 (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
        *out = slice_from_cstr(vc->buf);
        return true;
    }
    case AUTH_IAM_KEY_EPOCH_TIME:
        snprintf(vc->buf, sizeof(vc->buf), "%" PRId64, clock_now_ns() / 1000000000);
        *out = slice_from_cstr(vc->buf);
        return true;
    case AUTH_IAM_KEY_USERNAME:
        if (r->principal.is_anonymous)
            return false;
        *out = slice_from_cstr(r->user_name);
        return true;
    case AUTH_IAM_KEY_USERID:
        if (r->principal.is_anonymous)
            return false;
        *out = slice_from_cstr(r->user_id);
        return true;
    case AUTH_IAM_KEY_PRINCIPAL_TYPE:
        *out = r->principal.is_anonymous ? SLICE_LIT("Anonymous")
               : r->principal.is_root    ? SLICE_LIT("Account")
                                         : SLICE_LIT("User");
        return true;
    case AUTH_IAM_KEY_PRINCIPAL_ARN:
        if (r->principal.is_anonymous)
            return false;
        snprintf(vc->buf, sizeof(vc->buf), "arn:aws:iam::%s:%s%s", BUCKET_ACCESS_ACCOUNT_ID,
                 r->principal.is_root ? "root" : "user/", r->principal.is_root ? "" : r->user_name);
        *out = slice_from_cstr(vc->buf);
        return true;
    case AUTH_IAM_KEY_REFERER:
        return header_value(r, "referer", out);
    case AUTH_IAM_KEY_USER_AGENT:
        return header_value(r, "user-agent", out);
    case AUTH_IAM_KEY_PREFIX:
        return param_value(r, "prefix", out);
    case AUTH_IAM_KEY_DELIMITER:
        return param_value(r, "delimiter", out);
    case AUTH_IAM_KEY_MAX_KEYS:
        return param_value(r, "max-keys", out);
    case AUTH_IAM_KEY_ACL:
        return header_value(r, "x-amz-acl", out);
    case AUTH_IAM_KEY_SSE:
        return header_value(r, "x-amz-server-side-encryption", out);
    case AUTH_IAM_KEY_COPY_SOURCE:
        return header_value(r, "x-amz-copy-source", out);
    case AUTH_IAM_KEY_METADATA_DIRECTIVE:
        return header_value(r, "x-amz-metadata-directive", out);
    case AUTH_IAM_KEY_STORAGE_CLASS:
        return header_value(r, "x-amz-storage-class", out);
    case AUTH_IAM_KEY_CONTENT_SHA256:
        return header_value(r, "x-amz-content-sha256", out);
    case AUTH_IAM_KEY_EXISTING_TAG:
        return existing_tag(vc, suffix, out);
    case AUTH_IAM_KEY_REQUEST_TAG:
        parse_request_tags(vc);
        for (size_t k = 0; k < vc->n_req_tags; k++) {
            if (slice_eq(vc->req_tags[k].key, suffix)) {
                *out = vc->req_tags[k].value;
                return true;
            }
        }
        return false;
    case AUTH_IAM_KEY_SIGNATURE_VERSION:
        if (r->principal.is_anonymous)
            return false;
        *out = s3_req_param(r, "AWSAccessKeyId") ? SLICE_LIT("AWS") : SLICE_LIT("AWS4-HMAC-SHA256");
        return true;
    case AUTH_IAM_KEY_AUTH_TYPE:
        if (r->principal.is_anonymous)
            return false;
        *out = r->auth.is_presigned ? SLICE_LIT("REST-QUERY-STRING") : SLICE_LIT("REST-HEADER");
        return true;
    case AUTH_IAM_KEY_VERSION_ID:
        return param_value(r, "versionId", out);
    case AUTH_IAM_KEY_SOURCE_ARN:
    case AUTH_IAM_KEY_SOURCE_ACCOUNT: /* set only when a service calls */
    case AUTH_IAM_KEY_REQUEST_TAG_KEYS:
        break;
    }
    return false;
}

/* ======================================================================
 * The decision
 * ====================================================================== */

/* Whether 'action' manages the policy itself (root keeps these so it can
 * always undo a policy that locks everyone out). */
static bool
is_policy_admin(const char *action)
{
    return !strcmp(action, "s3:PutBucketPolicy") || !strcmp(action, "s3:GetBucketPolicy") ||
           !strcmp(action, "s3:DeleteBucketPolicy");
}

int
bucket_access_decide(struct s3_req *r, const struct bucket_access *ba, bool base,
                     const char *iam_action, struct slice key, unsigned acl_need)
{
    if (!ba)
        return base;
    bool is_allowed = base;
    if (ba->policy) {
        struct value_ctx vc = {.r = r, .ba = ba, .key = key};
        struct slice bucket = r->has_bucket ? slice_from_cstr(r->bucket_rec.name) : r->bucket;
        char *res = key.len
                        ? arena_sprintf(r->arena, "arn:aws:s3:::%.*s/%.*s", (int)bucket.len,
                                        bucket.ptr, (int)key.len, key.ptr)
                        : arena_sprintf(r->arena, "arn:aws:s3:::%.*s", (int)bucket.len, bucket.ptr);
        struct auth_iam_request rq = {
            .action = slice_from_cstr(iam_action),
            .resource = slice_from_cstr(res),
            .is_anonymous = r->principal.is_anonymous,
            .is_root = r->principal.is_root,
            .user_name = slice_from_cstr(r->user_name),
            .user_id = slice_from_cstr(r->user_id),
            .skip_public_allows = ba->restrict_public_buckets && r->principal.is_anonymous,
            .value = condition_value,
            .ctx = &vc,
        };
        enum auth_iam_effect eff = auth_iam_evaluate(ba->policy, &rq);
        if (eff == AUTH_IAM_DENY)
            return r->principal.is_root && is_policy_admin(iam_action) ? 1 : -1;
        if (eff == AUTH_IAM_ALLOW)
            is_allowed = true;
    }
    if (!is_allowed && acl_need && ba->has_acl &&
        ba->ownership != OWNERSHIP_BUCKET_OWNER_ENFORCED &&
        (acl_perms_for(&ba->acl, r, ba->ignore_public_acls) & acl_need) == acl_need)
        is_allowed = true;
    return is_allowed ? 1 : 0;
}

/* ======================================================================
 * Server access log delivery
 * ====================================================================== */

/* The values the log delivery service's request has: the bucket it logs
 * (aws:SourceArn), the account (aws:SourceAccount) and the time. */
struct log_value_ctx {
    const char *source_arn;
    char buf[32];
};

static bool
log_condition_value(void *ctx, enum auth_iam_key key, struct slice suffix, size_t i,
                    struct slice *out)
{
    struct log_value_ctx *lc = ctx;
    (void)suffix;
    if (i > 0)
        return false;
    switch (key) {
    case AUTH_IAM_KEY_SOURCE_ARN:
        *out = slice_from_cstr(lc->source_arn);
        return true;
    case AUTH_IAM_KEY_SOURCE_ACCOUNT:
        *out = SLICE_LIT(BUCKET_ACCESS_ACCOUNT_ID);
        return true;
    case AUTH_IAM_KEY_PRINCIPAL_TYPE:
        *out = SLICE_LIT("Service");
        return true;
    case AUTH_IAM_KEY_SECURE_TRANSPORT:
        *out = SLICE_LIT("true");
        return true;
    case AUTH_IAM_KEY_EPOCH_TIME:
        snprintf(lc->buf, sizeof(lc->buf), "%" PRId64, clock_now_ns() / 1000000000);
        *out = slice_from_cstr(lc->buf);
        return true;
    default:
        return false;
    }
}

bool
bucket_access_allows_log_delivery(struct bucket_access_cache *c, const struct index_bucket *target,
                                  struct slice key, struct slice source_bucket)
{
    struct bucket_access *ba = bucket_access_get(c, target->id);
    bool is_allowed = false;
    if (!ba)
        return false;
    if (ba->policy) {
        struct arena *a = arena_create(512);
        struct log_value_ctx lc = {
            .source_arn =
                arena_sprintf(a, "arn:aws:s3:::%.*s", (int)source_bucket.len, source_bucket.ptr),
        };
        struct auth_iam_request rq = {
            .action = SLICE_LIT("s3:PutObject"),
            .resource = slice_from_cstr(
                arena_sprintf(a, "arn:aws:s3:::%s/%.*s", target->name, (int)key.len, key.ptr)),
            .service = SLICE_LIT(BUCKET_ACCESS_LOG_SERVICE),
            .value = log_condition_value,
            .ctx = &lc,
        };
        enum auth_iam_effect eff = auth_iam_evaluate(ba->policy, &rq);
        arena_destroy(a);
        if (eff == AUTH_IAM_DENY)
            goto out;
        is_allowed = eff == AUTH_IAM_ALLOW;
    }
    /* With ACLs on, the bucket ACL's WRITE for the LogDelivery group. */
    if (!is_allowed && ba->has_acl && ba->ownership != OWNERSHIP_BUCKET_OWNER_ENFORCED) {
        for (size_t i = 0; i < ba->acl.n && !is_allowed; i++)
            is_allowed = ba->acl.grants[i].kind == ACL_GRANTEE_LOG_DELIVERY &&
                         (ba->acl.grants[i].perm & ACL_WRITE);
    }

out:
    bucket_access_release(ba);
    return is_allowed;
}
