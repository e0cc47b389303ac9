/*
 * http.c: libmicrohttpd glue. The only file that drives MHD's request
 * lifecycle:
 *
 *   URI log callback   -> struct s3_req created in its own arena (raw URI kept
 *                         for SigV4, which needs it as sent)
 *   first access call  -> headers and query collected, framing checked; then
 *                         addressing resolved and the route chosen
 *                         (router.c), SigV4 verified; the handler either
 *                         responds at once or installs on_body/on_end
 *   body calls         -> raw bytes handed to the body pipeline (body.c),
 *                         which decodes, verifies and passes them to on_body;
 *                         after an error the rest of the body is discarded
 *   final call         -> payload checks, then on_end responds (body.c)
 *   completion         -> on_cleanup, reader unpin, metrics, access and
 *                         audit lines (access_log.c), arena destroyed
 *
 * Connections run on a few event-loop threads (MHD's poll loop, one more
 * than the cores by default). A step that may block (commits, fdatasync, copies,
 * scrub) is not run there; the route table (router.c) says which: the
 * handler of a route without body (DELETE, CopyObject, multipart create and
 * abort, scrub, ...) or the end step of a route with one (PUT, complete
 * multipart, ...), never whether a body came. A body sent to a route that
 * takes none is refused. For a blocking step the connection is suspended,
 * the step runs on a worker of offload.c, which leaves its response in
 * r->deferred_resp and resumes the connection; MHD then calls on_access
 * again, which queues it (req.c). A PUT's end step hands its commit to the
 * committer, whose callback answers and resumes instead; whoever of the two
 * lets go last resumes (http_step_hold/release). Only /_/health runs before
 * authentication.
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "server/access.h"
#include "server/access_log.h"
#include "server/body.h"
#include "server/bucket_access.h"
#include "server/commit.h"
#include "server/error_ring.h"
#include "server/errors.h"
#include "server/http.h"
#include "server/listener.h"
#include "server/metrics.h"
#include "server/offload.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/bucket_log.h"
#include "server/router.h"
#include "server/server.h"
#include "server/tls.h"
#include "server/util.h"
#include "server/xml_out.h"
#include "storage/storage.h"
#include "server/guard.h"
#include "server/hasher.h"

#include <assert.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* S3 rejects header sections over 8 KiB; allow some slack for long
 * presigned-style headers and proxies, and refuse the rest. */
#define SERVER_MAX_HEADER_BYTES (16 * 1024)

/* Connection threads run shallow call chains (no recursion; big buffers
 * come from the heap). Sanitizer builds need far more stack. */
#if defined(__SANITIZE_ADDRESS__)
#define SERVER_THREAD_STACK ((size_t)0) /* the default (8 MiB) */
#else
#define SERVER_THREAD_STACK ((size_t)(512 * 1024))
#endif

/* Seconds past shutdown_grace after which a stop still blocked (a stuck
 * disk, a deadlock) ends the process anyway. */
#define HTTP_STOP_MARGIN_S 5

/* ======================================================================
 * Parsing the request line and headers
 * ====================================================================== */

struct header_collect {
    struct s3_req *r;
    size_t cap;
};

static enum MHD_Result
collect_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_len,
               const char *value, size_t value_len)
{
    (void)kind;
    struct header_collect *hc = cls;
    struct s3_req *r = hc->r;
    if (r->n_headers == hc->cap)
        return MHD_NO;
    struct auth_header *h = &r->headers[r->n_headers++];
    h->name = (struct slice){key, key_len};
    h->value = (struct slice){value ? value : "", value ? value_len : 0};
    return MHD_YES;
}

/* Splits the raw query into decoded parameters. Returns false when a name
 * or value holds a malformed %-escape: the request is then refused, never
 * read without that parameter (the signature covered it as sent). */
static bool
parse_query(struct s3_req *r)
{
    struct slice q = r->raw_query;
    size_t n = 1;
    for (size_t i = 0; i < q.len; i++)
        if (q.ptr[i] == '&')
            n++;
    r->params = arena_calloc(r->arena, n, sizeof(*r->params));
    r->n_params = 0;
    size_t i = 0;
    while (i < q.len) {
        size_t j = i;
        while (j < q.len && q.ptr[j] != '&')
            j++;
        if (j > i) {
            struct slice part = {q.ptr + i, j - i};
            const char *eq = memchr(part.ptr, '=', part.len);
            struct s3_param *p = &r->params[r->n_params];
            struct slice name = part;
            struct slice value = SLICE_NULL;
            if (eq) {
                name.len = (size_t)(eq - part.ptr);
                value = (struct slice){eq + 1, part.len - name.len - 1};
                p->has_value = true;
            }
            if (!s3_uri_decode(r->arena, name, &p->name) ||
                !s3_uri_decode(r->arena, value, &p->value))
                return false;
            r->n_params++;
        }
        i = j + 1;
    }
    return true;
}

