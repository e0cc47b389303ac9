/*
 * unsupported.h: refusing request headers that ask for a feature the
 * server does not have (server/unsupported.c holds the one table).
 */
#ifndef SHARD_SERVER_UNSUPPORTED_H
#define SHARD_SERVER_UNSUPPORTED_H

#include <stdbool.h>

struct s3_req;

/*
 * Checks the request's headers against the table of features the server
 * does not implement (server-side encryption, SSE-C, object lock, grants,
 * object ACLs it cannot honour, website redirects). Call once per
 * request, after authorization and before the handler: the canned-ACL
 * check reads the bucket facts authorization loaded. Returns true when it
 * refused the request (501 NotImplemented naming the header, already
 * queued); false when the handler may run.
 */
bool s3_refuse_unsupported(struct s3_req *r);

#endif
