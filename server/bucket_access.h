/*
 * bucket_access.h: the access configurations of buckets (bucket policy,
 * bucket ACL, Object Ownership, Public Access Block), compiled once and
 * cached per bucket id (bucket_access.c), and the decision that combines
 * them with shardstore's own rules for one request.
 */
#ifndef SHARD_SERVER_BUCKET_ACCESS_H
#define SHARD_SERVER_BUCKET_ACCESS_H

#include "auth/auth.h"
#include "common/common.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct index;

/* The account id in the ARNs shardstore shows (aws:PrincipalArn): one
 * server is one account. Policies may name any account id. */
#define BUCKET_ACCESS_ACCOUNT_ID "000000000000"
/* The service principal server access log delivery acts as. */
#define BUCKET_ACCESS_LOG_SERVICE "logging.s3.amazonaws.com"
struct index_bucket;
struct s3_req;

/* Configuration kinds in index/'s per-bucket store. Numbered away from
 * the low kinds other features take; stable on disk. */
#define BUCKET_ACCESS_KIND_POLICY 20
#define BUCKET_ACCESS_KIND_ACL 21
#define BUCKET_ACCESS_KIND_OWNERSHIP 22
#define BUCKET_ACCESS_KIND_PAB 23

/* ACL permissions (bits) and grantee kinds. */
enum acl_perm {
    ACL_READ = 1,
    ACL_WRITE = 2,
    ACL_READ_ACP = 4,
    ACL_WRITE_ACP = 8,
    ACL_FULL_CONTROL = 15,
};
enum acl_grantee {
    ACL_GRANTEE_USER,         /* a canonical user id */
    ACL_GRANTEE_ALL_USERS,    /* http://acs.amazonaws.com/groups/global/AllUsers */
    ACL_GRANTEE_AUTH_USERS,   /* .../global/AuthenticatedUsers */
    ACL_GRANTEE_LOG_DELIVERY, /* .../s3/LogDelivery (accepted, grants nothing here) */
};
struct acl_grant {
    enum acl_grantee kind;
    unsigned perm; /* one ACL_* value (FULL_CONTROL as 15) */
    char id[72];   /* ACL_GRANTEE_USER */
};
/* An access control list: the owner's full control is implied; these are
 * the grants beyond it (at most ACL_GRANTS_MAX, as AWS's 100). */
#define ACL_GRANTS_MAX 100
struct acl {
    struct acl_grant grants[ACL_GRANTS_MAX];
    size_t n;
};

enum bucket_ownership {
    OWNERSHIP_NONE, /* never set: ACLs on, as ObjectWriter */
    OWNERSHIP_OBJECT_WRITER,
    OWNERSHIP_BUCKET_OWNER_PREFERRED,
    OWNERSHIP_BUCKET_OWNER_ENFORCED,
};

/* One bucket's compiled configuration. Immutable once published; shared
 * by requests through a reference count. */
struct bucket_access {
    atomic_int refs;
    uint64_t bucket_id;
    struct arena *arena;
    const struct auth_iam_policy *policy; /* NULL: none */
    bool has_acl;
    struct acl acl;
    enum bucket_ownership ownership;
    bool has_pab;
    bool block_public_acls, ignore_public_acls, block_public_policy, restrict_public_buckets;
};

struct bucket_access_cache;

/* Creates the cache and compiles every stored configuration of 'ix'.
 * Returns NULL after logging when a stored policy no longer compiles. */
struct bucket_access_cache *bucket_access_cache_create(struct index *ix);
/* Frees the cache; NULL is a no-op. No request may hold an entry. */
void bucket_access_cache_destroy(struct bucket_access_cache *c);
/* The entry of 'bucket_id' with a reference the caller drops with
 * bucket_access_release, or NULL (no configuration). Lock-free and one
 * load when no bucket has a configuration. */
struct bucket_access *bucket_access_get(struct bucket_access_cache *c, uint64_t bucket_id);
void bucket_access_release(struct bucket_access *ba);
/* Re-reads the stored configurations of 'bucket_id' and publishes them
 * (after every change to one). Returns 0 or -errno. */
int bucket_access_reload(struct bucket_access_cache *c, struct index *ix, uint64_t bucket_id);

/* ACL text form (stored in the bucket config and in object metadata):
 * one "PERM KIND ID\n" line per grant. */
void acl_format(struct arena *a, const struct acl *acl, struct slice *out);
bool acl_parse(struct slice text, struct acl *out);
/* Whether 'acl' grants anything to AllUsers or AuthenticatedUsers. */
bool acl_is_public(const struct acl *acl);
/* The permission bits 'acl' gives the request's principal ('ignore_public':
 * IgnorePublicAcls set). */
unsigned acl_perms_for(const struct acl *acl, const struct s3_req *r, bool ignore_public);

/*
 * The bucket-configuration part of a decision for request 'r' on its
 * bucket: 'base' is what shardstore's own rules (owner, grants, public
 * flag) said; 'iam_action' the IAM action ("s3:GetObject") and 'key' the
 * object key (SLICE_NULL for a bucket resource), 'acl_need' the bucket ACL
 * permission that would grant it. Returns -1 for an explicit policy Deny
 * (final), 1 when allowed (policy, bucket ACL or base), 0 when nothing
 * allows (an object ACL may still).
 */
int bucket_access_decide(struct s3_req *r, const struct bucket_access *ba, bool base,
                         const char *iam_action, struct slice key, unsigned acl_need);
/* The IAM action of the request's route (from its S3 operation name). */
const char *bucket_access_iam_action(const struct s3_req *r);
/* The ACL permission that route's operation needs on the bucket (0: none
 * gives it). */
unsigned bucket_access_acl_need(const struct s3_req *r);
/* The object ACL permission that grants the route's operation (0: none). */
unsigned bucket_access_object_acl_need(const struct s3_req *r);
/*
 * Whether bucket 'target' lets server access log delivery for bucket
 * 'source_bucket' write object 'key' (a TargetPrefix when checking a
 * configuration), as AWS requires: its policy allows Service
 * logging.s3.amazonaws.com s3:PutObject there (aws:SourceArn and
 * aws:SourceAccount conditions answered) and denies nothing, or, with ACLs
 * on, its ACL grants the LogDelivery group WRITE. No configuration: false.
 */
bool bucket_access_allows_log_delivery(struct bucket_access_cache *c,
                                       const struct index_bucket *target, struct slice key,
                                       struct slice source_bucket);

#endif
