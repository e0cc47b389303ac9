/*
 * http.c: libmicrohttpd glue. The only file that drives MHD's request
 * lifecycle:
 *
 *   URI log callback   -> struct s3_req created in its own arena (raw URI kept
 *                         for SigV4, which needs it as sent)
 *   first access call  -> headers collected, addressing resolved, SigV4
 *                         verified, route chosen; the handler either responds
 *                         at once or installs on_body/on_end
 *   body calls         -> payload decoded (aws-chunked) and verified (SHA-256)
 *                         on the fly, then handed to on_body; after an error
 *                         the rest of the body is discarded
 *   final call         -> payload checks, then on_end responds
 *   completion         -> on_cleanup, reader unpin, arena destroyed
 *
 * Connections run on a few event-loop threads (MHD's poll loop, one thread
 * per core by default). A step that may block (a request without body that
 * is not a GET or HEAD, and the final call of any request with a body:
 * commits, fdatasync, scrub) is not run there: the connection is suspended,
 * the step runs on a worker of offload.c, which leaves its response in
 * r->deferred_resp and resumes the connection; MHD then calls on_access
 * again, which queues it. Only /_/health runs before authentication.
 */
#include "server/server.h"
#include "server/unsupported.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ======================================================================
 * Responses
 * ====================================================================== */

void
s3_resp_header(struct MHD_Response *resp, const char *name, const char *value)
{
    MHD_add_response_header(resp, name, value);
}

void
s3_respond(struct s3_req *r, int status, struct MHD_Response *resp)
{
    if (r->is_responded) {
        MHD_destroy_response(resp);
        return;
    }
    MHD_add_response_header(resp, "x-amz-request-id", r->request_id);
    MHD_add_response_header(resp, "x-amz-id-2", r->request_id);
    MHD_add_response_header(resp, "Server", "shardstore");
    if (r->must_close)
        MHD_add_response_header(resp, "Connection", "close");
    r->is_responded = true;
    r->status = status;
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
    struct buf b;
    buf_init(&b);
    int status = s3_error_status(e);
    if (status == 304) {
        s3_respond_empty(r, status);
        return;
    }
    xml_error(&b, s3_error_code(e), message ? message : s3_error_message(e), r->raw_path,
              r->request_id);
    log_debug("request %s: %.*s %.*s -> %d %s", r->request_id, (int)r->method.len, r->method.ptr,
              (int)r->raw_path.len, r->raw_path.ptr, status, s3_error_code(e));
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b.len, b.ptr, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", "application/xml");
    s3_respond(r, status, resp);
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

static void
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
            if (s3_uri_decode(r->arena, name, &p->name) &&
                s3_uri_decode(r->arena, value, &p->value))
                r->n_params++;
        }
        i = j + 1;
    }
}

/* Splits Host into a bucket when it is "<bucket>.<domain>[:port]" for one
 * of the configured domains (virtual-hosted-style addressing). */
static bool
virtual_host_bucket(struct s3_req *r, struct slice host, struct slice *bucket)
{
    const char *colon = memchr(host.ptr, ':', host.len);
    if (colon)
        host.len = (size_t)(colon - host.ptr);
    const char *d = r->srv->cfg.domains;
    while (*d) {
        const char *comma = strchr(d, ',');
        size_t dl = comma ? (size_t)(comma - d) : strlen(d);
        while (dl && *d == ' ') {
            d++;
            dl--;
        }
        if (dl && host.len > dl + 1 && host.ptr[host.len - dl - 1] == '.' &&
            strncasecmp(host.ptr + host.len - dl, d, dl) == 0) {
            *bucket = (struct slice){host.ptr, host.len - dl - 1};
            return true;
        }
        if (!comma)
            break;
        d = comma + 1;
    }
    return false;
}

/* Resolves bucket and key from the Host header and the path. */
static bool
resolve_address(struct s3_req *r)
{
    struct slice path = r->raw_path;
    struct slice vbucket;
    struct slice host = s3_req_header(r, "host");
    if (host.len && virtual_host_bucket(r, host, &vbucket)) {
        r->is_virtual_host = true;
        r->bucket = (struct slice){arena_strndup(r->arena, vbucket.ptr, vbucket.len), vbucket.len};
        struct slice k = path;
        if (k.len && k.ptr[0] == '/') {
            k.ptr++;
            k.len--;
        }
        return s3_uri_decode(r->arena, k, &r->key);
    }
    if (path.len == 0 || path.ptr[0] != '/')
        return false;
    path.ptr++;
    path.len--;
    const char *slash = memchr(path.ptr, '/', path.len);
    struct slice b = path;
    struct slice k = SLICE_NULL;
    if (slash) {
        b.len = (size_t)(slash - path.ptr);
        k = (struct slice){slash + 1, path.len - b.len - 1};
    }
    return s3_uri_decode(r->arena, b, &r->bucket) && s3_uri_decode(r->arena, k, &r->key);
}

