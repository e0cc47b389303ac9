/*
 * body.c: the request-body pipeline. Raw bytes from http.c are counted,
 * hashed when the payload SHA-256 is signed, de-framed when aws-chunked
 * (chunk signatures verified on the fly) and handed to the handler's
 * on_body. After the first error the rest of the body is discarded and,
 * once it is in, that error is the response; otherwise on_end responds.
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "server/body.h"
#include "server/errors.h"
#include "server/rdma.h"
#include "server/req.h"
#include "server/server.h"

#include <stdatomic.h>

/* ======================================================================
 * XML bodies
 * ====================================================================== */

static enum s3_error
xml_body_chunk(struct s3_req *r, const char *data, size_t len)
{
    if (r->xml_body.len + len > r->xml_body_max)
        return S3_ERR_MALFORMED_XML;
    buf_append(&r->xml_body, data, len);
    return S3_OK;
}

void
s3_req_expect_xml(struct s3_req *r, size_t max, s3_end_fn end)
{
    r->xml_body_max = max;
    r->on_body = xml_body_chunk;
    r->on_end = end;
}
/* ======================================================================
 * Body pipeline
 * ====================================================================== */

static int
deliver_payload(void *ctx, const char *data, size_t len)
{
    struct s3_req *r = ctx;
    r->payload_len += len;
    if (r->body_error)
        return 0;
    if (r->payload_len > r->payload_max) {
        r->body_error = S3_ERR_ENTITY_TOO_LARGE;
        return 0;
    }
    if (r->on_body) {
        enum s3_error e = r->on_body(r, data, len);
        if (e != S3_OK)
            r->body_error = e;
    }
    return 0;
}

void
body_deliver(struct s3_req *r, const char *data, size_t len)
{
    deliver_payload(r, data, len);
}

void
body_start(struct s3_req *r)
{
    r->has_body_started = true;
    r->payload_max = UINT64_MAX;
    switch (r->auth.payload) {
    case AUTH_PAYLOAD_HASH:
        r->verify_payload_sha = true;
        auth_checksum_init(&r->payload_sha, AUTH_CK_SHA256);
        break;
    case AUTH_PAYLOAD_STREAMING_SIGNED:
    case AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER:
    case AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER:
        r->is_chunked_payload = true;
        auth_chunked_init(&r->chunked, &r->auth);
        break;
    case AUTH_PAYLOAD_UNSIGNED:
        break;
    }
}

static void
feed_raw(struct s3_req *r, const char *data, size_t len)
{
    r->body_received += len;
    atomic_fetch_add(&r->srv->metrics.bytes_in, len);
    atomic_fetch_add(&r->srv->metrics.body_pieces, 1);
    if (r->body_error == S3_ERR_INCOMPLETE_BODY || r->body_error == S3_ERR_SIGNATURE_DOES_NOT_MATCH)
        return; /* framing lost: discard */
    if (r->verify_payload_sha)
        auth_checksum_update(&r->payload_sha, data, len);
    if (!r->is_chunked_payload) {
        deliver_payload(r, data, len);
        return;
    }
    size_t consumed = 0;
    enum auth_chunked_status st =
        auth_chunked_feed(&r->chunked, data, len, &consumed, deliver_payload, r);
    if (st == AUTH_CHUNKED_ERROR)
        r->body_error = S3_ERR_INCOMPLETE_BODY;
    else if (st == AUTH_CHUNKED_BAD_SIGNATURE)
        r->body_error = S3_ERR_SIGNATURE_DOES_NOT_MATCH;
    else if (st == AUTH_CHUNKED_DONE && consumed < len)
        r->body_error = S3_ERR_INCOMPLETE_BODY; /* bytes after the final chunk */
}

bool
body_feed(struct s3_req *r, const char *data, size_t len)
{
    feed_raw(r, data, len);
    /* Past the route's limit, or after an error the handler calls final,
     * nothing more is worth reading. */
    return r->body_error != S3_ERR_ENTITY_TOO_LARGE && !(r->body_error && r->is_body_error_final);
}

void
body_finish(struct s3_req *r)
{
    if (!r->body_error && r->is_chunked_payload) {
        size_t consumed = 0;
        enum auth_chunked_status st =
            auth_chunked_feed(&r->chunked, "", 0, &consumed, deliver_payload, r);
        if (st != AUTH_CHUNKED_DONE && !auth_chunked_is_complete_at_eof(&r->chunked))
            r->body_error = S3_ERR_INCOMPLETE_BODY;
    }
    if (r->verify_payload_sha) {
        uint8_t got[AUTH_CK_MAX_DIGEST];
        auth_checksum_final(&r->payload_sha, got);
        r->verify_payload_sha = false;
        if (!r->body_error && !auth_equal_ct(got, r->auth.payload_sha256, 32))
            r->body_error = S3_ERR_CONTENT_SHA256_MISMATCH;
    }
    /* An RDMA body (rdma.c) enters here, once the HTTP framing is checked,
     * through the same deliver_payload as bytes off the wire. */
    if (!r->body_error && r->rdma && r->on_body)
        r->body_error = s3_rdma_pull(r);
    if (r->body_error) {
        s3_respond_error(r, r->body_error, NULL);
        return;
    }
    if (r->on_end)
        r->on_end(r);
    /* Handed off, the answer comes from another thread, which may be
     * writing r now: only the flag this thread set may be read. */
    if (!r->is_end_handed_off && !r->is_responded)
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
}
