/*
 * shard.h: libshard, the shardstore client library. The whole public
 * interface of client/ (the only installed header of the project).
 *
 * libshard talks S3 over HTTP(S) with libcurl to any S3 endpoint (path-style
 * addressing, SigV4 signed with the signer auth/ uses to verify). It reads
 * objects as N parallel range requests delivered in order through a bounded
 * window, writes them as parallel multipart uploads with CRC32 part checksums,
 * and lists, heads and deletes. Endpoint, region and credentials are resolved
 * the way aws-cli resolves them.
 *
 * Threading: a struct shard_client may be used from several threads at once
 * (it keeps a locked pool of keep-alive connections). A struct shard_reader
 * belongs to one thread. Every call that can fail returns 0 (or a byte count)
 * on success and a negative enum shard_errkind on failure, and fills the
 * caller's struct shard_error when it is not NULL.
 */
#ifndef SHARD_CLIENT_H
#define SHARD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHARD_API __attribute__((visibility("default")))

/* ---- errors ------------------------------------------------------------- */

enum shard_errkind {
    SHARD_OK = 0,
    SHARD_ERR_S3 = -1,     /* the server answered an error (http_status, code, message) */
    SHARD_ERR_NET = -2,    /* connection, timeout, or retries exhausted on 5xx/short reads */
    SHARD_ERR_IO = -3,     /* local file or stream I/O */
    SHARD_ERR_ARG = -4,    /* bad argument (URL, option, range beyond the object) */
    SHARD_ERR_CONFIG = -5, /* missing credentials or unusable configuration */
    SHARD_ERR_PROTO = -6,  /* the server's answer made no sense (bad XML, wrong length) */
    SHARD_ERR_FORMAT = -7, /* the data is not in the format asked for (shard_tar_*: code
                            * "MalformedTar", not a readable tar archive) */
};

struct shard_error {
    enum shard_errkind kind;
    long http_status; /* 0 when no HTTP answer */
    char code[64];    /* S3 <Code>, or a short word for other kinds ("Timeout", "ENOENT") */
    char message[512];
};

/* ---- configuration ------------------------------------------------------ */

/*
 * What the caller says explicitly (flags); NULL fields are resolved from the
 * environment and the shared files like aws-cli does:
 *   profile:     'profile', else $AWS_PROFILE, else "default". An explicit
 *                'profile' makes the environment keys be ignored (botocore).
 *   credentials: 'access_key'/'secret_key'[/'session_token'] when both are set,
 *                else $AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY[/$AWS_SESSION_TOKEN],
 *                else [profile] of $AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials),
 *                else [profile NAME] / [default] of $AWS_CONFIG_FILE (~/.aws/config).
 *   region:      'region', $AWS_REGION, $AWS_DEFAULT_REGION, config 'region', "us-east-1".
 *   endpoint:    'endpoint_url', $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, config
 *                's3 = endpoint_url' then 'endpoint_url', else https://s3.REGION.amazonaws.com.
 *   CA bundle:   $AWS_CA_BUNDLE, config 'ca_bundle' (a PEM file of CAs trusted for
 *                https endpoints), else the system's trust store.
 */
struct shard_config_in {
    const char *endpoint_url;
    const char *profile;
    const char *region;
    const char *access_key; /* explicit credentials: used when both are set */
    const char *secret_key;
    const char *session_token; /* with them; may be NULL */
};

/* How object bytes move (RDMA fast path, docs/DESIGN.md). */
enum shard_transport {
    SHARD_TRANSPORT_HTTP = 0, /* the HTTP body (the default) */
    SHARD_TRANSPORT_AUTO,     /* RDMA while the endpoint serves it, else HTTP (counted) */
    SHARD_TRANSPORT_RDMA,     /* RDMA only: a decline or transport error is an error */
};