/* ======================================================================
 * Routing
 * ====================================================================== */

enum route_level { LEVEL_SERVICE, LEVEL_BUCKET, LEVEL_OBJECT };

/* Which key a route is authorized for. */
enum route_key {
    RKEY_NONE,   /* bucket- or service-wide */
    RKEY_OBJECT, /* the request's object key */
    RKEY_PREFIX, /* the listing's ?prefix= */
    RKEY_EACH,   /* several keys, each checked by the handler (DeleteObjects) */
};

/* A route names the action it needs, so every handler runs authorized. */
struct route {
    const char *method;
    enum route_level level;
    const char *subresource; /* query parameter that selects the route, or NULL */
    enum auth_action action;
    enum route_key key;
    void (*handler)(struct s3_req *r);
};

static const struct route routes[] = {
    {"GET", LEVEL_SERVICE, NULL, AUTH_ACTION_SERVICE, RKEY_NONE, op_list_buckets},
    {"GET", LEVEL_BUCKET, "location", AUTH_ACTION_BUCKET_INFO, RKEY_NONE, op_get_bucket_location},
    {"GET", LEVEL_BUCKET, "versioning", AUTH_ACTION_BUCKET_INFO, RKEY_NONE,
     op_get_bucket_versioning},
    {"GET", LEVEL_BUCKET, "acl", AUTH_ACTION_READ_ACP, RKEY_NONE, op_get_bucket_acl},
    {"PUT", LEVEL_BUCKET, "acl", AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, op_put_bucket_acl},
    {"GET", LEVEL_BUCKET, "versions", AUTH_ACTION_LIST, RKEY_PREFIX, op_list_object_versions},
    {"GET", LEVEL_BUCKET, NULL, AUTH_ACTION_LIST, RKEY_PREFIX, op_list_objects},
    {"PUT", LEVEL_BUCKET, NULL, AUTH_ACTION_CREATE_BUCKET, RKEY_NONE, op_create_bucket},
    {"HEAD", LEVEL_BUCKET, NULL, AUTH_ACTION_BUCKET_INFO, RKEY_NONE, op_head_bucket},
    {"DELETE", LEVEL_BUCKET, NULL, AUTH_ACTION_BUCKET_ADMIN, RKEY_NONE, op_delete_bucket},
    {"POST", LEVEL_BUCKET, "delete", AUTH_ACTION_WRITE, RKEY_EACH, op_delete_objects},
    {"GET", LEVEL_BUCKET, "uploads", AUTH_ACTION_LIST, RKEY_PREFIX, op_list_uploads},
    {"POST", LEVEL_OBJECT, "uploads", AUTH_ACTION_WRITE, RKEY_OBJECT, op_create_multipart},
    {"POST", LEVEL_OBJECT, "uploadId", AUTH_ACTION_WRITE, RKEY_OBJECT, op_complete_multipart},
    {"PUT", LEVEL_OBJECT, "uploadId", AUTH_ACTION_WRITE, RKEY_OBJECT, op_upload_part},
    {"DELETE", LEVEL_OBJECT, "uploadId", AUTH_ACTION_WRITE, RKEY_OBJECT, op_abort_multipart},
    {"GET", LEVEL_OBJECT, "uploadId", AUTH_ACTION_WRITE, RKEY_OBJECT, op_list_parts},
    {"GET", LEVEL_OBJECT, NULL, AUTH_ACTION_READ, RKEY_OBJECT, op_get_object},
    {"HEAD", LEVEL_OBJECT, NULL, AUTH_ACTION_READ, RKEY_OBJECT, op_head_object},
    {"PUT", LEVEL_OBJECT, NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, op_put_object},
    {"DELETE", LEVEL_OBJECT, NULL, AUTH_ACTION_WRITE, RKEY_OBJECT, op_delete_object},
};

/* Authorizes route 'rt' for 'r' before its handler runs; responds
 * AccessDenied and returns false when the policy says no. */
