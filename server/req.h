/*
 * req.h: a request (struct s3_req) and what handlers do with it: read its
 * headers and query parameters, and answer (req.c). A request lives in its
 * own arena, allocated when MHD first sees the URI and destroyed in the
 * completion callback; everything request-scoped hangs off that arena.
 * Exactly one response is queued per request: the first s3_respond* wins.
 */
#ifndef SHARD_SERVER_REQ_H
#define SHARD_SERVER_REQ_H

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/errors.h"
#include "server/offload.h"
#include "server/tier.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct MHD_Connection;
struct MHD_Response;
struct route;
struct server;
struct bucket_access;

struct s3_param {
    struct slice name;  /* decoded */
    struct slice value; /* decoded */
    bool has_value;
};

struct s3_req;
struct s3_rdma;

/* A request body consumer: gets decoded payload bytes. Returns S3_OK or an
 * error (the rest of the body is then discarded and the error sent). */
typedef enum s3_error (*s3_body_fn)(struct s3_req *r, const char *data, size_t len);
/* Called once the whole body is in (or at once for requests without body
 * handlers). Must call one of the s3_respond_* functions, or, on a worker,
 * set r->is_end_handed_off and leave that to another thread (op_put.c). */
typedef void (*s3_end_fn)(struct s3_req *r);
/* Called when the request ends for any reason (cleanup, e.g. abort a writer). */
typedef void (*s3_cleanup_fn)(struct s3_req *r);

struct s3_req {
    struct server *srv;
    struct MHD_Connection *conn;
    struct arena *arena;
    uint64_t id;
    char request_id[24];
    int64_t start_ns;

    struct slice method;
    struct slice raw_uri; /* as on the wire */
    struct slice raw_path;
    struct slice raw_query;
    struct auth_header *headers;
    size_t n_headers;
    struct s3_param *params;
    size_t n_params;

    struct slice bucket; /* decoded */
    struct slice key;    /* decoded; empty for bucket/service ops */
    bool is_virtual_host;
    /* Chosen by router_prepare before authentication. */
    bool is_admin;             /* a path under /_/ (op_admin) */
    const struct route *route; /* NULL: no route matches */
    const char *op;            /* S3 operation name (metrics, access log); NULL: unknown */
    unsigned route_flags;      /* ROUTE_* of router.h */
    /* The Origin header (ptr NULL when absent): CORS headers go on the
     * response (op_cors.c); the preflight answers them itself. */
    struct slice cors_origin;
    bool is_cors_preflight;

    struct auth_verdict auth;
    bool is_authenticated;
    /* Who signed (filled by s3_authenticate; anonymous when unsigned). */
    struct auth_principal principal;
    char user_id[INDEX_USER_ID_LEN + 1];
    char user_name[INDEX_USER_NAME_MAX + 1];
    /* Filled by s3_authorize for bucket-level routes: the addressed bucket
     * (when it exists) and the caller's grant on it. */
    bool has_bucket;
    struct index_bucket bucket_rec;
    bool has_grant;
    struct index_grant grant;
    /* The bucket's policy/ACL/ownership/PAB entry (bucket_access.h), a
     * counted reference dropped when the request ends; NULL: none. */
    struct bucket_access *access;
    /* The route's action and the key it was authorized for (s3_bucket_lookup
     * re-checks when the bucket changed in between). */
    bool has_route_action;
    enum auth_action route_action;
    struct slice route_key;

    /* body processing */
    bool has_body_started;
    bool is_chunked_payload;
    struct auth_chunked chunked;
    struct auth_checksum payload_sha; /* for AUTH_PAYLOAD_HASH */
    bool verify_payload_sha;
    uint64_t body_received;   /* raw bytes off the wire */
    uint64_t payload_len;     /* decoded payload bytes */
    uint64_t payload_max;     /* the most the route accepts (UINT64_MAX: no limit) */
    enum s3_error body_error; /* set when a body error occurred; rest discarded */
    /* The handler's on_body set body_error as final: answered at once
     * (with body_error_msg, NULL: the code's message) and the connection
     * closed, rather than reading the rest of the body. */
    bool is_body_error_final;
    const char *body_error_msg;
    s3_body_fn on_body;
    s3_end_fn on_end;
    s3_cleanup_fn on_cleanup;
    void *op_ctx; /* per-operation state */