/* ======================================================================
 * MHD callbacks
 * ====================================================================== */

static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct server *srv = cls;
    struct arena *a = arena_create(16384);
    struct s3_req *r = arena_calloc(a, 1, sizeof(*r));
    r->arena = a;
    r->srv = srv;
    r->conn = conn;
    r->start_ns = clock_mono_ns();
    r->id = atomic_fetch_add(&srv->request_seq, 1) + 1;
    /* 8 hex digits of the second, 8 of the sequence number. */
    uint64_t v =
        ((uint64_t)(clock_now_ns() / 1000000000) & 0xffffffffu) << 32 | (r->id & 0xffffffffu);
    for (int i = 15; i >= 0; i--, v >>= 4)
        r->request_id[i] = hex_digits_upper[v & 15];
    r->request_id[16] = '\0';
    size_t len = strlen(uri);
    r->raw_uri = (struct slice){arena_strndup(a, uri, len), len};
    const char *q = memchr(r->raw_uri.ptr, '?', len);
    if (q) {
        r->raw_path = (struct slice){r->raw_uri.ptr, (size_t)(q - r->raw_uri.ptr)};
        r->raw_query = (struct slice){q + 1, len - r->raw_path.len - 1};
    } else {
        r->raw_path = r->raw_uri;
    }
    buf_init(&r->xml_body);
    atomic_fetch_add(&srv->in_flight, 1);
    atomic_fetch_add(&srv->metrics.requests, 1);
    return r;
}

/* First half of the first call: collects the method, headers and query
 * and checks the framing. Returns false when it already responded. */
static bool
dispatch_parse(struct s3_req *r, const char *method)
{
    r->method = slice_from_cstr(arena_strndup(r->arena, method, strlen(method)));
    log_debug("begin %s %s %.*s", r->request_id, method, (int)r->raw_uri.len, r->raw_uri.ptr);
    int n = MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, NULL, NULL);
    struct header_collect hc = {r, n > 0 ? (size_t)n : 0};
    r->headers = arena_calloc(r->arena, hc.cap + 1, sizeof(*r->headers));
    MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, collect_header, &hc);
    bool is_query_valid = parse_query(r);
    size_t header_bytes = 0, n_cl = 0, n_te = 0;
    for (size_t i = 0; i < r->n_headers; i++) {
        header_bytes += r->headers[i].name.len + r->headers[i].value.len + 4;
        n_cl += slice_eq_nocase(r->headers[i].name, "content-length");
        n_te += slice_eq_nocase(r->headers[i].name, "transfer-encoding");
    }
    struct slice cl = s3_req_header(r, "content-length");
    uint64_t cl_value;
    r->has_request_body = n_te > 0 || (cl.ptr && !slice_eq(cl, SLICE_LIT("0")));
    /* Ambiguous framing is how requests get smuggled past a proxy: refuse
     * it and close the connection rather than guess where the body ends. */
    if (n_cl > 1 || (n_cl && n_te) || n_te > 1 ||
        (cl.ptr && parse_u64(cl, UINT64_MAX, &cl_value) != 0)) {
        r->has_request_body = true;
        r->must_close = true;
        s3_respond_error(r, S3_ERR_INVALID_REQUEST, "Ambiguous or invalid message framing");
        return false;
    }
    if (header_bytes > SERVER_MAX_HEADER_BYTES) {
        s3_respond_error(r, S3_ERR_REQUEST_HEADER_TOO_LARGE, NULL);
        return false;
    }
    if (!is_query_valid) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Malformed percent-encoding in the query");
        return false;
    }
    return true;
}

/* Second half: authentication and the route's handler (admin endpoints
 * authenticate themselves: health needs no signature). */