/* Transfer tuning; zero fields take the defaults shown. */
struct shard_options {
    unsigned parallel;           /* connections per transfer (8) */
    uint64_t chunk_size;         /* range size for streaming reads (1 MiB) */
    uint64_t part_size;          /* multipart part size; smaller uploads are one PUT (8 MiB) */
    unsigned max_retries;        /* per request (8) */
    unsigned retry_base_ms;      /* first backoff; doubles up to 2 s (50) */
    unsigned connect_timeout_ms; /* (10000) */
    unsigned stall_timeout_ms;   /* abort a transfer that moves no byte for this long (30000) */
    /* RDMA: shard_read_range, shard_put_buffer and the parts of shard_put_fd
     * move their bytes one-sided into or out of registered memory. */
    enum shard_transport transport;
    const char *rdma_provider; /* NULL: $AWS_RDMA_PROVIDER, else "auto" (shm, verbs, efa) */
    const char *rdma_address;  /* address to bind (tcp: 127.0.0.1); NULL: $AWS_RDMA_ADDRESS */
};

struct shard_client;

/*
 * Creates a client from 'in' (may be NULL) and 'opts' (may be NULL). Returns
 * NULL with 'err' kind SHARD_ERR_CONFIG when no credentials are found or the
 * endpoint URL is unusable. Destroy with shard_client_destroy.
 */
SHARD_API struct shard_client *shard_client_create(const struct shard_config_in *in,
                                                   const struct shard_options *opts,
                                                   struct shard_error *err);
/* Frees the client and its connections. NULL is a no-op. */
SHARD_API void shard_client_destroy(struct shard_client *c);
/* The resolved endpoint ("http://127.0.0.1:9000") and region; borrowed from 'c'. */
SHARD_API const char *shard_client_endpoint(const struct shard_client *c);
SHARD_API const char *shard_client_region(const struct shard_client *c);
/* The effective options (defaults filled in); borrowed from 'c'. */
SHARD_API const struct shard_options *shard_client_options(const struct shard_client *c);

/* What moved how since the client was created (RDMA fast path). */
struct shard_transport_stats {
    uint64_t rdma_requests;  /* requests whose bytes moved over RDMA */
    uint64_t rdma_bytes;     /* those bytes */
    uint64_t http_fallbacks; /* requests repeated over HTTP (declined or transport error) */
    char last_fallback[160]; /* why the last fallback happened ("" none) */
};
/* Fills 'out'. Thread-safe. */
SHARD_API void shard_client_transport_stats(struct shard_client *c,
                                            struct shard_transport_stats *out);

/* ---- small operations ---------------------------------------------------- */

struct shard_object_info {
    uint64_t size;
    char etag[80];          /* with its quotes, as sent */
    char last_modified[40]; /* ISO-8601 in listings, HTTP date from HEAD */
};

/* HEAD: fills 'out'. SHARD_ERR_S3 with http_status 404 (code "NotFound") when absent. */
SHARD_API int shard_head(struct shard_client *c, const char *bucket, const char *key,
                         struct shard_object_info *out, struct shard_error *err);
/* DeleteObject (S3 answers 204 also when the key did not exist). */
SHARD_API int shard_delete(struct shard_client *c, const char *bucket, const char *key,
                           struct shard_error *err);
/*
 * DeleteObjects of 'keys[0..n)' (any n: sent 1000 at a time, with Content-MD5;
 * a key with a control character XML cannot carry is deleted on its own).
 * Returns the number of keys the server reported as failed (>= 0; the first
 * one's code and message are in 'err'), or a negative error.
 */
SHARD_API int shard_delete_many(struct shard_client *c, const char *bucket, const char *const *keys,
                                size_t n, struct shard_error *err);
/* CreateBucket (with a LocationConstraint unless the region is us-east-1) and DeleteBucket. */
SHARD_API int shard_bucket_create(struct shard_client *c, const char *bucket,
                                  struct shard_error *err);
SHARD_API int shard_bucket_delete(struct shard_client *c, const char *bucket,
                                  struct shard_error *err);

/* ---- listing ------------------------------------------------------------- */

struct shard_list_entry {
    const char *key; /* NUL-terminated; borrowed for the duration of the callback */
    bool is_prefix;  /* a CommonPrefixes entry: only 'key' is set */
    struct shard_object_info info;
};

/* Receives one entry; return 0 to continue, non-zero to stop the listing
 * (shard_list then returns that value). */
typedef int (*shard_list_fn)(void *ctx, const struct shard_list_entry *e);

