/*
 * body.h: the request-body pipeline (body.c). http.c feeds it the raw
 * bytes MHD reads; it decodes aws-chunked framing, verifies chunk
 * signatures and the payload SHA-256 on the fly and hands the payload to
 * the handler's on_body, then calls on_end once the body is complete.
 */
#ifndef SHARD_SERVER_BODY_H
#define SHARD_SERVER_BODY_H

#include "server/req.h"

#include <stdbool.h>
#include <stddef.h>

/* Sets up payload decoding and verification from r->auth (after
 * authentication, before the handler runs). */
void body_start(struct s3_req *r);
/* Feeds 'len' raw body bytes off the wire. Errors are kept in
 * r->body_error (the rest of the body is then discarded and the error
 * answered at the end). Returns false when reading on is pointless (the
 * payload passed r->payload_max, which handlers may lower, or on_body's
 * error is final, r->is_body_error_final): the caller answers
 * r->body_error at once and closes the connection. */
bool body_feed(struct s3_req *r, const char *data, size_t len);
/* Hands 'len' decoded payload bytes that came out of band (RDMA, rdma.c)
 * to the handler's on_body, counted and capped like bytes off the wire.
 * Errors are kept in r->body_error. */
void body_deliver(struct s3_req *r, const char *data, size_t len);
/* The body is complete: checks framing and payload hash, then runs
 * r->on_end, or responds with the body error. Always responds, unless
 * on_end handed the answer to another thread (r->is_end_handed_off): then
 * 'r' is that thread's once the call returns. */
void body_finish(struct s3_req *r);

/* Expects an XML body of at most 'max' bytes (accumulated in
 * r->xml_body), then calls 'end'. */
void s3_req_expect_xml(struct s3_req *r, size_t max, s3_end_fn end);

#endif