static bool
route_authorize(struct s3_req *r, const struct route *rt)
{
    struct slice key = SLICE_NULL;
    const struct s3_param *p;
    switch (rt->key) {
    case RKEY_NONE:
        break;
    case RKEY_OBJECT:
        key = r->key;
        break;
    case RKEY_PREFIX:
        p = s3_req_param(r, "prefix");
        key = p ? p->value : SLICE_NULL;
        break;
    case RKEY_EACH:
        /* Only the level here: the handler checks every key. A prefix
         * grant's own prefix stands in for "some key under it". */
        if (!s3_is_allowed(r, rt->action, SLICE_NULL) && r->has_grant)
            key = slice_from_cstr(r->grant.prefix);
        break;
    }
    r->has_route_action = true;
    r->route_action = rt->action;
    r->route_key = key;
    return s3_authorize(r, rt->action, key);
}

/* Query parameters that name an S3 sub-resource: a request carrying one
 * that no route handles is NotImplemented rather than silently treated as
 * the plain operation. */
#define SUB(s)                                                                                     \
    {                                                                                              \
        s, sizeof(s) - 1                                                                           \
    }
static const struct {
    const char *name;
    size_t len;
} subresources[] = {
    SUB("accelerate"),
    SUB("acl"),
    SUB("analytics"),
    SUB("attributes"),
    SUB("cors"),
    SUB("delete"),
    SUB("encryption"),
    SUB("intelligent-tiering"),
    SUB("inventory"),
    SUB("legal-hold"),
    SUB("lifecycle"),
    SUB("location"),
    SUB("logging"),
    SUB("metrics"),
    SUB("notification"),
    SUB("object-lock"),
    SUB("ownershipControls"),
    SUB("policy"),
    SUB("policyStatus"),
    SUB("publicAccessBlock"),
    SUB("replication"),
    SUB("requestPayment"),
    SUB("restore"),
    SUB("retention"),
    SUB("select"),
    SUB("tagging"),
    SUB("torrent"),
    SUB("uploadId"),
    SUB("uploads"),
    SUB("versioning"),
    SUB("versions"),
    SUB("website"),
};
#undef SUB

/* The first query parameter that names a sub-resource, or NULL. Runs on
 * every request: lengths are compared before bytes. */
static const char *
request_subresource(const struct s3_req *r)
{
    for (size_t i = 0; i < r->n_params; i++) {
        struct slice n = r->params[i].name;
        if (n.len == 0 || n.ptr[0] < 'a' || n.ptr[0] > 'w')
            continue; /* all start with a lower-case letter; X-Amz-* never match */
        for (size_t k = 0; k < ARRAY_LEN(subresources); k++)
            if (n.len == subresources[k].len && memcmp(n.ptr, subresources[k].name, n.len) == 0)
                return subresources[k].name;
    }
    return NULL;
}

static void
route(struct s3_req *r)
{
    enum route_level level = LEVEL_OBJECT;
    if (r->bucket.len == 0)
        level = LEVEL_SERVICE;
    else if (r->key.len == 0)
        level = LEVEL_BUCKET;
    if (level != LEVEL_SERVICE && (r->bucket.len > INDEX_MAX_BUCKET || r->bucket.ptr[0] == '_')) {
        s3_respond_error(r, S3_ERR_INVALID_BUCKET_NAME, NULL);
        return;
    }
    if (r->key.len > INDEX_MAX_KEY) {
        s3_respond_error(r, S3_ERR_KEY_TOO_LONG, NULL);
        return;
    }
    const char *sub = request_subresource(r);
    bool has_method = false;
    for (size_t i = 0; i < ARRAY_LEN(routes); i++) {
        const struct route *rt = &routes[i];
        if (rt->level != level || r->method.len != strlen(rt->method) ||
            memcmp(r->method.ptr, rt->method, r->method.len) != 0)
            continue;
        has_method = true;
        if (rt->subresource ? (sub && !strcmp(sub, rt->subresource)) : !sub) {
            if (route_authorize(r, rt) && !s3_refuse_unsupported(r))
                rt->handler(r);
            return;
        }
    }
    if (r->principal.is_anonymous)
        s3_respond_error(r, S3_ERR_ACCESS_DENIED, NULL);
    else if (sub || has_method)
        s3_respond_error(r, S3_ERR_NOT_IMPLEMENTED, NULL);
    else
        s3_respond_error(r, S3_ERR_METHOD_NOT_ALLOWED, NULL);
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
    if (r->on_body) {
        enum s3_error e = r->on_body(r, data, len);
        if (e != S3_OK)
            r->body_error = e;
    }
    return 0;
}