static void
dispatch_route(struct s3_req *r)
{
    if (r->is_admin) {
        op_admin(r);
        return;
    }
    /* A CORS preflight is never signed (a browser sends it with the URL of
     * the request it prepares, presigned query included): not verified. */
    if (r->route_flags & ROUTE_NO_AUTHZ)
        s3_as_anonymous(r);
    else if (!s3_authenticate_or_anonymous(r))
        return;
    body_start(r);
    router_route(r);
}

/* Whether the route's step 'flag' (ROUTE_BLOCKS: the handler,
 * ROUTE_END_BLOCKS: the end step) may block and so must run on a worker.
 * Decided by the route alone, never by whether a body came. */
static bool
is_blocking(const struct s3_req *r, unsigned flag)
{
    return r->srv->offload && (r->route_flags & flag);
}

void
http_step_hold(struct s3_req *r)
{
    assert(r->is_offloaded);
    atomic_fetch_add(&r->n_step_holds, 1);
}

void
http_step_release(struct s3_req *r)
{
    struct MHD_Connection *conn = r->conn;
    /* r may be gone as soon as the connection is resumed, and once another
     * holder saw the count drop, it may resume it at any moment. */
    if (atomic_fetch_sub(&r->n_step_holds, 1) == 1)
        MHD_resume_connection(conn);
}

static void
job_dispatch(void *arg)
{
    struct s3_req *r = arg;
    r->is_first_call = true;
    dispatch_route(r);
    r->is_first_call = false;
    http_step_release(r);
}

/* The end step; PutObject and UploadPart hand their commit to the
 * committer (op_put.c), whose callback then lets go of the connection. */
static void
job_finish(void *arg)
{
    struct s3_req *r = arg;
    body_finish(r);
    http_step_release(r);
}

/* Tells the guard where the request of 'conn' is (guard.c). */
static void
conn_phase(struct MHD_Connection *conn, enum guard_phase phase)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci)
        guard_conn_phase(ci->socket_context, phase);
}

/* Suspends the connection and runs 'fn' on a worker; the response it
 * leaves in r->deferred_resp is queued by the next on_access call. */
static void
offload_step(struct s3_req *r, void (*fn)(void *))
{
    r->is_offloaded = true;
    atomic_fetch_add(&r->srv->metrics.offloaded, 1);
    /* Suspended, the connection reads nothing: no upload rate applies. */
    conn_phase(r->conn, GUARD_PHASE_BUSY);
    r->job.fn = fn;
    r->job.arg = r;
    atomic_store(&r->n_step_holds, 1); /* the step's own, until it returns */
    MHD_suspend_connection(r->conn);
    offload_submit(r->srv->offload, &r->job);
}

/* Set by http_body_pause on this event thread during the current body_feed. */
static _Thread_local bool is_paused_in_feed;

void
http_body_pause(struct s3_req *r)
{
    is_paused_in_feed = true;
    /* Not reading, the connection is not slow: no upload rate applies. */
    conn_phase(r->conn, GUARD_PHASE_BUSY);
    MHD_suspend_connection(r->conn);
}

void
http_body_resume(struct s3_req *r)
{
    MHD_resume_connection(r->conn);
}

/* Answers 'e' in the middle of the body and has MHD close the connection
 * (the caller returns MHD_NO), so not one more body byte is read. MHD
 * (0.9.75) refuses to queue a response while it receives a body, so the
 * answer is written directly: to the socket, or under TLS as one more
 * record of the connection's session (tls.c; never plaintext into a TLS
 * stream). Nothing of this response was sent yet, and after a body MHD
 * sends nothing more before closing. The write end is shut down after it,
 * so the client reads the answer before the close. */
/* Whether 'conn' came through an HTTPS endpoint: asked of its daemon (with a
 * thread pool, one of the endpoint daemon's workers, which share its flags). */
static bool
conn_is_tls(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
    const union MHD_DaemonInfo *di =
        ci ? MHD_get_daemon_info(ci->daemon, MHD_DAEMON_INFO_FLAGS) : NULL;
    return di && (di->flags & MHD_USE_TLS);
}

bool
http_conn_is_tls(struct MHD_Connection *conn)
{
    return conn_is_tls(conn);
}

/* A TLS connection's socket and GnuTLS session (cork and uncork need both);
 * false for a plain connection. */
static bool
conn_tls_socket(struct MHD_Connection *conn, int *fd, void **session)
{
    const union MHD_ConnectionInfo *tls =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!tls || !tls->tls_session)
        return false;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return false;
    *fd = ci->connect_fd;
    *session = tls->tls_session;
    return true;
}

