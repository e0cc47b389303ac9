/*
 * versioning.h: bucket versioning and Object Lock at the S3 level
 * (versioning.c): version ids on the wire, the versionId of reads and
 * deletes, the x-amz-version-id / x-amz-delete-marker / x-amz-object-lock-*
 * headers, and the handlers of the versioning, object-lock, retention and
 * legal-hold sub-resources. index/ keeps the versions (index/version.c).
 */
#ifndef SHARD_SERVER_VERSIONING_H
#define SHARD_SERVER_VERSIONING_H

#include "common/common.h"
#include "index/index.h"
#include "server/errors.h"

#include <stdbool.h>
#include <stdint.h>

struct MHD_Response;
struct s3_req;

/* Length of a version id on the wire: 32 lower-case hex chars (or "null"). */
#define S3_VERSION_ID_MAX 32

/* Parses a version id: "null" gives all zero bytes, 32 lower-case hex
 * chars their 16 bytes. Returns false for anything else. */
bool s3_version_id_parse(struct slice s, uint8_t out[INDEX_VERSION_ID_LEN]);
/* Formats the id of a version with flags 'flags' ("null" for a null
 * version) into 'out' (S3_VERSION_ID_MAX + 1 bytes). */
void s3_version_id_format(uint32_t flags, const uint8_t *id, char *out);

/* Reads ?versionId= into '*has' and 'vid'. Responds 400 InvalidArgument
 * and returns false when it is malformed. */
bool s3_req_version_id(struct s3_req *r, bool *has, uint8_t vid[INDEX_VERSION_ID_LEN]);

/* Finds the version a read of the request's key names (?versionId=, or
 * the latest) into '*obj' (the request's arena). Responds and returns
 * false when there is none: NoSuchKey, NoSuchVersion, 404 with
 * x-amz-delete-marker when the latest is a delete marker, 405
 * MethodNotAllowed when the id names one, InvalidArgument. */
bool s3_object_lookup(struct s3_req *r, const struct index_bucket *bk, struct index_object *obj);

/* Adds x-amz-version-id (versioned buckets) and the x-amz-object-lock-*
 * headers of version 'o' to a read's response. */
void s3_version_headers(struct s3_req *r, struct MHD_Response *resp, const struct index_object *o);
/* Adds x-amz-version-id (and x-amz-delete-marker) for the version a
 * committed op made or removed ('flags', 'id' from the op's results). */
void s3_version_result_headers(struct s3_req *r, struct MHD_Response *resp, uint32_t flags,
                               const uint8_t *id);

/* Sets the Object Lock fields of 'obj', about to be written to bucket
 * 'bk' at 'now_ns', from the x-amz-object-lock-* headers or the bucket's
 * default retention. 'needs_digest': a PUT whose body must carry
 * Content-MD5 or a checksum when a lock applies. Returns S3_OK or the
 * error to answer, with '*msg' (may be NULL). */
enum s3_error s3_lock_for_write(struct s3_req *r, const struct index_bucket *bk,
                                struct index_object *obj, int64_t now_ns, bool needs_digest,
                                const char **msg);
/* True when the request asks to bypass GOVERNANCE retention and the
 * caller may (the bucket's owner or an admin grant). */
bool s3_bypass_governance(struct s3_req *r);

void op_put_bucket_versioning(struct s3_req *r);
void op_get_bucket_versioning(struct s3_req *r);
void op_put_object_lock_config(struct s3_req *r);
void op_get_object_lock_config(struct s3_req *r);
void op_put_object_retention(struct s3_req *r);
void op_get_object_retention(struct s3_req *r);
void op_put_object_legal_hold(struct s3_req *r);
void op_get_object_legal_hold(struct s3_req *r);

#endif
