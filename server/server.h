/*
 * server.h: what the files of server/ share. server/ is the top layer: it
 * owns libmicrohttpd, the configuration and the mapping of every error to
 * an S3 status and code, and it coordinates auth/, index/ and storage/.
 *
 * A request lives in a struct s3_req allocated from its own arena when MHD
 * first sees the URI and destroyed in the completion callback; everything
 * request-scoped hangs off that arena.
 */
#ifndef SHARD_SERVER_H
#define SHARD_SERVER_H

#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "storage/storage.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct MHD_Connection;
struct MHD_Response;
struct MHD_Daemon;

/* ---- errors (s3_errors.def) -------------------------------------------- */

enum s3_error {
    S3_OK = 0,
#define S3_ERROR(name, status, code, msg) S3_ERR_##name,
#include "server/s3_errors.def"
#undef S3_ERROR
    S3_ERR_COUNT
};

int s3_error_status(enum s3_error e);
const char *s3_error_code(enum s3_error e);
const char *s3_error_message(enum s3_error e);
/* Maps a negative errno from index/ or storage/ to an S3 error. */
enum s3_error s3_error_from_errno(int err);

/* ---- configuration ------------------------------------------------------ */

struct config {
    char listen_addr[64]; /* "127.0.0.1" */
    uint16_t listen_port; /* 9000; 0 = any free port */
    char data_dir[4096];
    char region[64];
    char domains[256]; /* comma-separated domains for virtual-hosted style */
    uint64_t volume_size;
    uint32_t max_volumes;
    uint64_t index_map_size;
    uint64_t write_buffer_total;
    bool group_commit;
    uint32_t group_commit_max;  /* ops per batch */
    uint32_t connection_memory; /* bytes of MHD's per-connection buffer pool */
    uint32_t connection_limit;
    uint32_t connection_timeout_s;
    uint32_t http_threads;       /* event-loop threads; 0 = cores + 1 */
    uint32_t worker_threads_max; /* offload pool for blocking steps */
    bool thread_per_connection;  /* the older model: no event loop, no pool */
    uint32_t shutdown_grace_s;
    uint64_t max_object_size;
    uint64_t min_part_size; /* multipart: every part but the last (S3: 5 MiB) */
    uint32_t inline_max;    /* objects up to this size are stored in the index */
    int log_level;
    bool index_nosync;             /* tests only */
    uint32_t test_commit_delay_ms; /* tests only: each commit waits this long first */
    char secret_key_file[4096];    /* key sealing access-key secrets; "" = DATA/secret.key */
};

/* Fills 'c' with the embedded defaults. */
void config_defaults(struct config *c);
/* Reads a config file ("key = value", '#' comments). Returns 0, or -1 after
 * printing the offending line to stderr. */
int config_load_file(struct config *c, const char *path);
/* Applies one directive; used by the file parser and the command line. */
int config_set(struct config *c, const char *key, const char *value);
/* Parses "ADDR:PORT" into the config. */
int config_set_listen(struct config *c, const char *addr_port);
/* Parses sizes like "64M", "4G", "1048576". Returns 0 or -1. */
int config_parse_size(const char *s, uint64_t *out);

/* ---- metrics -------------------------------------------------------------- */

struct metrics {
    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t errors_4xx;
    atomic_uint_fast64_t errors_5xx;
    atomic_uint_fast64_t bytes_in;
    atomic_uint_fast64_t bytes_out;
    atomic_uint_fast64_t puts;
    atomic_uint_fast64_t gets;
    atomic_uint_fast64_t commits;       /* index transactions */
    atomic_uint_fast64_t committed_ops; /* ops in them */
    atomic_uint_fast64_t auth_failures;
    atomic_uint_fast64_t offloaded; /* request steps run on a worker */
};

/* ---- the server ---------------------------------------------------------- */

struct committer;