static void
start_body(struct s3_req *r)
{
    r->has_body_started = true;
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
feed_body(struct s3_req *r, const char *data, size_t len)
{
    r->body_received += len;
    atomic_fetch_add(&r->srv->metrics.bytes_in, len);
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

static void
finish_body(struct s3_req *r)
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
    if (r->body_error) {
        s3_respond_error(r, r->body_error, NULL);
        return;
    }
    if (r->on_end)
        r->on_end(r);
    if (!r->is_responded)
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
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
    parse_query(r);
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
    return true;
}

/* Second half: admin endpoints, addressing, authentication, routing. */
static void
dispatch_route(struct s3_req *r)
{
    if (slice_has_prefix(r->raw_path, SLICE_LIT("/_/"))) {
        op_admin(r);
        return;
    }
    if (!resolve_address(r)) {
        s3_respond_error(r, S3_ERR_INVALID_REQUEST, "Bad request path");
        return;
    }
    if (!s3_authenticate_or_anonymous(r))
        return;
    start_body(r);
    route(r);
}

/* Whether a step of 'r' may block (commit, fdatasync, scrub) and so must
 * run on a worker: everything but GET and HEAD, which only read. */
static bool
is_blocking(const struct s3_req *r)
{
    return r->srv->offload && !slice_eq(r->method, SLICE_LIT("GET")) &&
           !slice_eq(r->method, SLICE_LIT("HEAD"));
}

static void
job_dispatch(void *arg)
{
    struct s3_req *r = arg;
    struct MHD_Connection *conn = r->conn;
    r->is_first_call = true;
    dispatch_route(r);
    r->is_first_call = false;
    /* r may be gone as soon as the connection is resumed. */
    MHD_resume_connection(conn);
}

static void
job_finish(void *arg)
{
    struct s3_req *r = arg;
    struct MHD_Connection *conn = r->conn;
    finish_body(r);
    MHD_resume_connection(conn);
}

/* Suspends the connection and runs 'fn' on a worker; the response it
 * leaves in r->deferred_resp is queued by the next on_access call. */
static void
offload_step(struct s3_req *r, void (*fn)(void *))
{
    r->is_offloaded = true;
    atomic_fetch_add(&r->srv->metrics.offloaded, 1);
    r->job.fn = fn;
    r->job.arg = r;
    MHD_suspend_connection(r->conn);
    offload_submit(r->srv->offload, &r->job);
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
        if (dispatch_parse(r, method)) {
            if (!r->has_request_body && is_blocking(r)) {
                /* The worker owns r from submit on (and sets the flag again). */
                r->is_first_call = false;
                offload_step(r, job_dispatch);
                return MHD_YES;
            }
            dispatch_route(r);
        }
        r->is_first_call = false;
        return MHD_YES;
    }
    if (r->deferred_resp) {
        struct MHD_Response *resp = r->deferred_resp;
        r->deferred_resp = NULL;
        *upload_data_size = 0;
        if (MHD_queue_response(conn, (unsigned int)r->status, resp) != MHD_YES)
            log_warn("request %s: could not queue response %d", r->request_id, r->status);
        MHD_destroy_response(resp);
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (!r->is_responded)
            feed_body(r, upload_data, n);
        return MHD_YES;
    }
    if (!r->is_responded) {
        if (is_blocking(r))
            offload_step(r, job_finish);
        else
            finish_body(r);
    }
    return MHD_YES;
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
             enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    struct server *srv = cls;
    struct s3_req *r = *req_cls;
    if (!r)
        return;
    *req_cls = NULL;
    if (r->deferred_resp)
        MHD_destroy_response(r->deferred_resp);
    if (r->on_cleanup)
        r->on_cleanup(r);
    if (r->verify_payload_sha)
        auth_checksum_cleanup(&r->payload_sha);
    if (r->has_pin)
        storage_reader_unpin(srv->storage, r->pin);
    if (r->method.ptr)
        log_debug("access %s %.*s %.*s -> %d in %.3f ms%s", r->request_id, (int)r->method.len,
                  r->method.ptr, (int)r->raw_uri.len, r->raw_uri.ptr, r->status,
                  (double)(clock_mono_ns() - r->start_ns) / 1e6,
                  toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (terminated early)");
    buf_cleanup(&r->xml_body);
    atomic_fetch_sub(&srv->in_flight, 1);
    arena_destroy(r->arena);
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

/* The listener's callback: MHD takes the socket (and closes it, also when
 * it refuses it at the connection limit). */
static void
add_connection(void *ctx, int fd, const struct sockaddr *sa, socklen_t len)
{
    struct server *srv = ctx;
    if (MHD_add_connection(srv->daemon, fd, sa, len) != MHD_YES)
        log_debug("connection refused (limit %u reached or out of memory)",
                  srv->cfg.connection_limit);
}

int
http_start(struct server *srv)
{
    uint16_t port = 0;
    int err =
        listener_open(srv->cfg.listen_addr, srv->cfg.listen_port, 4096, &srv->listener, &port);
    if (err < 0) {
        log_error("cannot listen on %s:%u: %s", srv->cfg.listen_addr, srv->cfg.listen_port,
                  strerror(-err));
        return -1;
    }
    srv->cfg.listen_port = port;
    /* Default: a few event-loop threads (MHD's poll loop, level-triggered,
     * so a short sendfile() is simply retried at the next turn; an
     * edge-triggered loop would wait for an EPOLLOUT edge that never comes
     * when sendfile returns short because O_DIRECT writes invalidated page
     * cache next to the range). Each turn serves every ready connection, so
     * under load one wakeup answers many requests. Blocking steps go to the
     * offload pool (see on_access); connections come from listener.c, which
     * spreads them evenly. thread_per_connection = on keeps the older
     * model: a thread per connection that blocks where it must. */
    size_t stack = SERVER_THREAD_STACK;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
                     MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
    unsigned threads = 0;
    if (srv->cfg.thread_per_connection) {
        flags |= MHD_USE_THREAD_PER_CONNECTION;
    } else {
        threads = srv->cfg.http_threads;
        if (threads == 0) {
            /* One more than the cores: with few connections per thread,
             * all of a thread's connections can be waiting on their clients
             * at once, and its core would idle. Measured on 2 cores, 16
             * range readers: 2 threads left 0.25 core idle (~0.91x nginx),
             * 3 kept both busy (~1.0x); at 512 readers 2 and 3 are equal. */
            long n = sysconf(_SC_NPROCESSORS_ONLN);
            threads = n > 0 ? (unsigned)MIN(n + 1, 65) : 3;
        }
        flags |= MHD_ALLOW_SUSPEND_RESUME;
        srv->offload = offload_create(srv->cfg.worker_threads_max, stack);
    }
    /* The pool size goes in only when there is a pool: MHD warns about 0. */
    struct MHD_OptionItem pool[] = {
        {threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, (intptr_t)threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    srv->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_access, srv, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
        MHD_OPTION_THREAD_STACK_SIZE, stack, MHD_OPTION_ARRAY, pool, MHD_OPTION_CONNECTION_LIMIT,
        srv->cfg.connection_limit, MHD_OPTION_CONNECTION_TIMEOUT, srv->cfg.connection_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)srv->cfg.connection_memory,
        MHD_OPTION_CONNECTION_MEMORY_INCREMENT, (size_t)(4 * 1024), MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, srv, MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_END);
    if (!srv->daemon) {
        log_error("cannot start the HTTP daemon");
        goto fail;
    }
    err = listener_start(srv->listener, add_connection, srv, stack);
    if (err < 0) {
        log_error("cannot start the accept thread: %s", strerror(-err));
        goto fail;
    }
    printf("shardstore: listening on http://%s:%u\n", srv->cfg.listen_addr, srv->cfg.listen_port);
    fflush(stdout);
    if (threads)
        log_info("listening on %s:%u (%u event-loop threads, at most %u connections and %u "
                 "workers)",
                 srv->cfg.listen_addr, srv->cfg.listen_port, threads, srv->cfg.connection_limit,
                 srv->cfg.worker_threads_max);
    else
        log_info("listening on %s:%u (a thread per connection, at most %u)", srv->cfg.listen_addr,
                 srv->cfg.listen_port, srv->cfg.connection_limit);
    return 0;

fail:
    listener_close(srv->listener);
    srv->listener = NULL;
    if (srv->daemon)
        MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    offload_destroy(srv->offload);
    srv->offload = NULL;
    return -1;
}

void
http_stop(struct server *srv)
{
    if (!srv->daemon)
        return;
    listener_stop(srv->listener);
    int64_t deadline = clock_mono_ns() + (int64_t)srv->cfg.shutdown_grace_s * 1000000000;
    while (atomic_load(&srv->in_flight) > 0 && clock_mono_ns() < deadline) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    /* Workers finish their steps and resume their connections before the
     * daemon goes; a step started after this runs on the event thread. */
    offload_stop(srv->offload);
    MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    offload_destroy(srv->offload);
    srv->offload = NULL;
    listener_close(srv->listener);
    srv->listener = NULL;
}
