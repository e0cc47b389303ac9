/*
 * access.h: authentication and authorization of requests (access.c):
 * SigV4 (or SigV2 presigned) against the root key and the users' keys,
 * then the policy decision for the route's action on the bucket.
 */
#ifndef SHARD_SERVER_ACCESS_H
#define SHARD_SERVER_ACCESS_H

#include "auth/auth.h"
#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>

struct index_bucket;
struct s3_req;

/*
 * The secret lookup auth/ calls (an auth_secret_fn): root's key first, then
 * the index. Fills the request's principal as a side effect ('ctx' is the
 * request). Returns 0 with the secret in 'secret', or -1 (unknown key, its
 * user is gone, or its sealed secret does not open). POST Object forms
 * verify through it too.
 */
int s3_lookup_secret(void *ctx, struct slice access_key, char *secret, size_t cap);
/* Verifies the request's SigV4 (or SigV2 presigned URL) against the root
 * key and the users' keys in the index, and fills r->principal; on failure
 * (an unsigned request included) responds with the S3 error and returns false. */
bool s3_authenticate(struct s3_req *r);
/* The same, but an unsigned request passes as the anonymous principal
 * (the policy then decides). */
bool s3_authenticate_or_anonymous(struct s3_req *r);
/* Makes the request anonymous without looking at any signature (the CORS
 * preflight, which browsers never sign). */
void s3_as_anonymous(struct s3_req *r);
/* Asks the policy whether the request's principal may do 'action' on the
 * request's bucket (looked up once and kept in r->bucket_rec) with object
 * key (or listing prefix) 'key'. Does not respond. */
bool s3_is_allowed(struct s3_req *r, enum auth_action action, struct slice key);
/* s3_is_allowed, answering AccessDenied when it says no. */
bool s3_authorize(struct s3_req *r, enum auth_action action, struct slice key);
/* The same decision for another bucket 'bk' than the request's (the
 * source of a copy); answers AccessDenied when it says no. */
bool s3_authorize_bucket(struct s3_req *r, const struct index_bucket *bk, enum auth_action action,
                         struct slice key);
/* Writes the owner's display name of user id 'owner' ("" or root's id:
 * "root"; a removed user: its id) into 'out' (>= INDEX_USER_NAME_MAX + 1). */
void s3_owner_name(struct s3_req *r, const char *owner, char *out, size_t cap);
/* The canonical user id that owns 'bk' (root's id for old buckets). */
const char *s3_bucket_owner_id(struct s3_req *r, const struct index_bucket *bk);
/* Looks up the request's bucket; on failure responds (NoSuchBucket) and
 * returns false. When the bucket is not the one the route was authorized
 * against (created or re-created meanwhile), authorizes again. */
bool s3_bucket_lookup(struct s3_req *r, struct index_bucket *out);

#endif
