/*
 * shard_int.h: what the files of client/ share and nothing outside sees.
 * Functions here use the client__ prefix (docs/DESIGN.md, "Conventions": shard_ is the public API).
 */
#ifndef SHARD_CLIENT_INT_H
#define SHARD_CLIENT_INT_H

#include "client/shard.h"
#include "common/common.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>

/* ---- configuration (config.c, ini.c) ------------------------------------ */

/* Everything resolved; strings owned by the struct (free with client__config_cleanup). */
struct client_config {
    char *endpoint_url;
    char *region;
    char *access_key;
    char *secret_key;
    char *session_token; /* NULL when none */
    char *profile;
    char *ca_bundle; /* PEM file of CAs to trust for https; NULL: the system's */
};

/* Receives one "key = value" of section 'section' ("" before the first section;
 * 'subsection' is non-empty for indented lines under "name =", as in
 * "s3 =\n  endpoint_url = ..."). Return 0 to go on. */
typedef int (*client_ini_fn)(void *ctx, const char *section, const char *subsection,
                             const char *key, const char *value);

/*
 * Parses the text of an aws-cli credentials/config file (INI: [section],
 * "key = value", '#'/';' comments, indented sub-keys). Names and values are
 * trimmed and truncated to 255 bytes. Returns 0, or the callback's non-zero
 * value. Never reads past 'len'; any bytes are accepted.
 */
int client__ini_parse(const char *text, size_t len, client_ini_fn fn, void *ctx);

/*
 * Resolves 'out' from 'in', the environment and the shared files (see
 * shard.h). Returns 0, or SHARD_ERR_CONFIG with 'err' filled.
 */
int client__config_resolve(const struct shard_config_in *in, struct client_config *out,
                           struct shard_error *err);
void client__config_cleanup(struct client_config *cfg);

/*
 * Splits an endpoint URL "http[s]://host[:port][/path]" into the scheme and
 * authority ("http://host:port"), the Host header value curl will send (the
 * port is dropped when it is the scheme's default), and the path prefix
 * without a trailing slash. Returns 0 or -1 (not http/https, no host, too long).
 */
int client__endpoint_parse(const char *url, char *scheme_host, size_t sh_cap, char *host,
                           size_t host_cap, char *base_path, size_t bp_cap);

/* ---- the client (client.c) ----------------------------------------------- */

struct shard_client {
    struct client_config cfg;
    struct shard_options opts;
    char scheme_host[512]; /* "http://127.0.0.1:9000" (no trailing slash) */
    char host[256];        /* Host header value as curl sends it */
    char base_path[256];   /* path prefix of the endpoint, "" or "/s3" */
    CURLSH *share;         /* DNS cache shared by every handle */
    pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
    pthread_mutex_t pool_lock;
    CURL **pool; /* idle easy handles (each keeps its connection alive) */
    size_t pool_len, pool_cap;
    /* RDMA (rdma.c): the fabric, opened on first use; state 0 untried,
     * 1 open, -1 unusable (then every transfer goes over HTTP). */
    pthread_mutex_t rdma_lock;
    struct transport_fabric *fabric;
    int rdma_state;
    struct shard_transport_stats rdma_stats;
};

/* Takes an idle handle from the pool (or makes one); give it back with
 * client__handle_put, which resets its options but keeps the connection. */
CURL *client__handle_get(struct shard_client *c);
void client__handle_put(struct shard_client *c, CURL *e);

/* ---- requests (request.c) ------------------------------------------------ */

#define CLIENT_UNSIGNED "UNSIGNED-PAYLOAD"
#define CLIENT_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* A request to sign and send. 'key' is raw (encoded here); 'query' is an
 * already-encoded query string without '?'; 'headers' are "Name: value". */
