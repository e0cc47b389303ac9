/*
 * rdma.h: the server's side of the RDMA fast path (rdma.c). A GetObject,
 * PutObject or UploadPart that carries a signed x-amz-rdma-token moves its
 * bytes one-sided through transport/ instead of the HTTP body; everything
 * else (auth, conditions, ranges, digests, commit) is the HTTP path's.
 */
#ifndef SHARD_SERVER_RDMA_H
#define SHARD_SERVER_RDMA_H

#include "common/common.h"
#include "server/errors.h"

#include <stdbool.h>
#include <stdint.h>

struct buf;
struct config;
struct index_object;
struct MHD_Response;
struct rdma_server;
struct s3_req;
struct storage;

/* Opens the transport when cfg->rdma is on ('*out' stays NULL when off).
 * Returns 0, or -errno when configured on and the provider cannot open
 * (the server then starts without it and declines every token: logged). */
int rdma_server_open(const struct config *cfg, struct storage *st, struct rdma_server **out);
/* Closes; no request may be in flight. NULL is a no-op. */
void rdma_server_close(struct rdma_server *rs);
/* Appends the shardstore_rdma_* metrics to 'b'; NULL adds zeros. */
void rdma_server_metrics(struct rdma_server *rs, struct buf *b);

/* Looks at the request's x-amz-rdma-token. Returns true to go on: with no
 * token, or with it accepted (r->rdma set). Otherwise it answered: 501
 * with x-amz-rdma-reply: 501 (RDMA off, another provider or version: the
 * client repeats over HTTP), 403 (the request is not signed), 400 (a
 * malformed or replayed token, a body sent as well). */
bool s3_rdma_begin(struct s3_req *r);
/* The byte count of the accepted token. */
uint64_t s3_rdma_len(const struct s3_req *r);
/* Declines the request's token ('why' in the message): 501 NotImplemented
 * with x-amz-rdma-reply: 501, so the client repeats it over HTTP. */
void s3_rdma_decline(struct s3_req *r, const char *why);
/* GetObject: writes bytes [first, first+len) of 'obj' into the client's
 * buffer (under the request's pin) and returns the body-less response the
 * caller adds the object's headers to, with x-amz-rdma-reply 'status'. On
 * failure it answered (400 when the token's length is not 'len', 501
 * after a transport failure) and returns NULL. Runs on a worker. */
struct MHD_Response *s3_rdma_get(struct s3_req *r, const struct index_object *obj, uint64_t first,
                                 uint64_t len, int status);
/* PutObject, UploadPart: reads the token's bytes from the client's buffer
 * and hands them to the request's body pipeline (body_deliver), as if
 * they had come in the HTTP body. Returns S3_OK or the error to answer
 * (after a transport failure NotImplemented, with x-amz-rdma-reply 501).
 * Runs on a worker (the end step). */
enum s3_error s3_rdma_pull(struct s3_req *r);

#endif