/* What a corked answer may take beyond its body: the header, and 22 bytes
 * of TLS 1.3 framing per 16 KiB record (the body's eighth covers it). */
#define HTTP_CORK_SLACK (4 * 1024)
/* How long an uncork waits for a full socket to take more (it should not:
 * the answer is corked only when the send buffer has room for it). */
#define HTTP_UNCORK_WAIT_MS 1000

/* Under TLS, MHD 0.9.75 hands GnuTLS one gnutls_record_send per connection
 * per event-loop turn after the first, and GnuTLS makes one 16 KiB record
 * per call: a 64 KiB answer took 3 turns (a poll wakeup each, and a
 * TCP_NODELAY setsockopt per pushed send). With the session corked, MHD's
 * sends only append to GnuTLS's buffer, so MHD takes the whole answer in
 * the turn it is queued and calls on_completed, which uncorks: the header
 * and body leave at once, as full records (the header inside the first).
 * Only an answer held in memory (r->tls_cork_len) is corked, and only when
 * the socket's send buffer has room for all of it, so the uncork never
 * waits for a slow client on the event thread. */
static void
cork_answer(struct s3_req *r)
{
    int fd;
    void *session;
    if (r->must_close || !conn_tls_socket(r->conn, &fd, &session))
        return;
    /* The kernel's own accounting (one call): the send buffer's size and
     * what its queue holds, buffers' overhead included. */
    uint32_t mem[SK_MEMINFO_VARS] = {0};
    socklen_t sl = sizeof(mem);
    if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &sl) != 0 ||
        sl < (socklen_t)(sizeof(uint32_t) * (SK_MEMINFO_WMEM_QUEUED + 1)))
        return;
    /* Twice the bytes: new data costs its buffers' overhead too. */
    uint64_t need = r->tls_cork_len + r->tls_cork_len / 8 + HTTP_CORK_SLACK;
    if ((uint64_t)mem[SK_MEMINFO_SNDBUF] < (uint64_t)mem[SK_MEMINFO_WMEM_QUEUED] + 2 * need)
        return;
    tls_session_cork(session);
    r->is_tls_corked = true;
}

/* on_completed of a corked answer: sends it. If the client does not take
 * it (or the request ended in an error), the connection is shut down: MHD
 * believes the answer sent and would wait for the next request. */
static void
uncork_answer(struct MHD_Connection *conn, struct s3_req *r, enum MHD_RequestTerminationCode toe)
{
    r->is_tls_corked = false;
    int fd;
    void *session;
    if (!conn_tls_socket(conn, &fd, &session))
        return;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK &&
        tls_session_uncork(session, fd, HTTP_UNCORK_WAIT_MS))
        return;
    log_debug("request %s: corked answer not sent whole; closing", r->request_id);
    shutdown(fd, SHUT_RDWR);
}

/* Appends a header line to 'head' (an MHD_KeyValueIterator). */
static enum MHD_Result
head_line(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    buf_printf(cls, "%s: %s\r\n", key, value);
    return MHD_YES;
}

/* The CORS headers of the request's answer (none without an Origin), as
 * s3_respond adds them to a response MHD sends, here for a header block
 * written by hand: a browser reads an error only with them. */
static void
cors_head_lines(struct s3_req *r, struct buf *head)
{
    if (!r->cors_origin.ptr)
        return;
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return;
    cors_add_headers(r, resp);
    MHD_get_response_headers(resp, head_line, head);
    MHD_destroy_response(resp);
}