struct client_req {
    const char *method;
    const char *bucket; /* NULL for service-level requests */
    const char *key;    /* NULL or "" for bucket-level */
    const char *path;   /* instead of bucket and key: raw, from '/' (encoded here) */
    const char *query;  /* NULL or "" */
    const char *payload_hash;
    const char *headers[8];
    size_t n_headers;
};

/* A prepared request: URL and signed header list, owned by the struct. */
struct client_prepared {
    char *url;
    struct curl_slist *headers;
};

/*
 * Builds the URL and the signed headers of 'req' at the current time and
 * applies them (URL, headers, method) to 'e'. The caller sets the body and
 * the write callbacks. Returns 0 or -1 (signing failed: a bug or a huge input).
 */
int client__prepare(struct shard_client *c, CURL *e, const struct client_req *req,
                    struct client_prepared *p);
void client__prepared_cleanup(struct client_prepared *p);
/* Sets the timeouts and socket options every handle uses. */
void client__handle_defaults(struct shard_client *c, CURL *e);

/* The collected answer of client__perform. */
struct client_resp {
    long status;
    struct buf body; /* whole body when small (errors, XML); capped */
    char etag[80];   /* ETag header */
    uint64_t length; /* Content-Length */
    char last_modified[40];
    char content_range_total[24]; /* the "/N" of Content-Range */
    /* Optional: the body of a 2xx answer goes to 'sink' instead of 'body'
     * (a streamed answer); it returns 0 to go on. 'sunk' counts the bytes
     * it took: an attempt that failed after any is not retried. */
    int (*sink)(void *ctx, const void *data, size_t len);
    void *sink_ctx;
    long sink_buffer_len; /* curl's receive buffer for a long stream (0: its default) */
    uint64_t sunk;
    bool has_sink_failed;
    int rdma_reply; /* x-amz-rdma-reply, 0 when absent */
};
void client__resp_init(struct client_resp *r);
void client__resp_cleanup(struct client_resp *r);

/*
 * Sends 'req' with an optional in-memory body, collects the answer in
 * 'resp', and retries with backoff on network errors and 500/502/503/504.
 * Returns 0 on 2xx, or a negative error with 'err' filled (the S3 error body
 * parsed for SHARD_ERR_S3).
 */
int client__perform(struct shard_client *c, const struct client_req *req, const void *body,
                    size_t body_len, struct client_resp *resp, struct shard_error *err);

/* True for statuses worth retrying (500, 502, 503, 504) and transient curl codes. */
bool client__is_retryable_status(long status);
bool client__is_retryable_curl(CURLcode rc);
/* Sleeps the backoff of 'attempt' (1-based): base * 2^(attempt-1), at most 2 s, jittered. */
void client__backoff(const struct shard_client *c, unsigned attempt);
uint64_t client__backoff_ms(const struct shard_client *c, unsigned attempt);