struct server {
    struct config cfg;
    struct index *index;
    struct storage *storage;
    struct committer *committer;
    struct MHD_Daemon *daemon;
    struct offload *offload; /* NULL with thread_per_connection */
    struct listener *listener;
    char access_key[129];
    char secret_key[129];
    char owner_id[65]; /* canonical user id of the root user */
    /* The AES-256 key that seals users' access-key secrets in the index. */
    uint8_t secret_seal_key[AUTH_SECRET_KEY_LEN];
    struct metrics metrics;
    atomic_bool is_stopping;
    atomic_uint_fast64_t request_seq;
    atomic_uint_fast64_t in_flight;
};

/* ---- group commit ------------------------------------------------------- */

/* Starts the committer ('group' true: batches from a thread). */
struct committer *committer_create(struct server *srv, bool group, uint32_t max_batch);
void committer_destroy(struct committer *c);
/*
 * Makes 'ops' durable: syncs storage, then one index transaction. Blocks
 * until done. Returns 0 when the transaction committed (each op's result
 * says whether that op applied), or -errno when nothing was applied.
 * Releases the extents each op freed to storage (deferred for readers).
 */
int committer_run(struct committer *c, struct index_op *ops, size_t n_ops);

/* ---- blocking work off the event loop (offload.c) ----------------------- */

/* A unit of work for the pool; embedded in its owner, which keeps it alive
 * until 'fn' runs. 'fn' may free the owner. */
struct offload_job {
    struct offload_job *next;
    void (*fn)(void *arg);
    void *arg;
};

struct offload;
/* Creates a pool that starts up to 'max_workers' threads on demand, each
 * with a stack of 'stack_len' bytes (0: the default). Caller frees with
 * offload_destroy. */
struct offload *offload_create(uint32_t max_workers, size_t stack_len);
/* Queues 'job' (borrowed until its fn runs) and starts a worker when none
 * is idle and the limit allows. After offload_stop, or when no worker can
 * be started at all, runs the job at once on the calling thread. Thread-safe. */
void offload_submit(struct offload *o, struct offload_job *job);
/* Workers started so far. */
uint32_t offload_workers(struct offload *o);
/* Runs every queued job, joins the workers; later submits run inline. */
void offload_stop(struct offload *o);
/* offload_stop, then frees the pool. Accepts NULL. */
void offload_destroy(struct offload *o);

/* Starts thread '*t' running fn(arg) with a stack of 'stack_len' bytes (0:
 * the default). Returns 0 or -errno. */
int server_thread_start(pthread_t *t, size_t stack_len, void *(*fn)(void *), void *arg);

/* ---- the listening socket (listener.c) ----------------------------------- */

/* Takes ownership of the accepted socket 'fd'. */
typedef void (*listener_add_fn)(void *ctx, int fd, const struct sockaddr *sa, socklen_t len);
struct listener;
/* Binds and listens on IPv4 'addr':'port' (0: any free port, written to
 * '*bound_port'). Returns 0 or -errno. Caller frees with listener_close. */
int listener_open(const char *addr, uint16_t port, int backlog, struct listener **out,
                  uint16_t *bound_port);
/* Starts the accept thread, which passes each new connection to 'add'. */
int listener_start(struct listener *l, listener_add_fn add, void *ctx, size_t stack_len);
/* Stops accepting: wakes and joins the thread, closes the socket. Idempotent. */
void listener_stop(struct listener *l);
/* listener_stop, then frees. Accepts NULL. */
void listener_close(struct listener *l);

/* ---- requests ------------------------------------------------------------- */

struct s3_param {
    struct slice name;  /* decoded */
    struct slice value; /* decoded */
    bool has_value;
};

struct s3_req;

/* A request body consumer: gets decoded payload bytes. Returns S3_OK or an
 * error (the rest of the body is then discarded and the error sent). */
typedef enum s3_error (*s3_body_fn)(struct s3_req *r, const char *data, size_t len);
/* Called once the whole body is in (or at once for requests without body
 * handlers). Must call one of the s3_respond_* functions. */
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
    enum s3_error body_error; /* set when a body error occurred; rest discarded */
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
    bool is_responded;
    bool is_offloaded; /* a step ran on a worker: responses are deferred */
    struct offload_job job;
    int status;
    uint64_t resp_bytes;
    bool has_pin;
    uint64_t pin;
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
/* Queues an empty response. */
void s3_respond_empty(struct s3_req *r, int status);
/* Adds a header to a response (name and value copied by MHD). */
void s3_resp_header(struct MHD_Response *resp, const char *name, const char *value);

