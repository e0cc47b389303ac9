/*
 * ops.h: the request handlers the route table points at (op_*.c,
 * admin*.c), and the helpers handlers share across those files. Each
 * handler runs authorized (router.c) and answers through req.h.
 */
#ifndef SHARD_SERVER_OPS_H
#define SHARD_SERVER_OPS_H

#include "common/common.h"
#include "server/errors.h"

#include <stdbool.h>
#include <stdint.h>

struct MHD_Response;
struct index_bucket;
struct index_member;
struct index_members;
struct index_object;
struct index_upload;
struct meta;
struct s3_req;
struct server;
struct storage_writer;

void op_list_buckets(struct s3_req *r);
/* GetObjectAttributes (op_attributes.c). */
void op_get_object_attributes(struct s3_req *r);
/* Bucket CORS (op_cors.c): Put/Get/DeleteBucketCors and the preflight
 * (OPTIONS, no authorization). */
void op_put_bucket_cors(struct s3_req *r);
void op_get_bucket_cors(struct s3_req *r);
void op_delete_bucket_cors(struct s3_req *r);
void op_cors_preflight(struct s3_req *r);
/* Adds the Access-Control-* and Vary headers the bucket's CORS rules give
 * the request's Origin (r->cors_origin, set) and method to 'resp'; nothing
 * when the bucket has no rules or none matches (op_cors.c). */
void cors_add_headers(struct s3_req *r, struct MHD_Response *resp);
void op_create_bucket(struct s3_req *r);
void op_head_bucket(struct s3_req *r);
void op_delete_bucket(struct s3_req *r);
void op_get_bucket_location(struct s3_req *r);
void op_list_objects(struct s3_req *r);
void op_delete_objects(struct s3_req *r);
void op_put_object(struct s3_req *r);
void op_get_object(struct s3_req *r);
void op_head_object(struct s3_req *r);
void op_delete_object(struct s3_req *r);
void op_copy_object(struct s3_req *r);
void op_admin(struct s3_req *r);
void op_list_object_versions(struct s3_req *r);
void op_get_bucket_acl(struct s3_req *r);
void op_put_bucket_acl(struct s3_req *r);
/* The user admin API under /_/admin/ (admin_users.c); 'what' is the path
 * after "/_/admin/". The caller authorized the request already. */
void admin_users_handle(struct s3_req *r, struct slice what);
void op_create_multipart(struct s3_req *r);
void op_upload_part(struct s3_req *r);
void op_complete_multipart(struct s3_req *r);
void op_abort_multipart(struct s3_req *r);
void op_list_parts(struct s3_req *r);
void op_list_uploads(struct s3_req *r);
void op_get_member(struct s3_req *r);
void op_head_member(struct s3_req *r);
void op_list_members(struct s3_req *r);

/* The conditional headers of a read (If-Match, If-None-Match,
 * If-Modified-Since, If-Unmodified-Since) against 'obj' (op_get.c):
 * S3_OK, S3_ERR_PRECONDITION_FAILED or S3_ERR_NOT_MODIFIED. */
enum s3_error s3_get_conditions(struct s3_req *r, const struct index_object *obj);
/* Applies the request's Range header to a body of 'size' bytes (op_get.c).
 * A satisfiable range sets '*first', '*len', '*status' (206) and writes its
 * Content-Range value into 'content_range' ('content_range_len' bytes);
 * no range or an ignored one leaves them as they are. Returns true, or
 * false after answering an unsatisfiable range: InvalidRange, with the
 * body's size in Content-Range, as AWS. */
bool s3_range_apply(struct s3_req *r, uint64_t size, uint64_t *first, uint64_t *len, int *status,
                    char *content_range, size_t content_range_len);
/* Makes the response body for bytes [first, first+len) of 'obj' (op_get.c):
 * one storage span goes out zero-copy (sendfile), several are streamed
 * through a storage reader; 'is_head' gives the length and no body. A body
 * read from storage keeps the request's pin (s3_req_pin), narrowed to
 * those bytes; otherwise the pin is dropped here. Returns NULL on failure
 * (the caller answers InternalError). */
struct MHD_Response *s3_body_response(struct s3_req *r, const struct index_object *obj,
                                      uint64_t first, uint64_t len, bool is_head);

/* Builds a tar member index from bytes fed as they stream in (op_member.c):
 * PutObject feeds its payload, so no second read is needed. */
struct member_builder;
/* Whether PutObject of 'r' builds a member index: a key ending in ".tar"
 * or Content-Type application/x-tar. */
bool member_put_is_tar(struct s3_req *r);
/* Starts a builder (caller frees with member_builder_destroy). */
struct member_builder *member_builder_create(void);
/* Feeds the next 'len' bytes of the object. Past a cap or on malformed
 * input the builder only remembers that the object is no readable tar. */
void member_builder_feed(struct member_builder *b, const void *data, size_t len);
/* Ends the input and fills '*out', whose arrays the builder keeps until
 * member_builder_destroy (no copy of a list that may be megabytes). */