static void
answer_and_close(struct s3_req *r, enum s3_error e)
{
    int status = s3_error_status(e);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct buf body, head;
    buf_init(&body);
    buf_init(&head);
    xml_error(&body, s3_error_code(e), r->body_error_msg ? r->body_error_msg : s3_error_message(e),
              r->raw_path, r->request_id);
    buf_printf(&head,
               "HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\nContent-Length: %zu\r\n"
               "x-amz-request-id: %s\r\nx-amz-id-2: %s\r\nServer: shardstore\r\n"
               "Connection: close\r\n",
               status, MHD_get_reason_phrase_for((unsigned int)status), body.len, r->request_id,
               r->request_id);
    cors_head_lines(r, &head);
    buf_append(&head, "\r\n", 2);
    buf_append(&head, body.ptr, body.len);
    log_debug("request %s: %.*s %.*s -> %d %s (connection closed)", r->request_id,
              (int)r->method.len, r->method.ptr, (int)r->raw_path.len, r->raw_path.ptr, status,
              s3_error_code(e));
    bool is_tls = conn_is_tls(r->conn);
    const union MHD_ConnectionInfo *tls =
        is_tls ? MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION) : NULL;
    if (ci && (!is_tls || tls)) {
        /* Best effort: the socket buffer of a connection that has only
         * received takes a small answer whole. */
        bool is_whole;
        if (tls)
            is_whole = tls_session_send(tls->tls_session, head.ptr, head.len);
        else
            is_whole = send(ci->connect_fd, head.ptr, head.len, MSG_NOSIGNAL | MSG_DONTWAIT) ==
                       (ssize_t)head.len;
        if (!is_whole)
            log_debug("request %s: answer not sent whole before closing", r->request_id);
        shutdown(ci->connect_fd, SHUT_WR);
    }
    r->resp_bytes = body.len;
    buf_cleanup(&head);
    buf_cleanup(&body);
    r->is_responded = true;
    r->status = status;
    r->error = e;
    r->respond_ns = clock_mono_ns();
    atomic_fetch_add(status >= 500 ? &r->srv->metrics.errors_5xx : &r->srv->metrics.errors_4xx, 1);
}

static enum MHD_Result
on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
          const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
    (void)cls;
    (void)url;
    (void)version;
    struct s3_req *r = *req_cls;
    if (!r)
        return MHD_NO;
    r->conn = conn;
    if (!r->method.ptr) {
        r->is_first_call = true;
        bool is_parsed = dispatch_parse(r, method);
        conn_phase(conn, r->has_request_body ? GUARD_PHASE_BODY : GUARD_PHASE_BUSY);
        if (is_parsed && router_prepare(r)) {
            if (r->has_request_body && !(r->route_flags & ROUTE_BODY)) {
                /* Refused, not discarded: nothing of it is read, and the
                 * connection closes after the answer. */
                r->must_close = true;
                s3_respond_error(r, S3_ERR_UNEXPECTED_CONTENT, NULL);
            } else if (is_blocking(r, ROUTE_BLOCKS)) {
                /* The worker owns r from submit on (and sets the flag again). */
                r->is_first_call = false;
                offload_step(r, job_dispatch);
                return MHD_YES;
            } else {
                dispatch_route(r);
            }
        }
        r->is_first_call = false;
        return MHD_YES;
    }
    if (r->deferred_resp) {
        struct MHD_Response *resp = r->deferred_resp;
        r->deferred_resp = NULL;
        *upload_data_size = 0;
        /* MHD sends only after this callback returns: corked from here. */
        if (MHD_queue_response(conn, (unsigned int)r->status, resp) != MHD_YES)
            log_warn("request %s: could not queue response %d", r->request_id, r->status);
        else if (r->tls_cork_len)
            cork_answer(r);
        MHD_destroy_response(resp);
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        conn_phase(conn, GUARD_PHASE_BODY); /* again after a suspension */
        is_paused_in_feed = false;
        if (!r->is_responded && !body_feed(r, upload_data, n)) {
            /* Suspended by this very call (its first bytes paused the
             * upload): closed at the next call, once resumed. */
            if (is_paused_in_feed)
                return MHD_YES;
            answer_and_close(r, r->body_error);
            return MHD_NO;
        }
        return MHD_YES;
    }
    conn_phase(conn, GUARD_PHASE_BUSY);
    if (!r->is_responded) {
        if (is_blocking(r, ROUTE_BLOCKS | ROUTE_END_BLOCKS))
            offload_step(r, job_finish);
        else
            body_finish(r);
    }
    return MHD_YES;
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
             enum MHD_RequestTerminationCode toe)
{
    struct server *srv = cls;
    struct s3_req *r = *req_cls;
    if (!r)
        return;
    *req_cls = NULL;
    if (r->is_tls_corked)
        uncork_answer(conn, r, toe);
    conn_phase(conn, GUARD_PHASE_IDLE);
    if (r->deferred_resp)
        MHD_destroy_response(r->deferred_resp);
    if (r->on_cleanup)
        r->on_cleanup(r);
    if (r->verify_payload_sha)
        auth_checksum_cleanup(&r->payload_sha);
    if (r->has_pin)
        s3_req_unpin(r);
    int64_t end_ns = clock_mono_ns();
    bool is_complete = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    metrics_request_done(r->op, r->status, r->respond_ns - r->start_ns, end_ns - r->start_ns,
                         r->body_received, r->resp_bytes);
    if (srv->cfg.access_log[0] && r->method.ptr)
        access_log_request(r, end_ns, is_complete);
    if (r->status >= 400 && r->method.ptr)
        error_ring_add(r);
    bucket_log_request(srv->bucket_log, r, end_ns);
    if (r->is_admin && r->method.ptr && !slice_eq(r->method, SLICE_LIT("GET")) &&
        !slice_eq(r->method, SLICE_LIT("HEAD")) && r->is_authenticated)
        access_log_audit(r);
    if (r->method.ptr)
        log_debug("access %s %.*s %.*s -> %d in %.3f ms%s", r->request_id, (int)r->method.len,
                  r->method.ptr, (int)r->raw_uri.len, r->raw_uri.ptr, r->status,
                  (double)(end_ns - r->start_ns) / 1e6, is_complete ? "" : " (terminated early)");
    buf_cleanup(&r->xml_body);
    bucket_access_release(r->access);
    atomic_fetch_sub(&srv->in_flight, 1);
    arena_destroy(r->arena);
}

