/*
 * acl.h: S3 access control lists (acl.c): canned x-amz-acl, x-amz-grant-*
 * headers and AccessControlPolicy bodies turned into struct acl (of
 * bucket_access.h), their XML form, the object ACL kept in an object's
 * metadata, and the checks Object Ownership and Public Access Block put on
 * every request that sets an ACL.
 */
#ifndef SHARD_SERVER_ACL_H
#define SHARD_SERVER_ACL_H

#include "common/common.h"
#include "server/bucket_access.h"

#include <stdbool.h>

struct index_bucket;
struct meta;
struct s3_req;

/* The metadata entry that holds an object's owner id and ACL: the owner
 * id on the first line, then acl_format's lines. Absent: owned by the
 * bucket owner, no grants. */
#define META_ACL "x-shard-acl"

/*
 * Reads the ACL headers of an object write (x-amz-acl or x-amz-grant-*)
 * and, when there are any, stores the object's ACL (owner: the writer) in
 * 'm' under META_ACL, even one granting nobody (x-amz-acl: private), which
 * then keeps the bucket's public-read flag from serving the object;
 * without them any META_ACL 'm' had (a copy's source) is dropped. Enforces Object Ownership and
 * BlockPublicAcls. Responds with the error and returns false when the headers are refused.
 */
bool s3_acl_from_request(struct s3_req *r, struct meta *m);
/*
 * What the ACL of object 'key' in the request's bucket says about the
 * principal having all of 'need' (ACL_* bits). Reads the object's record.
 * Returns 1 (allowed: granted, or the principal wrote the object), 0 (the
 * object has an ACL of its own that does not grant it) or -1 (no ACL of
 * its own: the object is missing, was written without one, or ACLs are
 * off with BucketOwnerEnforced).
 */
int s3_object_acl_decide(struct s3_req *r, struct slice key, unsigned need);
/* s3_object_acl_decide(r, key, need) > 0. */
bool s3_object_acl_allows(struct s3_req *r, struct slice key, unsigned need);
/* CreateBucket, before the bucket exists: validates the ACL headers (and
 * that BucketOwnerEnforced, x-amz-object-ownership, comes with no ACL).
 * Responds and returns false when they are refused. */
bool s3_bucket_acl_check_create(struct s3_req *r);
/* CreateBucket, once bucket 'bk' exists: stores the ACL of its headers.
 * Responds and returns false on failure. */
bool s3_bucket_acl_after_create(struct s3_req *r, const struct index_bucket *bk);
/* Turns bucket 'name's public-read on or off (the admin API): its ACL's
 * AllUsers READ grant and its public-read flag together. Returns 0,
 * -ENOENT or -errno. */
int s3_bucket_public_set(struct s3_req *r, struct slice name, bool is_on);

#endif