void member_builder_finish(struct member_builder *b, struct index_members *out);
/* Frees the builder; NULL is a no-op. */
void member_builder_destroy(struct member_builder *b);
/* Looks up member 'name' of 'obj' (key 'key' in bucket 'bucket_id'), read
 * under a pin the caller holds, into '*out' (in 'a'). Without a member
 * index yet, builds and commits it first (reads storage and waits for a
 * commit: workers only); 'request_id' names the request in the log.
 * Returns 0, -EILSEQ (not a readable tar), -ENOENT (no such member),
 * -ENODATA (the object changed meanwhile) or another -errno (op_member.c). */
int member_find(struct server *srv, struct arena *a, uint64_t bucket_id, struct slice key,
                const struct index_object *obj, struct slice name, const char *request_id,
                struct index_member *out);

/* POST /bucket?batch: many objects, ranges or tar members answered as one
 * streamed tar (op_batch.c). */
void op_batch_get(struct s3_req *r);

void op_put_object_tagging(struct s3_req *r);
void op_get_object_tagging(struct s3_req *r);
void op_delete_object_tagging(struct s3_req *r);

/* x-amz-tagging (PutObject, CreateMultipartUpload): when the header is
 * present, its tags replace those in 'm' (a request's metadata). On a bad
 * header responds with AWS's error and returns false (op_tagging.c). */
bool s3_tagging_from_request(struct s3_req *r, struct meta *m);
/* CopyObject: x-amz-tagging-directive COPY (the default) keeps the tags in
 * 'm' (the source's, copied with its metadata); REPLACE takes those of
 * x-amz-tagging (none when absent). Responds and returns false on a bad
 * directive or header. */
bool s3_tagging_for_copy(struct s3_req *r, struct meta *m);
/* Adds x-amz-tagging-count to 'resp' when 'm' (an object's) holds tags. */
void s3_tagging_count_header(struct s3_req *r, struct MHD_Response *resp, const struct meta *m);

/* Checks the integrity of an XML body (r->xml_body) that S3 requires one
 * for: Content-MD5 or an x-amz-checksum-* header (or trailer) must be
 * present and match. Returns S3_OK, S3_ERR_MISSING_SECURITY_HEADER,
 * S3_ERR_INVALID_DIGEST or S3_ERR_BAD_DIGEST (op_delete.c). */
enum s3_error s3_check_body_digest(struct s3_req *r);
/* Begins a bucket request with a required-digest XML body: looks the
 * bucket up into '*bk' (s3_bucket_lookup), then checks the body with
 * s3_check_body_digest. Responds and returns false on either failure
 * (op_delete.c). */
bool s3_xml_body_begin(struct s3_req *r, struct index_bucket *bk);

/* Aborts every multipart upload in progress in bucket 'bucket_id' (as
 * AbortMultipartUpload, a page of up to 1,000 per commit), freeing their
 * parts; for DeleteBucket. Blocks (commits). Returns 0 or -errno. */
int s3_bucket_abort_uploads(struct s3_req *r, uint64_t bucket_id);

/* Resolves ?uploadId= (and ?partNumber= when 'part_number' is non-NULL)
 * for the request's bucket and key; on failure responds (NoSuchUpload,
 * InvalidArgument) and returns false. */
bool s3_multipart_lookup(struct s3_req *r, const struct index_bucket *bk,
                         struct index_upload *upload, uint32_t *part_number);
/* UploadPartCopy: copies x-amz-copy-source[-range] into part 'part_number'. */
void op_upload_part_copy(struct s3_req *r, const struct index_bucket *bk,
                         const struct index_upload *upload, uint32_t part_number);
/* Copies bytes [first, first+len) of 'src' into a new writer (finished).
 * Returns 0 or -errno; on error '*out' may hold a writer to destroy. */
int s3_copy_range(struct server *srv, const struct index_object *src, uint64_t first, uint64_t len,
                  struct storage_writer **out, uint8_t md5_out[16]);
/* Resolves x-amz-copy-source to a pinned, condition-checked source object;
 * on failure responds and returns false. */
bool s3_copy_source_lookup(struct s3_req *r, struct index_bucket *src_bk, struct slice *src_key,
                           struct index_object *src);

/* op_access.c: bucket policy, Public Access Block, Object Ownership */
void op_put_bucket_policy(struct s3_req *r);
void op_get_bucket_policy(struct s3_req *r);
void op_delete_bucket_policy(struct s3_req *r);
void op_get_bucket_policy_status(struct s3_req *r);
void op_put_public_access_block(struct s3_req *r);
void op_get_public_access_block(struct s3_req *r);
void op_delete_public_access_block(struct s3_req *r);
void op_put_bucket_ownership(struct s3_req *r);
void op_get_bucket_ownership(struct s3_req *r);
void op_delete_bucket_ownership(struct s3_req *r);
/* acl.c: object ACLs (the bucket's are op_get_bucket_acl/op_put_bucket_acl) */
void op_get_object_acl(struct s3_req *r);
void op_put_object_acl(struct s3_req *r);
/* op_post.c: POST Object (browser form uploads) */
void op_post_object(struct s3_req *r);

#endif