/* MHD_OPTION_NOTIFY_CONNECTION: the guard follows each connection from
 * start to close; its handle is the socket context. */
static void
on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
              enum MHD_ConnectionNotificationCode code)
{
    struct server *srv = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? guard_conn_started(srv->guard, ci->connect_fd) : NULL;
    } else {
        guard_conn_closed(srv->guard, *socket_context);
        *socket_context = NULL;
    }
}

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_debug("mhd: %s", msg);
}

/* ======================================================================
 * Start and stop
 * ====================================================================== */

/* The listeners' callback: the guard admits the socket (per-address cap,
 * room at the limit), then the endpoint's MHD daemon takes it (and closes
 * it, also when it refuses it). */
static void
add_connection(void *ctx, int fd, const struct sockaddr *sa, socklen_t len)
{
    struct http_endpoint *ep = ctx;
    struct server *srv = ep->srv;
    if (!guard_admit(srv->guard, fd, sa, len)) {
        close(fd);
        return;
    }
    if (MHD_add_connection(ep->daemon, fd, sa, len) != MHD_YES) {
        guard_forget(srv->guard, fd);
        log_debug("connection refused (limit %u reached or out of memory)",
                  srv->cfg.connection_limit);
    }
}

/* Binds 'ep' to addr:port (port 0: a free one, written back). */
static int
endpoint_open(struct http_endpoint *ep, const char *addr, uint16_t *port)
{
    snprintf(ep->addr, sizeof(ep->addr), "%s", addr);
    int err = listener_open(addr, *port, 4096, &ep->listener, &ep->port);
    if (err < 0) {
        log_error("cannot listen on %s:%u: %s", addr, *port, strerror(-err));
        return -1;
    }
    *port = ep->port;
    return 0;
}

/* Starts the MHD daemon of 'ep': 'flags' plus TLS for an HTTPS endpoint.
 * Returns 0 or -1 (logged). */
static int
endpoint_start_daemon(struct server *srv, struct http_endpoint *ep, unsigned flags,
                      unsigned threads, size_t stack)
{
    /* The pool size goes in only when there is a pool: MHD warns about 0.
     * Under TLS, MHD asks tls.c for the certificate at every handshake (so
     * that SIGHUP can swap it) and runs the handshake of each added
     * connection itself. */
    struct MHD_OptionItem opts[4] = {{MHD_OPTION_END, 0, NULL}};
    size_t n_opts = 0;
    if (threads > 1)
        opts[n_opts++] =
            (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL};
    if (ep->is_tls) {
        flags |= MHD_USE_TLS;
        opts[n_opts++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)tls_cert_callback()};
        opts[n_opts++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)tls_priorities};
    }
    ep->srv = srv;
    ep->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_access, srv, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
        MHD_OPTION_THREAD_STACK_SIZE, stack, MHD_OPTION_ARRAY, opts, MHD_OPTION_CONNECTION_LIMIT,
        srv->cfg.connection_limit + GUARD_CONNECTION_SLACK, MHD_OPTION_CONNECTION_TIMEOUT,
        srv->cfg.connection_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)srv->cfg.connection_memory, MHD_OPTION_CONNECTION_MEMORY_INCREMENT,
        (size_t)(4 * 1024), MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv,
        MHD_OPTION_END);
    if (!ep->daemon) {
        log_error("cannot start the HTTP daemon for %s:%u", ep->addr, ep->port);
        return -1;
    }
    return 0;
}