/* Expects an XML body of at most 'max' bytes, then calls 'end'. */
void s3_req_expect_xml(struct s3_req *r, size_t max, s3_end_fn end);

/* ---- handlers ------------------------------------------------------------ */

void op_list_buckets(struct s3_req *r);
void op_create_bucket(struct s3_req *r);
void op_head_bucket(struct s3_req *r);
void op_delete_bucket(struct s3_req *r);
void op_get_bucket_location(struct s3_req *r);
void op_get_bucket_versioning(struct s3_req *r);
void op_list_objects(struct s3_req *r);
void op_delete_objects(struct s3_req *r);
void op_put_object(struct s3_req *r);
void op_get_object(struct s3_req *r);
void op_head_object(struct s3_req *r);
void op_delete_object(struct s3_req *r);
void op_copy_object(struct s3_req *r);
void op_admin(struct s3_req *r);
void op_list_object_versions(struct s3_req *r);
void op_get_bucket_acl(struct s3_req *r);
void op_put_bucket_acl(struct s3_req *r);
/* The user admin API under /_/admin/ (admin_users.c); 'what' is the path
 * after "/_/admin/". The caller authorized the request already. */
void admin_users_handle(struct s3_req *r, struct slice what);
void op_create_multipart(struct s3_req *r);
void op_upload_part(struct s3_req *r);
void op_complete_multipart(struct s3_req *r);
void op_abort_multipart(struct s3_req *r);
void op_list_parts(struct s3_req *r);
void op_list_uploads(struct s3_req *r);

/* Resolves ?uploadId= (and ?partNumber= when 'part_number' is non-NULL)
 * for the request's bucket and key; on failure responds (NoSuchUpload,
 * InvalidArgument) and returns false. */
bool s3_multipart_lookup(struct s3_req *r, const struct index_bucket *bk,
                         struct index_upload *upload, uint32_t *part_number);
/* UploadPartCopy: copies x-amz-copy-source[-range] into part 'part_number'. */
void op_upload_part_copy(struct s3_req *r, const struct index_bucket *bk,
                         const struct index_upload *upload, uint32_t part_number);
/* Copies bytes [first, first+len) of 'src' into a new writer (finished).
 * Returns 0 or -errno; on error '*out' may hold a writer to destroy. */
int s3_copy_range(struct server *srv, const struct index_object *src, uint64_t first, uint64_t len,
                  struct storage_writer **out, uint8_t md5_out[16]);
/* Resolves x-amz-copy-source to a pinned, condition-checked source object;
 * on failure responds and returns false. */
bool s3_copy_source_lookup(struct s3_req *r, struct index_bucket *src_bk, struct slice *src_key,
                           struct index_object *src);

/* Metadata entries whose names start with this are internal (never sent
 * as headers): "x-shard-part-sizes" holds a multipart object's part sizes
 * as little-endian u64s. */
#define META_INTERNAL_PREFIX "x-shard-"
#define META_PART_SIZES "x-shard-part-sizes"

/* ---- helpers shared by handlers ----------------------------------------- */

/* Verifies the request's SigV4 (or SigV2 presigned URL) against the root
 * key and the users' keys in the index, and fills r->principal; on failure
 * (an unsigned request included) responds with the S3 error and returns false. */
bool s3_authenticate(struct s3_req *r);
/* The same, but an unsigned request passes as the anonymous principal
 * (the policy then decides). */
bool s3_authenticate_or_anonymous(struct s3_req *r);
/* Asks the policy whether the request's principal may do 'action' on the
 * request's bucket (looked up once and kept in r->bucket_rec) with object
 * key (or listing prefix) 'key'. Does not respond. */
