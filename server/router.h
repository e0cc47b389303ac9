/*
 * router.h: from a parsed request to its handler (router.c): addressing
 * (path- or virtual-hosted-style), the route table, and the authorization
 * every route needs before its handler runs.
 */
#ifndef SHARD_SERVER_ROUTER_H
#define SHARD_SERVER_ROUTER_H

#include "server/req.h"

#include <stdbool.h>

/* Resolves r->bucket and r->key from the Host header and the path.
 * Returns false when the path is malformed (does not respond). */
bool router_resolve_address(struct s3_req *r);
/* Chooses the route of an authenticated (or anonymous) request, authorizes
 * it and runs its handler; responds with the error when there is none. */
void router_route(struct s3_req *r);

#endif