/*
 * ListObjectsV2 of 'bucket' under 'prefix' (NULL or "" for all) grouped by
 * 'delimiter' (NULL for none), every page, entries in the server's order.
 * Pages are asked for with encoding-type=url and their keys decoded, so a
 * key holding any byte (a control character, '%', '+') lists as it is.
 * Returns 0, the callback's non-zero value, or a negative error.
 */
SHARD_API int shard_list(struct shard_client *c, const char *bucket, const char *prefix,
                         const char *delimiter, shard_list_fn fn, void *ctx,
                         struct shard_error *err);

/* One entry of a ListObjectVersions page. */
struct shard_version_entry {
    const char *key;        /* NUL-terminated; borrowed for the duration of the callback */
    const char *version_id; /* "null" for the null version, "" for a prefix; borrowed */
    bool is_prefix;         /* a CommonPrefixes entry: only 'key' is set */
    bool is_latest;         /* the key's current version (or delete marker) */
    bool is_delete_marker;  /* a delete marker: info.size 0, info.etag "" */
    struct shard_object_info info;
};

/* Receives one version; return 0 to continue, non-zero to stop the listing
 * (shard_list_versions then returns that value). */
typedef int (*shard_version_fn)(void *ctx, const struct shard_version_entry *e);

/*
 * ListObjectVersions of 'bucket' under 'prefix' (NULL or "" for all) grouped
 * by 'delimiter' (NULL for none), every page (1000 entries each, paged with
 * key-marker and version-id-marker), calling 'fn' per version, delete marker
 * and common prefix. Versions and delete markers come in the server's order
 * (key order, newest first within a key); a page's CommonPrefixes follow its
 * versions. Keys are asked for with encoding-type=url and decoded, as in
 * shard_list. A bucket never versioned lists each object once, version
 * "null". While 'fn' gets the entries of one page, a second thread of the
 * client already fetches the next (on one connection, in order); 'fn' is
 * always called on the caller's thread, and once it stops the listing
 * nothing is fetched after the request in flight. Returns 0, the callback's
 * non-zero value, or a negative error.
 */
SHARD_API int shard_list_versions(struct shard_client *c, const char *bucket, const char *prefix,
                                  const char *delimiter, shard_version_fn fn, void *ctx,
                                  struct shard_error *err);

/* Lists the buckets of the account: each entry's 'key' is a bucket name and
 * 'info.last_modified' its creation date. Returns like shard_list. */
SHARD_API int shard_list_buckets(struct shard_client *c, shard_list_fn fn, void *ctx,
                                 struct shard_error *err);

/* ---- reading ------------------------------------------------------------- */

struct shard_reader;

/*
 * Opens a streaming read of 'len' bytes at 'off' of the object (len
 * UINT64_MAX: to the end). The size and ETag come from one HEAD; every range
 * request carries If-Match with that ETag, so a retried range can never mix
 * two versions. 'opts' overrides the client's parallel/chunk_size (may be
 * NULL). Memory held is parallel * chunk_size whatever the object size.
 * Returns NULL and fills 'err' on failure (SHARD_ERR_ARG when 'off' is past
 * the end). Close with shard_reader_close.
 */
SHARD_API struct shard_reader *shard_reader_open(struct shard_client *c, const char *bucket,
                                                 const char *key, uint64_t off, uint64_t len,
                                                 const struct shard_options *opts,
                                                 struct shard_error *err);
/* Bytes the reader will deliver in total, and the object's full size. */
SHARD_API uint64_t shard_reader_length(const struct shard_reader *r);
SHARD_API uint64_t shard_reader_object_size(const struct shard_reader *r);
/*
 * Delivers the next bytes in order without copying: '*ptr' and '*len' point
 * into the reader's window and stay valid until the next call on 'r'.
 * Returns 1 with data, 0 at the end, or a negative error (then 'err' is set).
 * Failed ranges are retried with backoff from the first byte not yet
 * received, so no byte is ever delivered twice.
 */
SHARD_API int shard_reader_next(struct shard_reader *r, const void **ptr, size_t *len,
                                struct shard_error *err);
/* Copies up to 'cap' bytes into 'buf'. Returns the count (0 at the end) or a negative error. */
SHARD_API long shard_reader_read(struct shard_reader *r, void *buf, size_t cap,
                                 struct shard_error *err);