bool s3_is_allowed(struct s3_req *r, enum auth_action action, struct slice key);
/* s3_is_allowed, answering AccessDenied when it says no. */
bool s3_authorize(struct s3_req *r, enum auth_action action, struct slice key);
/* The same decision for another bucket 'bk' than the request's (the
 * source of a copy); answers AccessDenied when it says no. */
bool s3_authorize_bucket(struct s3_req *r, const struct index_bucket *bk, enum auth_action action,
                         struct slice key);
/* Writes the owner's display name of user id 'owner' ("" or root's id:
 * "root"; a removed user: its id) into 'out' (>= INDEX_USER_NAME_MAX + 1). */
void s3_owner_name(struct s3_req *r, const char *owner, char *out, size_t cap);
/* The canonical user id that owns 'bk' (root's id for old buckets). */
const char *s3_bucket_owner_id(struct s3_req *r, const struct index_bucket *bk);
/* Looks up the request's bucket; on failure responds (NoSuchBucket) and
 * returns false. When the bucket is not the one the route was authorized
 * against (created or re-created meanwhile), authorizes again. */
bool s3_bucket_lookup(struct s3_req *r, struct index_bucket *out);
/* S3 bucket naming rules. */
bool s3_bucket_name_is_valid(struct slice name);
/* Formats an ETag with quotes: "\"hex\"" or "\"hex-N\"". 'out' >= 48 bytes. */
void s3_format_etag(const uint8_t md5[16], uint32_t parts, char *out);
/* Parses an ETag with or without quotes (and without -N suffix). */
bool s3_parse_etag(struct slice s, uint8_t md5[16]);
/* "Wed, 21 Oct 2015 07:28:00 GMT" / "2015-10-21T07:28:00.000Z". 'out' >= 40 bytes. */
void s3_format_http_date(int64_t ns, char *out);
void s3_format_iso_date(int64_t ns, char *out);
/* URI percent-decoding (common/'s uri_decode) into a NUL-terminated copy
 * in arena 'a'. Returns false on a malformed escape. HTTP dates are parsed
 * with common/'s http_date_parse, URL encoding is common/'s uri_encode. */
bool s3_uri_decode(struct arena *a, struct slice in, struct slice *out);

/* XML output helpers. */
void xml_begin(struct buf *b, const char *root);
void xml_end(struct buf *b, const char *root);
void xml_escape(struct buf *b, struct slice s);
void xml_elem(struct buf *b, const char *name, struct slice value);
/* An element whose text is URL-encoded when 'is_url' (encoding-type=url). */
void xml_elem_key(struct buf *b, const char *name, struct slice value, bool is_url);
void xml_elem_str(struct buf *b, const char *name, const char *value);
void xml_elem_u64(struct buf *b, const char *name, uint64_t v);
void xml_elem_bool(struct buf *b, const char *name, bool v);
/* Builds a complete S3 error document. */
void xml_error(struct buf *b, const char *code, const char *message, struct slice resource,
               const char *request_id);

/* ---- object metadata (the opaque 'meta' blob of index_object) ----------- */

struct meta_entry {
    struct slice name; /* lower-case header name, e.g. "content-type", "x-amz-meta-foo" */
    struct slice value;
};
struct meta {
    struct meta_entry *entries;
    size_t n;
};
/* Encodes 'm' into the arena. */
void meta_encode(struct arena *a, const struct meta *m, const uint8_t **out, size_t *out_len);
/* Decodes; returns false when the blob is corrupt. */
bool meta_decode(struct arena *a, const uint8_t *p, size_t len, struct meta *out);
/* Returns the value of 'name' or an empty slice with ptr NULL. */
struct slice meta_get(const struct meta *m, const char *name);
/* Collects the storable headers of a request (Content-Type, x-amz-meta-*, ...).
 * Returns S3_OK or an error (metadata too large). */
enum s3_error meta_from_request(struct s3_req *r, struct meta *out);

/* ---- the HTTP front end ------------------------------------------------ */

int http_start(struct server *srv);
void http_stop(struct server *srv);

/* Converts storage extents to index extents and back (same layout). */
void s3_extents_to_storage(const struct index_extent *in, size_t n, struct storage_extent *out);

#endif