/* Fills 'err' (when not NULL) and returns 'kind'. */
int client__err(struct shard_error *err, enum shard_errkind kind, long status, const char *code,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Fills 'err' from an S3 error response (XML body parsed with expat). */
int client__err_from_resp(struct shard_error *err, const struct client_resp *resp);
/* Fills 'err' from a curl failure. */
int client__err_curl(struct shard_error *err, CURLcode rc, const char *errbuf);

/* Base64 of the big-endian CRC32 of 'data' into 'out' (cap 16). */
void client__crc32_b64(const void *data, size_t len, char out[16]);

/* ---- tar members (member.c) ---------------------------------------------- */

/* Appends "member=ENCODED" (the query of a member request) to 'q'. */
void client__member_query(struct buf *q, const char *member);

/* ---- RDMA (rdma.c) ---------------------------------------------------------- */

/* Room for "x-amz-rdma-token: " and the longest token. */
#define CLIENT_RDMA_HDR_CAP 300
/* client__rdma_* asks the caller to send the request over HTTP instead. */
#define CLIENT_RDMA_FALLBACK 1
/* client__rdma_judge: not an RDMA answer (an error): report it as usual. */
#define CLIENT_RDMA_OTHER 2

struct transport_region;

/* Whether transfers should try RDMA now (transport not HTTP, fabric usable). */
bool client__rdma_wanted(struct shard_client *c);
/*
 * Registers [buf, buf+len) ('is_put': peers read it, else write it) and
 * formats its token header into 'hdr'. Returns 0 (release '*region' with
 * transport_region_destroy after the request), CLIENT_RDMA_FALLBACK (the
 * fabric is unusable under AUTO; counted) or a negative error (under RDMA).
 */
int client__rdma_prepare(struct shard_client *c, void *buf, size_t len, bool is_put,
                         struct transport_region **region, char hdr[CLIENT_RDMA_HDR_CAP],
                         struct shard_error *err);
/*
 * Judges the answer of a request that carried a token: 'status' and its
 * x-amz-rdma-reply. Returns 0 when the bytes moved over RDMA (counted with
 * 'len'), CLIENT_RDMA_FALLBACK when the request must be repeated over
 * HTTP (a decline under AUTO: counted), a negative error under RDMA
 * ('err' says RdmaDeclined), or CLIENT_RDMA_OTHER for any other answer
 * (an S3 error the caller reports as usual).
 */
int client__rdma_judge(struct shard_client *c, long status, int rdma_reply, uint64_t len,
                       struct shard_error *err);
/* Holds the fabric's progress thread on while a request is in flight. */
void client__rdma_hold(struct shard_client *c);
void client__rdma_release(struct shard_client *c);
/* Frees the fabric (client destroy). */
void client__rdma_cleanup(struct shard_client *c);

/* ---- XML answers (xml.c, expat) ----------------------------------------- */

/* Parses an S3 <Error> document: copies <Code> and <Message>. Returns 0 or -1. */
int client__xml_error(const char *xml, size_t len, char *code, size_t code_cap, char *message,
                      size_t message_cap);
/* Extracts the text of the first element named 'name' (e.g. "UploadId"). Returns 0 or -1. */
int client__xml_text(const char *xml, size_t len, const char *name, char *out, size_t cap);

/*
 * A ListObjectsV2 page parser. With 'fn' NULL it only counts Contents and
 * CommonPrefixes (the fast path of `shard bench list`); otherwise each entry
 * goes to 'fn', its key (or prefix) URI-decoded ('+' is a space) when the
 * page says <EncodingType>url</EncodingType>. Reusable across pages.
 */
struct client_list_parser;
struct client_list_parser *client__list_parser_create(shard_list_fn fn, void *ctx);
void client__list_parser_destroy(struct client_list_parser *p);
/* Parses one page. Returns 0 (or the callback's non-zero value), or -1 on bad XML. */
int client__list_parser_page(struct client_list_parser *p, const char *xml, size_t len);
/* After a page: entries seen, whether more pages follow, and the token. */
size_t client__list_parser_count(const struct client_list_parser *p);
bool client__list_parser_truncated(const struct client_list_parser *p);
const char *client__list_parser_token(const struct client_list_parser *p);

/*
 * The same parser for ListObjectVersions pages: 'fn' (NULL: count only) gets
 * each Version, DeleteMarker and CommonPrefixes entry, keys decoded as above.
 * client__list_parser_page, _count and _truncated work as for ListObjectsV2;
 * after a truncated page the next markers are client__list_parser_key_marker
 * (decoded) and client__list_parser_version_marker.
 */
struct client_list_parser *client__list_versions_parser_create(shard_version_fn fn, void *ctx);
const char *client__list_parser_key_marker(const struct client_list_parser *p);
const char *client__list_parser_version_marker(const struct client_list_parser *p);

/* Copies 'src[0..len)' URI-decoded the way S3 encodes listing keys ('+' is
 * a space; a '%' without two hex digits stays) into 'dst' (NUL-terminated,
 * truncated to 'cap' - 1 bytes). */
void client__uri_decode_form(char *dst, size_t cap, const char *src, size_t len);

/* ---- ListObjectVersions pages without expat (version_scan.c) ------------- */

/*
 * A ListVersionsResult scanner: the results of the expat parser of
 * client__list_versions_parser_create (same callbacks, counts and markers
 * for any page expat accepts), at a fraction of its cost. A page whose
 * prolog it does not read (DOCTYPE, an encoding other than UTF-8) is
 * handed to that expat parser. 'fn' NULL counts only. Reusable across
 * pages; one thread at a time.
 */
struct client_version_scan;
struct client_version_scan *client__version_scan_create(shard_version_fn fn, void *ctx);
void client__version_scan_destroy(struct client_version_scan *s);
/* Scans one page. Returns 0 (or the callback's non-zero value), or -1 when
 * the page is not well-formed (a cut page included). */
int client__version_scan_page(struct client_version_scan *s, const char *xml, size_t len);
/* Reads only what the next request needs (IsTruncated, NextKeyMarker,
 * NextVersionIdMarker), stopping at the first entry when they come before
 * the entries as S3 sends them, else reading the whole page. No callbacks;
 * the rest of the page is not checked. Returns 0 or -1. */
int client__version_scan_head(struct client_version_scan *s, const char *xml, size_t len);
/* After a page (or a head): entries seen (a head counts none), whether more
 * pages follow, and the next markers (the key marker decoded). */
size_t client__version_scan_count(const struct client_version_scan *s);
bool client__version_scan_truncated(const struct client_version_scan *s);
const char *client__version_scan_key_marker(const struct client_version_scan *s);
const char *client__version_scan_version_marker(const struct client_version_scan *s);

/*
 * Appends the query of a ListObjectVersions page to 'q' (canonical order,
 * values encoded, encoding-type=url). 'key_marker' and 'version_marker' are
 * NULL or "" on the first page; 'max_keys' 0 leaves the server's default.
 */
void client__list_versions_query(struct buf *q, const char *prefix, const char *delimiter,
                                 unsigned max_keys, const char *key_marker,
                                 const char *version_marker);

/*
 * ListObjectVersions of 'bucket' in pages of 'max_keys' (0: the server's
 * default), as shard_list_versions: with 'is_pipelined' the next page is
 * fetched by a second thread while one is scanned (what shard_list_versions
 * does, 1000 a page), else each page is asked for after the previous one
 * was scanned. Same results either way (tests/integration/test_shard_versions.py).
 */
int client__list_versions(struct shard_client *c, const char *bucket, const char *prefix,
                          const char *delimiter, unsigned max_keys, bool is_pipelined,
                          shard_version_fn fn, void *ctx, struct shard_error *err);

/* Parses a ListAllMyBucketsResult, calling 'fn' per bucket. Returns 0, fn's value, or -1. */
int client__xml_buckets(const char *xml, size_t len, shard_list_fn fn, void *ctx);

/* Parses a DeleteObjectsResult: number of <Error> entries, the first one's
 * key/code/message. Returns the count or -1. */
int client__xml_delete_result(const char *xml, size_t len, struct shard_error *first);

/*
 * Appends the query of a ListObjectsV2 page to 'q' (canonical order, values
 * encoded; always encoding-type=url). 'prefix', 'delimiter' and 'token' may be
 * NULL or ""; 'max_keys' 0 leaves the server's default.
 */
void client__list_query(struct buf *q, const char *prefix, const char *delimiter, unsigned max_keys,
                        const char *token);

/*
 * Fetches one ListObjectsV2 page into 'resp' (reused) and parses it with 'p'.
 * 'token' is the continuation token or NULL. Used by shard_list and the bench.
 */
int client__list_page(struct shard_client *c, const char *bucket, const char *prefix,
                      const char *delimiter, unsigned max_keys, const char *token,
                      struct client_list_parser *p, struct client_resp *resp,
                      struct shard_error *err);

#endif