    /* body accumulation for XML requests */
    struct buf xml_body;
    size_t xml_body_max;

    /* response */
    bool is_first_call;                 /* inside MHD's first callback for this request */
    bool has_request_body;              /* Content-Length > 0 or Transfer-Encoding */
    bool must_close;                    /* answer with Connection: close */
    struct MHD_Response *deferred_resp; /* queued at the next callback (keep-alive) */
    /* Under TLS: the body length of an answer held whole in memory, which
     * http.c may send corked (all its records in one turn); 0: not such an
     * answer. is_tls_corked: the session is corked until on_completed. */
    uint64_t tls_cork_len;
    bool is_tls_corked;
    bool is_responded;
    bool is_offloaded; /* a step ran on a worker: responses are deferred */
    struct offload_job job;
    /* While a step runs on a worker: who must still let go before the
     * connection is resumed (http_step_hold). */
    atomic_uint n_step_holds;
    /* The end step handed its answer to another thread (op_put.c: an
     * asynchronous commit): once on_end returns, r is theirs. */
    bool is_end_handed_off;
    int status;
    enum s3_error error; /* the S3 error answered, S3_OK for none */
    int64_t respond_ns;  /* monotonic time the response was queued; 0: none */
    uint64_t resp_bytes; /* response body bytes (as queued) */
    bool has_pin;
    uint64_t pin;
    /* RDMA fast path (rdma.c): the accepted token, and the x-amz-rdma-reply
     * value a 2xx answer (or a 501 decline) carries; 0: none. */
    struct s3_rdma *rdma;
    int rdma_reply;
    struct tier_pins tier_pins; /* taken with 'pin' (s3_req_pin) */
};

/* Header lookup (case-insensitive). Returns an empty slice with ptr NULL when absent. */
struct slice s3_req_header(const struct s3_req *r, const char *name);
bool s3_req_has_header(const struct s3_req *r, const char *name);
/* Query parameter lookup. Returns NULL when absent. */
const struct s3_param *s3_req_param(const struct s3_req *r, const char *name);
/* Its value, or an empty slice (ptr NULL) when absent. */
struct slice s3_req_param_value(const struct s3_req *r, const char *name);

/* Queues 'resp' with 'status', adding the common headers; takes ownership. */
void s3_respond(struct s3_req *r, int status, struct MHD_Response *resp);
/* Queues an S3 XML error with an optional message override. */
void s3_respond_error(struct s3_req *r, enum s3_error e, const char *message);
/* Queues an XML (or other) body of 'len' bytes, copied. */
void s3_respond_body(struct s3_req *r, int status, const char *content_type, const char *body,
                     size_t len);
/* As s3_respond_body, taking the bytes of 'b' instead of copying them
 * (MHD frees them once sent); 'b' is left empty. */
void s3_respond_buf(struct s3_req *r, int status, const char *content_type, struct buf *b);
/* Queues an empty response. */
void s3_respond_empty(struct s3_req *r, int status);
/* Adds a header to a response (name and value copied by MHD); an empty
 * value is sent as an empty field value. */
void s3_resp_header(struct MHD_Response *resp, const char *name, const char *value);

/* Takes the request's reader pin (r->pin, dropped when the request
 * completes) before an index lookup. On failure (pin table full) responds
 * 503 SlowDown and returns false. */
bool s3_req_pin(struct s3_req *r);
/* Drops the request's pin now (nothing more will be read). */
void s3_req_unpin(struct s3_req *r);

#endif