int
http_start(struct server *srv)
{
    struct config *c = &srv->cfg;
    bool has_tls = c->tls_cert_file[0] || c->tls_key_file[0];
    if (has_tls && (!c->tls_cert_file[0] || !c->tls_key_file[0])) {
        log_error("tls_cert_file and tls_key_file go together");
        return -1;
    }
    if (c->tls_listen_addr[0] && !has_tls) {
        log_error("tls_listen needs tls_cert_file and tls_key_file");
        return -1;
    }
    if (has_tls && tls_open(c->tls_cert_file, c->tls_key_file) != 0)
        return -1;
    /* endpoints[0] serves 'listen' (HTTPS when TLS is on and there is no
     * tls_listen); endpoints[1] serves tls_listen. */
    struct http_endpoint *eps = srv->endpoints;
    eps[0].is_tls = has_tls && !c->tls_listen_addr[0];
    eps[1].is_tls = true;
    size_t n_eps = c->tls_listen_addr[0] ? 2 : 1;
    if (endpoint_open(&eps[0], c->listen_addr, &c->listen_port) != 0)
        goto fail;
    if (n_eps == 2 && endpoint_open(&eps[1], c->tls_listen_addr, &c->tls_listen_port) != 0)
        goto fail;
    /* Default: a few event-loop threads (MHD's poll loop, level-triggered,
     * so a short sendfile() is simply retried at the next turn; an
     * edge-triggered loop would wait for an EPOLLOUT edge that never comes
     * when sendfile returns short because O_DIRECT writes invalidated page
     * cache next to the range). Each turn serves every ready connection, so
     * under load one wakeup answers many requests. Blocking steps go to the
     * offload pool (see on_access); connections come from listener.c, which
     * spreads them evenly. thread_per_connection = on keeps the older
     * model: a thread per connection that blocks where it must. With
     * tls_listen, each address has its own daemon and threads. */
    size_t stack = SERVER_THREAD_STACK;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
                     MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
    unsigned threads = 0, tls_threads = 0;
    if (c->thread_per_connection) {
        flags |= MHD_USE_THREAD_PER_CONNECTION;
    } else {
        threads = c->http_threads;
        if (threads == 0) {
            /* One more than the cores: with few connections per thread,
             * all of a thread's connections can be waiting on their clients
             * at once, and its core would idle. Measured on 2 cores, 16
             * range readers: 2 threads left 0.25 core idle (~0.91x nginx),
             * 3 kept both busy (~1.0x); at 512 readers 2 and 3 are equal. */
            long n = sysconf(_SC_NPROCESSORS_ONLN);
            threads = n > 0 ? (unsigned)MIN(n + 1, 65) : 3;
            /* HTTPS: one per core, as nginx has one worker per core. An
             * answer costs ~3x the CPU of one over HTTP (the cipher and a
             * copy), so as many threads as cores keep them busy; a third
             * thread on 2 cores only queued for them. 64 KiB ranges over
             * HTTPS, 16 connections, 5 rotated runs, 2 vs 3 threads: 7062 vs
             * 7035 req/s, run-queue wait per answer 109 vs 191 us (nginx:
             * 91). */
            tls_threads = n > 0 ? (unsigned)MIN(n, 64) : 2;
        } else {
            tls_threads = threads;
        }
        flags |= MHD_ALLOW_SUSPEND_RESUME;
        srv->offload = offload_create(c->worker_threads_max, stack);
    }
    /* One hashing thread per core behind the receive path (hasher.c). */
    long n_cores = sysconf(_SC_NPROCESSORS_ONLN);
    srv->hasher =
        hasher_create(n_cores > 0 ? (unsigned)MIN(n_cores, 16) : 2, c->test_hash_delay_ms);
    if (!srv->hasher) {
        log_error("cannot start the hashing threads");
        goto fail;
    }
    srv->guard = guard_create(c, stack);
    if (!srv->guard) {
        log_error("cannot start the connection guard");
        goto fail;
    }
    for (size_t i = 0; i < n_eps; i++)
        if (endpoint_start_daemon(srv, &eps[i], flags, eps[i].is_tls ? tls_threads : threads,
                                  stack) != 0)
            goto fail;
    for (size_t i = 0; i < n_eps; i++) {
        int err = listener_start(eps[i].listener, add_connection, &eps[i], stack);
        if (err < 0) {
            log_error("cannot start the accept thread: %s", strerror(-err));
            goto fail;
        }
    }
    for (size_t i = 0; i < n_eps; i++) {
        printf("shardstore: listening on %s://%s:%u\n", eps[i].is_tls ? "https" : "http",
               eps[i].addr, eps[i].port);
        if (threads)
            log_info("listening on %s %s:%u (%u event-loop threads, at most %u connections and "
                     "%u workers)",
                     eps[i].is_tls ? "https" : "http", eps[i].addr, eps[i].port,
                     eps[i].is_tls ? tls_threads : threads, c->connection_limit,
                     c->worker_threads_max);
        else
            log_info("listening on %s %s:%u (a thread per connection, at most %u)",
                     eps[i].is_tls ? "https" : "http", eps[i].addr, eps[i].port,
                     c->connection_limit);
    }
    fflush(stdout);
    return 0;

fail:
    for (size_t i = 0; i < ARRAY_LEN(srv->endpoints); i++) {
        listener_close(eps[i].listener);
        eps[i].listener = NULL;
        if (eps[i].daemon)
            MHD_stop_daemon(eps[i].daemon);
        eps[i].daemon = NULL;
    }
    offload_destroy(srv->offload);
    srv->offload = NULL;
    hasher_destroy(srv->hasher);
    srv->hasher = NULL;
    guard_destroy(srv->guard);
    srv->guard = NULL;
    tls_close();
    return -1;
}

