/*
 * req.c: the request object's accessors (headers, query parameters) and
 * its responses. One response per request: the first s3_respond* wins and
 * later ones are dropped. A response is queued at once, or deferred to
 * MHD's next callback when queuing now would close a keep-alive connection
 * or when a worker (not the event thread) produced it.
 */
#include "config.h"

#include "common/common.h"
#include "server/errors.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/xml_out.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdio.h>

/* ======================================================================
 * Responses
 * ====================================================================== */

void
s3_resp_header(struct MHD_Response *resp, const char *name, const char *value)
{
    /* MHD refuses an empty value; a lone space is the same empty field
     * value on the wire (RFC 9110 5.5: surrounding whitespace is not part
     * of it), so an empty x-amz-meta-* comes back empty. */
    MHD_add_response_header(resp, name, value[0] ? value : " ");
}

void
s3_respond(struct s3_req *r, int status, struct MHD_Response *resp)
{
    if (r->is_responded) {
        MHD_destroy_response(resp);
        return;
    }
    if (r->cors_origin.ptr)
        cors_add_headers(r, resp);
    MHD_add_response_header(resp, "x-amz-request-id", r->request_id);
    MHD_add_response_header(resp, "x-amz-id-2", r->request_id);
    MHD_add_response_header(resp, "Server", "shardstore");
    if (r->must_close)
        MHD_add_response_header(resp, "Connection", "close");
    if (r->rdma_reply && (status < 300 || r->rdma_reply == 501)) {
        char reply[12];
        snprintf(reply, sizeof(reply), "%d", r->rdma_reply);
        MHD_add_response_header(resp, "x-amz-rdma-reply", reply);
    }
    r->is_responded = true;
    r->status = status;
    r->respond_ns = clock_mono_ns();
    /* MHD closes the connection when a response is queued before the
     * request is fully read. Without a body the request is complete after
     * the headers, so wait for MHD's next callback and keep the connection
     * alive; with a body (an early error), queue now and let it close
     * rather than read a body nobody wants. A worker (is_offloaded) never
     * queues: the event thread does, once the connection is resumed. */
    if ((r->is_first_call && !r->has_request_body) || r->is_offloaded) {
        r->deferred_resp = resp;
    } else {
        if (MHD_queue_response(r->conn, (unsigned int)status, resp) != MHD_YES)
            log_warn("request %s: could not queue response %d", r->request_id, status);
        MHD_destroy_response(resp);
    }
    if (status >= 500)
        atomic_fetch_add(&r->srv->metrics.errors_5xx, 1);
    else if (status >= 400)
        atomic_fetch_add(&r->srv->metrics.errors_4xx, 1);
}

void
s3_respond_body(struct s3_req *r, int status, const char *content_type, const char *body,
                size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (content_type)
        MHD_add_response_header(resp, "Content-Type", content_type);
    if (!r->is_responded)
        r->resp_bytes = len;
    s3_respond(r, status, resp);
}

void
s3_respond_buf(struct s3_req *r, int status, const char *content_type, struct buf *b)
{
    if (b->ptr == NULL) {
        s3_respond_body(r, status, content_type, "", 0);
        return;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b->len, b->ptr, MHD_RESPMEM_MUST_FREE);
    if (content_type)
        MHD_add_response_header(resp, "Content-Type", content_type);
    if (!r->is_responded)
        r->resp_bytes = b->len;
    buf_init(b);
    s3_respond(r, status, resp);
}

void
s3_respond_empty(struct s3_req *r, int status)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    s3_respond(r, status, resp);
}

void
s3_respond_error(struct s3_req *r, enum s3_error e, const char *message)
{
    int status = s3_error_status(e);
    if (!r->is_responded)
        r->error = e;
    if (status == 304) {
        s3_respond_empty(r, status);
        return;
    }
    log_debug("request %s: %.*s %.*s -> %d %s", r->request_id, (int)r->method.len, r->method.ptr,
              (int)r->raw_path.len, r->raw_path.ptr, status, s3_error_code(e));
    s3_respond(r, status, s3_error_response(r, e, message));
}

/* ======================================================================
 * Request accessors
 * ====================================================================== */

struct slice
s3_req_header(const struct s3_req *r, const char *name)
{
    for (size_t i = 0; i < r->n_headers; i++)
        if (slice_eq_nocase(r->headers[i].name, name))
            return r->headers[i].value;
    return SLICE_NULL;
}

bool
s3_req_has_header(const struct s3_req *r, const char *name)
{
    for (size_t i = 0; i < r->n_headers; i++)
        if (slice_eq_nocase(r->headers[i].name, name))
            return true;
    return false;
}

const struct s3_param *
s3_req_param(const struct s3_req *r, const char *name)
{
    for (size_t i = 0; i < r->n_params; i++)
        if (slice_eq(r->params[i].name, slice_from_cstr(name)))
            return &r->params[i];
    return NULL;
}

struct slice
s3_req_param_value(const struct s3_req *r, const char *name)
{
    const struct s3_param *p = s3_req_param(r, name);
    return p ? p->value : SLICE_NULL;
}
