/*
 * router.h: from a parsed request to its handler (router.c): addressing
 * (path- or virtual-hosted-style), the route table, and the authorization
 * every route needs before its handler runs.
 */
#ifndef SHARD_SERVER_ROUTER_H
#define SHARD_SERVER_ROUTER_H

#include "server/req.h"

#include <stdbool.h>

/* What a route's steps do; http.c decides from these alone, before the
 * handler runs, whether a body may follow and where each step runs. */
enum route_flags {
    /* The route takes a request body; a body sent to any other route is
     * refused (UnexpectedContent) before authentication. */
    ROUTE_BODY = 1,
    /* The handler itself may block (commit, fdatasync, a copy, a scan):
     * it runs on a worker. Never with ROUTE_BODY. */
    ROUTE_BLOCKS = 2,
    /* The end step (on_end, once the body is in) may block: it runs on a
     * worker. */
    ROUTE_END_BLOCKS = 4,
    /* Anyone may call the route: no authorization and no refused
     * headers (the CORS preflight, which browsers send unsigned). */
    ROUTE_NO_AUTHZ = 8,
};

/* Resolves the address and chooses the route of 'r' from its request
 * line and headers (no I/O, before authentication): sets r->route (NULL
 * when none matches), r->route_flags and r->is_admin (paths under /_/,
 * handled by op_admin). Returns false after answering a malformed path. */
bool router_prepare(struct s3_req *r);
/* Runs the route chosen by router_prepare for an authenticated (or
 * anonymous) request: checks the names, authorizes the route's action and
 * runs its handler; answers the error when no route matched. */
void router_route(struct s3_req *r);

#endif