void
http_stop(struct server *srv)
{
    struct http_endpoint *eps = srv->endpoints;
    if (!eps[0].daemon)
        return;
    /* Whatever clients do, and whatever blocks below, the process ends
     * HTTP_STOP_MARGIN_S after the grace at the latest. */
    guard_exit_after(srv->guard, srv->cfg.shutdown_grace_s + HTTP_STOP_MARGIN_S);
    for (size_t i = 0; i < ARRAY_LEN(srv->endpoints); i++)
        listener_stop(eps[i].listener);
    /* Connections waiting for a request (slow header senders included,
     * which would hold the wait below for the whole grace) have nothing to
     * finish: close them, and the keep-alive ones as they go idle. */
    int64_t deadline = clock_mono_ns() + (int64_t)srv->cfg.shutdown_grace_s * 1000000000;
    for (unsigned i = 0; atomic_load(&srv->in_flight) > 0 && clock_mono_ns() < deadline; i++) {
        if (i % 10 == 0)
            guard_drop(srv->guard, GUARD_DROP_IDLE);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    /* Past the grace, what is left is dropped: slow uploads and readers,
     * requests whose step still runs (their clients get no answer, so
     * nothing they were told is lost). MHD closes them at its next turn. */
    guard_drop(srv->guard, GUARD_DROP_ALL);
    /* Workers finish their steps and resume their connections before the
     * daemons go (MHD must not stop with a connection suspended); a step
     * started after this runs on the event thread. */
    offload_stop(srv->offload);
    /* The same for end steps that handed their commit to the committer
     * (op_put.c): its callbacks resume their connections. From here on a
     * commit runs where it was asked for, as before the offload pool. */
    committer_drain(srv->committer);
    /* Let the event loops close every connection at their own pace, so that
     * MHD_stop_daemon only joins idle threads: closing connections while
     * stopping is MHD's least exercised path. */
    if (!guard_wait_closed(srv->guard, 2000))
        log_warn("stopping: connections still open; MHD closes them");
    for (size_t i = 0; i < ARRAY_LEN(srv->endpoints); i++) {
        if (eps[i].daemon)
            MHD_stop_daemon(eps[i].daemon);
        eps[i].daemon = NULL;
    }
    offload_destroy(srv->offload);
    srv->offload = NULL;
    hasher_destroy(srv->hasher); /* every upload stream is closed */
    srv->hasher = NULL;
    for (size_t i = 0; i < ARRAY_LEN(srv->endpoints); i++) {
        listener_close(eps[i].listener);
        eps[i].listener = NULL;
    }
    guard_destroy(srv->guard);
    srv->guard = NULL;
    tls_close();
}

void
http_reload(struct server *srv)
{
    (void)srv;
    tls_reload(); /* nothing to do without TLS */
}