/* Frees the reader (aborting its requests). NULL is a no-op. */
SHARD_API void shard_reader_close(struct shard_reader *r);

/*
 * Reads exactly 'len' bytes at 'off' into 'buf' (caller-owned, 'len' bytes),
 * as parallel ranges of the client's chunk size written in place. With the
 * RDMA transport 'buf' is registered and the server writes the range into
 * it directly (one request; zero copy on the client), falling back to HTTP
 * under SHARD_TRANSPORT_AUTO. Returns 0, or a negative error
 * (SHARD_ERR_ARG when the range passes the end; SHARD_ERR_NET with code
 * "RdmaDeclined" under SHARD_TRANSPORT_RDMA when the server declines).
 */
SHARD_API int shard_read_range(struct shard_client *c, const char *bucket, const char *key,
                               uint64_t off, uint64_t len, void *buf, struct shard_error *err);

/* ---- writing ------------------------------------------------------------- */

/* Called after each byte count moved (uploads and downloads); may be NULL. */
typedef void (*shard_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/*
 * Uploads the object from file descriptor 'fd'. With 'size' known
 * (regular file, pass its size) parts are read with pread in parallel; with
 * size UINT64_MAX 'fd' is read sequentially as a stream (stdin, a pipe) and
 * parallel part buffers hold part_size bytes each. Below the part size the
 * object is one PUT; otherwise a multipart upload with a CRC32 checksum per
 * part (CreateMultipartUpload with x-amz-checksum-algorithm CRC32), aborted on
 * any failure. Returns 0 or a negative error.
 */
SHARD_API int shard_put_fd(struct shard_client *c, const char *bucket, const char *key, int fd,
                           uint64_t size, const struct shard_options *opts,
                           shard_progress_fn progress, void *progress_ctx, struct shard_error *err);
/* One PUT of 'len' bytes from memory (with x-amz-checksum-crc32). */
SHARD_API int shard_put_buffer(struct shard_client *c, const char *bucket, const char *key,
                               const void *data, size_t len, struct shard_error *err);

/* ---- tar members and batch GET (shardstore extensions) -------------------- */

/* One member of a tar object, as the server's member index lists it. */
struct shard_member {
    const char *name; /* NUL-terminated; borrowed for the duration of the callback */
    uint64_t offset;  /* of its data in the object */
    uint64_t size;
    uint32_t mode;
    int64_t mtime_s;
};

/* Receives one member; return 0 to continue, non-zero to stop (the listing
 * then returns that value). */
typedef int (*shard_member_fn)(void *ctx, const struct shard_member *m);

/* HEAD ?member=: fills 'out' with the member's size and the object's ETag.
 * SHARD_ERR_S3 with http_status 404 when the object or the member is
 * absent, 400 when the object is no readable tar. */
SHARD_API int shard_member_head(struct shard_client *c, const char *bucket, const char *key,
                                const char *member, struct shard_object_info *out,
                                struct shard_error *err);
/*
 * GET ?member=: reads 'len' bytes at 'off' of member 'member' of the tar
 * object (len UINT64_MAX: to the end) into 'buf' (caller-owned, 'cap'
 * bytes), in one request. Returns the byte count (which is the member's
 * size when reading it whole), or a negative error: SHARD_ERR_ARG when
 * the answer does not fit 'cap' or 'off' is past the end, SHARD_ERR_S3
 * (404 NoSuchMember / NoSuchKey, 400 InvalidArchive).
 */
SHARD_API long shard_member_get(struct shard_client *c, const char *bucket, const char *key,
                                const char *member, uint64_t off, uint64_t len, void *buf,
                                size_t cap, struct shard_error *err);
/*
 * Opens a streaming read of member 'member' of the tar object, as
 * shard_reader_open does for an object: parallel ranges of the member
 * (?member= with Range), each with If-Match on the object's ETag. Read it
 * with shard_reader_next / shard_reader_read; shard_reader_object_size
 * gives the member's size. Returns NULL and fills 'err' on failure.
 */
SHARD_API struct shard_reader *shard_member_reader_open(struct shard_client *c, const char *bucket,
                                                        const char *key, const char *member,
                                                        uint64_t off, uint64_t len,
                                                        const struct shard_options *opts,
                                                        struct shard_error *err);
/*
 * Lists the members of the tar object in archive order from the one after
 * 'marker' (NULL or "": from the first), a page of up to 1000 per request
 * (?list-members with encoding-type=url: any name lists as it is), calling
 * 'fn' for each. Returns 0, the callback's non-zero value, or a negative
 * error (SHARD_ERR_S3 400 InvalidArchive for an object that is no tar).
 */
SHARD_API int shard_member_list(struct shard_client *c, const char *bucket, const char *key,
                                const char *marker, shard_member_fn fn, void *ctx,
                                struct shard_error *err);

/* One entry of a batch GET: an object, or a member of a tar object, whole
 * or a range ("bytes=0-99", as the Range header). */
struct shard_batch_entry {
    const char *key;
    const char *member; /* NULL: the object itself */
    const char *range;  /* NULL: all of it */
};

/* Receives the next 'len' bytes of a streamed answer; return 0 to go on. */
typedef int (*shard_write_fn)(void *ctx, const void *data, size_t len);

/*
 * Batch GET (POST /bucket?batch) of 'entries[0..n)' (1 to 10000): the
 * answer, one tar whose members are the entries in order (named "key" or
 * "key/member"), is streamed to 'fn' as it arrives. With
 * 'continue_on_error' a failed entry comes as a member "__error__/NAME"
 * holding the S3 error document; without, a failing first entry is
 * SHARD_ERR_S3, and a later one cuts the stream (SHARD_ERR_NET, after
 * 'fn' got the entries before it). Retried only until 'fn' got its first
 * byte. Returns 0, SHARD_ERR_IO when 'fn' failed, or a negative error.
 */
SHARD_API int shard_batch_get(struct shard_client *c, const char *bucket,
                              const struct shard_batch_entry *entries, size_t n,
                              bool continue_on_error, shard_write_fn fn, void *ctx,
                              struct shard_error *err);

/* ---- tar member reader ----------------------------------------------------- */

/*
 * A tar member reader hands out the regular files of a streamed tar
 * archive whole, many per call, parsed in C (the parser of the server's
 * member indexes: ustar, pax path/size/mtime, GNU long names; directories,
 * links and devices are not members; unknown types are skipped; GNU sparse
 * and multi-volume entries, bad checksums and numbers, names over 4096
 * bytes and truncated input are malformed). The bytes come from a
 * shard_reader (shard_tar_read: the parallel range reader) or from the
 * caller in pieces of any size (shard_tar_input, shard_tar_next). A
 * member's data is a pointer into the piece that holds it whole, with no
 * copy, or, when it runs over pieces, into the reader's own buffer, copied
 * once. A reader belongs to one thread.
 */
struct shard_tar;

/* One member. Every field is 8 bytes wide (a binding may read an array of
 * them as integers, 5 per member). Pointers stay valid until the next call
 * on the reader (or its destruction). The data of the members one call
 * hands out, but for the first, lie in one input piece in archive order
 * (a binding may view that run once and slice it); the first may be in
 * the reader's own buffer instead, as may any empty member's. */
struct shard_tar_member {
    const char *name;       /* 'name_len' bytes, then a NUL (a pax name may hold NULs
                             * too, and need not be UTF-8) */
    uint64_t name_len;      /* 1..4096 */
    const void *data;       /* 'size' bytes */
    uint64_t size;          /* data bytes */
    uint64_t header_offset; /* of its first header in the archive (a pax or GNU long name
                             * header when it has one; 'base' included): reading
                             * again from there gives this member first */
};

/* Creates a reader for an archive whose next byte is at offset 'base'
 * (0, or where an earlier read stopped: a member's header_offset). Destroy
 * with shard_tar_destroy. */
SHARD_API struct shard_tar *shard_tar_create(uint64_t base);
/* Frees the reader. NULL is a no-op. */
SHARD_API void shard_tar_destroy(struct shard_tar *t);
/*
 * Hands the next 'len' bytes of the archive to 't' (borrowed until
 * shard_tar_next has used them up: it returned 0 or an error); 'len' 0
 * ends the input. Returns 0, or SHARD_ERR_ARG when the last piece is not
 * used up yet or the input had ended.
 */
SHARD_API int shard_tar_input(struct shard_tar *t, const void *data, size_t len,
                              struct shard_error *err);
/*
 * Fills 'out[0..cap)' with the next members whose data the input holds
 * whole. Returns their count (> 0); 0 when the input given is used up
 * (feed more with shard_tar_input) or, once the input has ended, when the
 * archive ended whole (an end block, or right after an entry's data); or
 * a negative error: SHARD_ERR_FORMAT (code "MalformedTar"; see
 * shard_tar_error) when the archive is malformed or ends inside an entry,
 * SHARD_ERR_IO when a member's data does not fit in memory, SHARD_ERR_ARG
 * for 'cap' 0. Members before the damage are handed out first; errors are
 * sticky.
 */
SHARD_API int shard_tar_next(struct shard_tar *t, struct shard_tar_member *out, size_t cap,
                             struct shard_error *err);
/*
 * As shard_tar_next with the input read from 'r' (shard_reader_open at
 * 'base'; 'r' stays the caller's, to close after 't' is done with it, and
 * must not be read otherwise meanwhile): pieces are taken with
 * shard_reader_next as needed, so members are pointers into the reader's
 * window. Returns the count (> 0), 0 when the archive ended whole, or a
 * negative error: the reader's (SHARD_ERR_NET ... : the members handed out
 * before it are whole, and reading again from the header_offset after the
 * last one resumes) or shard_tar_next's. Reading stops at the end block.
 */
SHARD_API int shard_tar_read(struct shard_tar *t, struct shard_reader *r,
                             struct shard_tar_member *out, size_t cap, struct shard_error *err);
/* After SHARD_ERR_FORMAT: why the archive is unreadable ("bad header
 * checksum", "truncated header", ...; static) and, in '*offset' (may be
 * NULL), the archive offset of the header at fault or where the input
 * ended. NULL when the reader has no such error. */
SHARD_API const char *shard_tar_error(const struct shard_tar *t, uint64_t *offset);

/* ---- any request ---------------------------------------------------------- */

/* One query parameter, not encoded ('value' NULL for a bare name: "?uploads"). */
struct shard_param {
    const char *name;
    const char *value;
};

/* The answer of shard_request. */
struct shard_response {
    long http_status;
    char *body; /* the whole body, NUL-terminated; owned (shard_response_cleanup) */
    size_t body_len;
};

/*
 * Sends one signed request for what the calls above do not cover (the
 * shardstore admin API under /_/admin/, sub-resources): 'method' ("GET",
 * "PUT", "POST", "DELETE", "HEAD"), 'path' from the endpoint on, starting
 * with '/' ("/bucket/key", "/_/admin/users"; URI-encoded here, '/' kept),
 * the query 'params[0..n_params)' (encoded here) and an optional body of
 * 'body_len' bytes (its SHA-256 is signed). Retried like every call on
 * network errors and 500/502/503/504 (max_retries). Returns 0 on a 2xx
 * answer, else a negative error (SHARD_ERR_S3 with the status, code and
 * message of the answer; SHARD_ERR_ARG for a path without '/'). 'resp'
 * (may be NULL) gets the last answer in both cases (status 0 when none);
 * free it with shard_response_cleanup. Answers over 64 MiB are cut.
 */
SHARD_API int shard_request(struct shard_client *c, const char *method, const char *path,
                            const struct shard_param *params, size_t n_params, const void *body,
                            size_t body_len, struct shard_response *resp, struct shard_error *err);
/* Wipes and frees the body of 'resp' (it may hold a secret key). NULL is a no-op. */
SHARD_API void shard_response_cleanup(struct shard_response *resp);

/* ---- helpers shared with the CLI ----------------------------------------- */

/*
 * Parses "s3://bucket[/key]" into 'bucket' (cap 64) and 'key' (cap 1025;
 * empty when absent). Returns 0, or -1 for anything else (no scheme, empty or
 * invalid bucket name, key too long).
 */
SHARD_API int shard_parse_s3_url(const char *url, char bucket[64], char key[1025]);
/* Name of an error kind ("S3 error", "network error", ...). */
SHARD_API const char *shard_errkind_name(enum shard_errkind kind);

#endif
