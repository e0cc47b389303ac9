/*
 * auth.h: AWS Signature Version 4, aws-chunked payload decoding and payload
 * checksums. The whole interface of auth/.
 *
 * auth/ is pure: it sees a small request view (method, raw path, raw query,
 * headers, the current time) and a callback to look up a secret; it owns no
 * clock, socket or HTTP library type. The same code signs in client/ and
 * verifies in server/, and is fuzzable. OpenSSL is used only inside auth/.
 * All functions are thread-safe (no global mutable state after init).
 */
#ifndef SHARD_AUTH_H
#define SHARD_AUTH_H

#include "common/common.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- request view ------------------------------------------------------ */

struct auth_header {
    struct slice name; /* any case */
    struct slice value;
};

struct auth_request {
    struct slice method; /* "GET", "PUT", ... */
    struct slice path;   /* raw request path exactly as on the wire (still %-encoded) */
    struct slice query;  /* raw query string without '?' (still %-encoded), may be empty */
    const struct auth_header *headers;
    size_t n_headers;
    int64_t now_s;      /* current Unix time, seconds */
    const char *region; /* the server's region, e.g. "us-east-1" */
};

/* Looks up the secret of 'access_key'. Copies it NUL-terminated into
 * 'secret' (capacity 'cap') and returns 0, or returns -1 when the key is
 * unknown. Called at most once per verification. */
typedef int (*auth_secret_fn)(void *ctx, struct slice access_key, char *secret, size_t cap);

enum auth_result {
    AUTH_OK,
    AUTH_ANONYMOUS,     /* no Authorization header and no X-Amz-Signature: unsigned request */
    AUTH_MALFORMED,     /* Authorization header/query unparsable or missing parts:
                           AuthorizationHeaderMalformed / AuthorizationQueryParametersError */
    AUTH_UNSUPPORTED,   /* SigV2 or another algorithm than AWS4-HMAC-SHA256 */
    AUTH_UNKNOWN_KEY,   /* InvalidAccessKeyId */
    AUTH_BAD_SIGNATURE, /* SignatureDoesNotMatch */
    AUTH_SKEWED,        /* header auth: |x-amz-date - now| > 15 min: RequestTimeTooSkewed */
    AUTH_EXPIRED,       /* presigned: now > X-Amz-Date + X-Amz-Expires, or X-Amz-Expires 0:
                           AccessDenied "Request has expired" */
    AUTH_BAD_EXPIRES,   /* presigned: X-Amz-Expires not a number in 0..604800 (a missing one is
                           AUTH_MALFORMED): AccessDenied, as S3 answers */
    AUTH_BAD_REGION,    /* credential scope names another region: AuthorizationHeaderMalformed */
    AUTH_HEADERS_NOT_SIGNED, /* host is not in SignedHeaders, or an x-amz-* header is present
                                but not in SignedHeaders (it could change what the request does,
                                e.g. x-amz-copy-source added to a presigned PUT): AccessDenied,
                                as S3 answers */
    AUTH_PARAMS_NOT_SIGNED,  /* SigV2 presigned URL with a query parameter SigV2 does not sign
                                (only sub-resources, response-* overrides and its own
                                parameters may appear): AccessDenied */
};

/* How the body is protected, from x-amz-content-sha256. */
enum auth_payload {
    AUTH_PAYLOAD_HASH,             /* hex SHA-256 of the body: verify when the body is read */
    AUTH_PAYLOAD_UNSIGNED,         /* UNSIGNED-PAYLOAD (always for presigned URLs) */
    AUTH_PAYLOAD_STREAMING_SIGNED, /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
    AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER,   /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
    AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER, /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
};

/* What a successful verification learned. Plain data, copyable. */
struct auth_verdict {
    enum auth_payload payload;
    bool is_presigned;
    uint8_t payload_sha256[32]; /* valid when payload == AUTH_PAYLOAD_HASH */
    char access_key[129];       /* NUL-terminated */
    /* For streaming signed payloads: the state needed to verify chunk signatures. */
    uint8_t signing_key[32];
    char seed_signature[65]; /* hex signature of the request (NUL-terminated) */
    char amz_date[17];       /* "YYYYMMDDTHHMMSSZ" */
    char scope[160];         /* "YYYYMMDD/region/s3/aws4_request" */
};

/*
 * Verifies SigV4 in the Authorization header or in the query string
 * (presigned). Also enforces the clock-skew and expiry rules. Returns
 * AUTH_OK and fills 'out', or another auth_result ('out' then undefined).
 * The signature comparison is constant time. Never logs the secret.
 */
enum auth_result auth_sigv4_verify(const struct auth_request *req, auth_secret_fn lookup, void *ctx,
                                   struct auth_verdict *out);

/* The longest a SigV2 URL may be valid: Expires at most this far ahead. */
#define AUTH_SIGV2_MAX_EXPIRES_S 604800

/*
 * Verifies a SigV2 presigned URL (query AWSAccessKeyId, Expires,
 * Signature), as aws-cli v1 `aws s3 presign` and boto3's default presigner
 * make them. 'bucket_prefix' is "/bucket" for a virtual-hosted request
 * (the bucket is then not in the path), else empty. Returns AUTH_OK (the
 * verdict says UNSIGNED-PAYLOAD, presigned), AUTH_MALFORMED (a part
 * missing), AUTH_BAD_EXPIRES (Expires not a number, or more than
 * AUTH_SIGV2_MAX_EXPIRES_S after 'req->now_s'), AUTH_PARAMS_NOT_SIGNED (a
 * query parameter SigV2 does not sign, an escaped or repeated name),
 * AUTH_UNKNOWN_KEY, AUTH_BAD_SIGNATURE or AUTH_EXPIRED. Constant-time
 * comparison; the secret is wiped after use.
 */
enum auth_result auth_sigv2_verify_query(const struct auth_request *req, struct slice bucket_prefix,
                                         auth_secret_fn lookup, void *ctx,
                                         struct auth_verdict *out);
/* Computes the SigV2 query signature (base64, NUL-terminated) of 'req' for
 * 'expires' (Unix seconds). For tests and clients. Returns 0 or -1. */
int auth_sigv2_presign(const struct auth_request *req, struct slice bucket_prefix,
                       const char *secret, int64_t expires, char out[32]);

/* Human-readable name of a result, for logs ("SignatureDoesNotMatch", ...). */
const char *auth_result_name(enum auth_result r);

/* Constant-time comparison of two byte runs; returns true when equal. */
bool auth_equal_ct(const void *a, const void *b, size_t len);

/*
 * Signs a request (the client side, and the tests). 'req->headers' must
 * already hold host, x-amz-date ("YYYYMMDDTHHMMSSZ") and x-amz-content-sha256;
 * every header in it is signed. Writes the Authorization header value
 * (NUL-terminated) into 'out' of capacity 'cap'. Returns 0, or -1 when 'cap'
 * is too small or a required header is missing.
 */
int auth_sigv4_sign(const struct auth_request *req, const char *access_key, const char *secret,
                    char *out, size_t cap);

/*
 * Builds a presigned URL query string (X-Amz-Algorithm ... X-Amz-Signature)
 * for 'req' (method, path, host header, any existing query), valid for
 * 'expires_s' seconds from 'req->now_s'. Writes the complete query string
 * (NUL-terminated, without '?') into 'out'. Returns 0 or -1 (cap too small).
 */
int auth_sigv4_presign(const struct auth_request *req, const char *access_key, const char *secret,
                       int64_t expires_s, char *out, size_t cap);

/* ---- aws-chunked payload decoding -------------------------------------- */

/*
 * A resumable decoder for Content-Encoding: aws-chunked bodies:
 *   hex-size[;chunk-signature=sig]\r\n data \r\n ... 0[;chunk-signature=sig]\r\n
 *   [trailer-name:value\r\n ... [x-amz-trailer-signature:sig\r\n]] \r\n
 * Chunk signatures are verified when the payload mode is signed; the
 * trailer signature when it is signed with trailer. The caller owns the
 * struct; no allocation. Feeding byte by byte gives the same result as
 * feeding whole.
 */
#define AUTH_CHUNKED_MAX_TRAILERS 4

enum auth_chunked_status {
    AUTH_CHUNKED_AGAIN,         /* all input consumed, need more */
    AUTH_CHUNKED_DONE,          /* final chunk and trailers read; input after it is not consumed */
    AUTH_CHUNKED_ERROR,         /* bad framing (IncompleteBody / InvalidRequest) */
    AUTH_CHUNKED_BAD_SIGNATURE, /* a chunk or trailer signature did not verify */
};

struct auth_chunked {
    /* private state; initialize with auth_chunked_init */
    int state;
    bool is_signed;
    bool has_trailer;
    bool trailer_signed;
    uint64_t chunk_left;
    uint64_t decoded_total;
    char line[256];
    size_t line_len;
    char prev_signature[65];
    char chunk_signature[65];
    uint8_t signing_key[32];
    char amz_date[17];
    char scope[160];
    void *sha; /* in-progress SHA-256 of the current chunk (opaque) */
    unsigned char sha_space[256];
    size_t n_trailers;
    char trailer_name[AUTH_CHUNKED_MAX_TRAILERS][64];
    char trailer_value[AUTH_CHUNKED_MAX_TRAILERS][128];
    char trailer_block[2 * AUTH_CHUNKED_MAX_TRAILERS * 200];
    size_t trailer_block_len;
};

/* Prepares 'c' for the payload mode in 'v' (must be one of the STREAMING modes). */
void auth_chunked_init(struct auth_chunked *c, const struct auth_verdict *v);

/* Receives decoded payload bytes; returns 0 to continue or non-zero to stop
 * (auth_chunked_feed then returns AUTH_CHUNKED_ERROR). */
typedef int (*auth_data_fn)(void *ctx, const char *data, size_t len);

/*
 * Decodes 'in[0..len)'. Decoded payload is handed to 'fn' in order (the
 * pieces point into 'in'). '*consumed' gets the bytes consumed (all of them
 * unless DONE or an error).
 */
enum auth_chunked_status auth_chunked_feed(struct auth_chunked *c, const char *in, size_t len,
                                           size_t *consumed, auth_data_fn fn, void *ctx);

/* After DONE: the trailer value of 'name' (case-insensitive), or an empty
 * slice when absent. Borrowed from 'c'. */
struct slice auth_chunked_trailer(const struct auth_chunked *c, const char *name);

/* Bytes of payload decoded so far. */
uint64_t auth_chunked_decoded_len(const struct auth_chunked *c);

/*
 * Says whether the body may end here (end of input now is acceptable):
 * true after DONE, and also when the last chunk and the trailer lines
 * (and, in signed-trailer mode, a verified x-amz-trailer-signature) were
 * read but the final empty line was not, which some clients omit. The
 * trailers are then available through auth_chunked_trailer.
 */
bool auth_chunked_is_complete_at_eof(const struct auth_chunked *c);

/* ---- payload checksums -------------------------------------------------- */

enum auth_checksum_algo {
    AUTH_CK_NONE = 0,
    AUTH_CK_CRC32,
    AUTH_CK_CRC32C,
    AUTH_CK_CRC64NVME,
    AUTH_CK_SHA1,
    AUTH_CK_SHA256,
    AUTH_CK_MD5,
};
#define AUTH_CK_MAX_DIGEST 32

/* Incremental hasher for any algorithm above. Plain struct, caller-owned.
 * MD5/SHA use OpenSSL EVP contexts allocated by init and freed by final
 * or cleanup; the CRCs are ISA-L's (PCLMULQDQ folding; CRC64NVME falls back
 * to slice-by-8 tables where the installed ISA-L lacks it). */
struct auth_checksum {
    enum auth_checksum_algo algo;
    uint64_t crc;
    void *evp; /* EVP_MD_CTX* for MD5/SHA */
};

void auth_checksum_init(struct auth_checksum *c, enum auth_checksum_algo algo);
void auth_checksum_update(struct auth_checksum *c, const void *data, size_t len);
/* Writes the digest (big-endian for CRCs, as S3 sends them) and returns its
 * length in bytes; releases the context. */
size_t auth_checksum_final(struct auth_checksum *c, uint8_t out[AUTH_CK_MAX_DIGEST]);
/* Releases the context without a result (safe after final, and twice). */
void auth_checksum_cleanup(struct auth_checksum *c);
/* Digest length of 'algo' in bytes (CRC32 4, CRC32C 4, CRC64NVME 8, SHA1 20, SHA256 32, MD5 16). */
size_t auth_checksum_len(enum auth_checksum_algo algo);
/* "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256", "MD5". */
const char *auth_checksum_name(enum auth_checksum_algo algo);
/* Header name: "x-amz-checksum-crc32", ... (NULL for NONE and MD5). */
const char *auth_checksum_header(enum auth_checksum_algo algo);
/* Parses an algorithm name in any case ("crc32", "CRC64NVME"); AUTH_CK_NONE if unknown. */
enum auth_checksum_algo auth_checksum_from_name(struct slice name);

/* Combines CRCs: the CRC of A||B from crc(A), crc(B) and len(B) (for
 * FULL_OBJECT multipart checksums). Only for the CRC algorithms. */
uint64_t auth_checksum_crc_combine(enum auth_checksum_algo algo, uint64_t crc_a, uint64_t crc_b,
                                   uint64_t len_b);

/* One-shot SHA-256 and HMAC-SHA256, for callers that need them (server/ uses
 * SHA-256 for payload verification through auth_checksum instead). */
void auth_sha256(const void *data, size_t len, uint8_t out[32]);
void auth_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                      uint8_t out[32]);

/* ---- multi-buffer MD5 (md5_mb.c) ----------------------------------------- */

/*
 * MD5 of up to AUTH_MD5_MB_LANES independent streams at once: one stream
 * per lane, whole 64-byte blocks submitted per lane, then one run that
 * advances every lane with pending blocks together (AVX2: the 8 lanes of a
 * 256-bit register; scalar code otherwise). The digest of a lane equals
 * MD5 of the bytes submitted to it since its reset, plus the tail given to
 * auth_md5_mb_final. Plain struct, caller-owned; no allocation; one thread
 * at a time. Fields are private to md5_mb.c.
 */
#define AUTH_MD5_MB_LANES 8

enum auth_md5_mb_impl {
    AUTH_MD5_MB_AUTO = 0, /* AVX2 when the CPU has it and enough lanes are busy */
    AUTH_MD5_MB_SCALAR,   /* one stream after the other, portable C */
    AUTH_MD5_MB_AVX2,     /* always the 8-lane kernel, even for one busy lane */
};

struct auth_md5_mb {
    uint32_t st[4][AUTH_MD5_MB_LANES];           /* A, B, C, D of each lane (lane-major rows) */
    const unsigned char *ptr[AUTH_MD5_MB_LANES]; /* pending blocks (not owned) */
    size_t nblocks[AUTH_MD5_MB_LANES];           /* pending 64-byte blocks */
    uint64_t len[AUTH_MD5_MB_LANES];             /* bytes submitted since reset */
    enum auth_md5_mb_impl impl;
};

/* Resets every lane and selects AUTH_MD5_MB_AUTO (scalar without AVX2). */
void auth_md5_mb_init(struct auth_md5_mb *ctx);
/* Selects an implementation (tests, benchmarks). Returns 0, or -ENOTSUP for
 * AUTH_MD5_MB_AVX2 on a CPU without AVX2 (the selection is then unchanged). */
int auth_md5_mb_set_impl(struct auth_md5_mb *ctx, enum auth_md5_mb_impl impl);
/* Starts a new stream in 'lane' (< AUTH_MD5_MB_LANES), dropping anything
 * pending there. */
void auth_md5_mb_reset(struct auth_md5_mb *ctx, unsigned lane);
/*
 * Queues 'len' bytes of 'lane''s stream, a multiple of 64, any alignment.
 * The bytes are not copied: 'data' must stay valid and unchanged until the
 * next auth_md5_mb_run (or auth_md5_mb_final of the lane) returns. Returns
 * 0; -EINVAL for a bad lane or a length not a multiple of 64; -EBUSY when
 * the lane still has blocks pending (run first).
 */
int auth_md5_mb_submit(struct auth_md5_mb *ctx, unsigned lane, const void *data, size_t len);
/* Hashes every pending block of every lane; afterwards none is pending. */
void auth_md5_mb_run(struct auth_md5_mb *ctx);
/*
 * Finishes 'lane''s stream: hashes its pending blocks (running all lanes),
 * then 'tail' ('tail_len' bytes, any length, may be NULL when 0) and the
 * MD5 padding, writes the 16-byte digest (as OpenSSL's MD5) to 'out' and
 * resets the lane.
 */
void auth_md5_mb_final(struct auth_md5_mb *ctx, unsigned lane, const void *tail, size_t tail_len,
                       uint8_t out[16]);
/* True when this CPU runs the AVX2 kernel. */
bool auth_md5_mb_have_avx2(void);

/* ---- access policy (policy.c) ------------------------------------------ */

/* What a request wants to do. The server's route table names one per route. */
enum auth_action {
    AUTH_ACTION_SERVICE,       /* ListBuckets: any authenticated principal */
    AUTH_ACTION_CREATE_BUCKET, /* CreateBucket: any principal whose key may write */
    AUTH_ACTION_BUCKET_INFO,   /* HeadBucket, location, versioning */
    AUTH_ACTION_READ_ACP,      /* GetBucketAcl: S3's READ_ACP, which public-read and a read or
                                  write grant do not give (it shows the owner's canonical id) */
    AUTH_ACTION_LIST,          /* ListObjects*, ListMultipartUploads: 'key' is the prefix */
    AUTH_ACTION_READ,          /* GetObject, HeadObject */
    AUTH_ACTION_WRITE,         /* PutObject, DeleteObject(s), multipart, copy target */
    AUTH_ACTION_BUCKET_ADMIN,  /* PutBucketAcl, DeleteBucket */
    AUTH_ACTION_ADMIN_READ,    /* GET under /_/ (metrics, admin listings) */
    AUTH_ACTION_ADMIN_WRITE,   /* admin changes (users, keys, grants, scrub) */
};

/* Who is asking. Strings are borrowed for the call. */
struct auth_principal {
    bool is_anonymous;   /* no signature at all */
    bool is_root;        /* the root key */
    bool is_admin;       /* a user with the admin flag */
    bool is_read_only;   /* the access key may only read */
    const char *user_id; /* canonical user id ("" for anonymous) */
};

/* The bucket the request addresses. 'owner' "" means root (old data dirs). */
struct auth_bucket_view {
    const char *owner;
    bool is_public_read;
};

/* The principal's grant on that bucket (level 0 = none; 1 read, 2 write,
 * 3 admin, each including the lower ones), optionally limited to keys
 * starting with 'prefix'. */
struct auth_grant_view {
    int level;
    struct slice prefix;
};

/*
 * Decides whether 'who' may do 'action' on bucket 'bucket' (NULL for
 * service-level and admin actions) with grant 'grant' (NULL: none) and
 * object key 'key' (for LIST: the listing prefix; for DeleteObjects: each
 * key in turn). 'root_id' is root's user id, which owns buckets whose
 * owner is "" as well. Pure; returns true to allow.
 *
 * Rules: root may do anything; a read-only key never writes; the bucket
 * owner may do anything in its bucket; a grant allows its level, and a
 * prefix grant only for keys (and listing prefixes) under the prefix;
 * anonymous principals may only read and list a public-read bucket; the
 * bucket's ACL (READ_ACP) needs ownership or a whole-bucket admin grant;
 * admin actions need root or the admin flag.
 */
bool auth_policy_allows(const struct auth_principal *who, const struct auth_bucket_view *bucket,
                        const struct auth_grant_view *grant, enum auth_action action,
                        struct slice key, const char *root_id);

/* Returns true when 'action' changes state (refused to read-only keys). */
bool auth_action_is_write(enum auth_action action);

/* ---- bucket policies (iam.c) ------------------------------------------- */

/* Bucket policy documents are at most this long (AWS: 20 KiB). */
#define AUTH_IAM_POLICY_MAX (20 * 1024)
#define AUTH_IAM_STATEMENTS_MAX 256

/* The condition keys a policy may name. */
enum auth_iam_key {
    AUTH_IAM_KEY_SOURCE_IP,
    AUTH_IAM_KEY_SECURE_TRANSPORT,
    AUTH_IAM_KEY_CURRENT_TIME,
    AUTH_IAM_KEY_EPOCH_TIME,
    AUTH_IAM_KEY_USERNAME,
    AUTH_IAM_KEY_USERID,
    AUTH_IAM_KEY_PRINCIPAL_TYPE,
    AUTH_IAM_KEY_PRINCIPAL_ARN,
    AUTH_IAM_KEY_REFERER,
    AUTH_IAM_KEY_USER_AGENT,
    AUTH_IAM_KEY_PREFIX,
    AUTH_IAM_KEY_DELIMITER,
    AUTH_IAM_KEY_MAX_KEYS,
    AUTH_IAM_KEY_ACL,
    AUTH_IAM_KEY_SSE,
    AUTH_IAM_KEY_COPY_SOURCE,
    AUTH_IAM_KEY_METADATA_DIRECTIVE,
    AUTH_IAM_KEY_STORAGE_CLASS,
    AUTH_IAM_KEY_CONTENT_SHA256,
    AUTH_IAM_KEY_EXISTING_TAG,     /* s3:ExistingObjectTag/<suffix> */
    AUTH_IAM_KEY_REQUEST_TAG,      /* s3:RequestObjectTag/<suffix> */
    AUTH_IAM_KEY_REQUEST_TAG_KEYS, /* multi-valued */
    AUTH_IAM_KEY_SIGNATURE_VERSION,
    AUTH_IAM_KEY_AUTH_TYPE,
    AUTH_IAM_KEY_VERSION_ID,
    AUTH_IAM_KEY_SOURCE_ARN,     /* a service's source resource (log delivery) */
    AUTH_IAM_KEY_SOURCE_ACCOUNT, /* the account a service acts for */
};

/* Value 'i' (from 0) of condition key 'key' ('suffix': the tag key of the
 * tag keys) for the request being decided: returns true with it in
 * '*out' (borrowed for the evaluation), false when the key has no value
 * 'i' (absent from the request, or no more values). */
typedef bool (*auth_iam_value_fn)(void *ctx, enum auth_iam_key key, struct slice suffix, size_t i,
                                  struct slice *out);
/* Whether a shardstore user named 'name' exists (policy principals). */
typedef bool (*auth_iam_user_exists_fn)(void *ctx, struct slice name);

/* One request as a policy sees it. Everything is borrowed for the call. */
struct auth_iam_request {
    struct slice action;   /* IAM action, e.g. "s3:GetObject" (any case) */
    struct slice resource; /* "arn:aws:s3:::BUCKET" or "arn:aws:s3:::BUCKET/KEY" */
    bool is_anonymous;
    bool is_root;
    struct slice user_name;  /* the user's name (principal ARN user/NAME) */
    struct slice user_id;    /* canonical id (CanonicalUser principals) */
    bool skip_public_allows; /* RestrictPublicBuckets: public Allows do not count */
    /* Non-empty: the caller is this AWS service principal (e.g.
     * "logging.s3.amazonaws.com"), matched by "Service" principals and
     * "*" only; is_anonymous and is_root are then false. */
    struct slice service;
    auth_iam_value_fn value;
    void *ctx;
};

enum auth_iam_effect { AUTH_IAM_NONE, AUTH_IAM_ALLOW, AUTH_IAM_DENY };

/* A compiled policy (opaque; lives in the arena it was compiled into). */
struct auth_iam_policy;

/*
 * Parses and validates policy document 'doc' ('len' bytes) for bucket
 * 'bucket' and compiles it into 'a'. 'exists' (with 'ctx') checks that
 * the users principals name exist. Reloading a stored policy passes
 * SLICE_NULL and NULL to skip both checks (done when it was set). Returns 0 with '*out' set, or -1
 * with
 * '*msg' set to AWS's MalformedPolicy message (static or in 'a').
 */
int auth_iam_compile(const char *doc, size_t len, struct slice bucket,
                     auth_iam_user_exists_fn exists, void *ctx, struct arena *a,
                     const struct auth_iam_policy **out, const char **msg);
/*
 * Decides request 'rq' against policy 'p' (NULL: no policy): DENY when a
 * Deny statement matches, else ALLOW when an Allow does, else NONE. Pure,
 * allocation-free and thread-safe ('p' is never written after compile).
 */
enum auth_iam_effect auth_iam_evaluate(const struct auth_iam_policy *p,
                                       const struct auth_iam_request *rq);
/* Whether 'p' lets anyone in (an Allow for "*" not pinned by a
 * SourceIp/userid/username condition): GetBucketPolicyStatus's IsPublic. */
bool auth_iam_is_public(const struct auth_iam_policy *p);
/* Glob match ('*' any run, '?' one byte) of 's' against 'pat'. */
bool auth_iam_glob(struct slice pat, struct slice s, bool is_nocase);

/* ---- POST Object form signatures (post.c) ------------------------------ */

/* The signing fields of a POST form (borrowed). */
struct auth_post {
    struct slice policy;     /* the base64 policy document, as sent */
    struct slice signature;  /* x-amz-signature (hex) or signature (base64, SigV2) */
    struct slice algorithm;  /* x-amz-algorithm (SigV4) */
    struct slice credential; /* x-amz-credential: AK/YYYYMMDD/region/s3/aws4_request */
    struct slice amz_date;   /* x-amz-date: YYYYMMDDTHHMMSSZ */
    struct slice access_key; /* AWSAccessKeyId (SigV2) */
    const char *region;      /* the server's region */
};
/*
 * Verifies a SigV4-signed POST form: the signature of 'post->policy' under
 * the key derived from the credential's secret (looked up with 'lookup'),
 * day and region. Returns AUTH_OK (with 'out->access_key' set), or
 * AUTH_MALFORMED, AUTH_UNSUPPORTED (another algorithm), AUTH_BAD_REGION,
 * AUTH_UNKNOWN_KEY, AUTH_BAD_SIGNATURE. The policy's expiration is the
 * caller's to check.
 */
enum auth_result auth_post_verify_v4(const struct auth_post *post, auth_secret_fn lookup, void *ctx,
                                     struct auth_verdict *out);
/* The same for a SigV2-signed form (AWSAccessKeyId, signature). */
enum auth_result auth_post_verify_v2(const struct auth_post *post, auth_secret_fn lookup, void *ctx,
                                     struct auth_verdict *out);

/* ---- secrets at rest (secret.c) -------------------------------------- */

/* An encrypted secret: 12-byte random nonce | ciphertext | 16-byte tag
 * (AES-256-GCM), with the access key as additional authenticated data so
 * a blob cannot be moved to another key. */
#define AUTH_SECRET_KEY_LEN 32
#define AUTH_SECRET_OVERHEAD (12 + 16)

/*
 * Encrypts 'secret' ('len' bytes) for 'access_key' under 'key' into 'out'
 * (capacity 'cap' >= len + AUTH_SECRET_OVERHEAD). Returns the blob length,
 * or -1 (cap too small, no randomness, OpenSSL error).
 */
long auth_secret_seal(const uint8_t key[AUTH_SECRET_KEY_LEN], struct slice access_key,
                      const char *secret, size_t len, uint8_t *out, size_t cap);
/*
 * Decrypts and authenticates 'blob' for 'access_key' into 'out' (capacity
 * 'cap', NUL-terminated). Returns the secret's length, or -1 (tampered,
 * wrong key or access key, too small). Wipes intermediate copies.
 */
long auth_secret_open(const uint8_t key[AUTH_SECRET_KEY_LEN], struct slice access_key,
                      const uint8_t *blob, size_t len, char *out, size_t cap);
/* Lengths of generated credentials: an access key of [A-Z0-9] and a
 * secret of [A-Za-z0-9+/], as AWS makes them. */
#define AUTH_ACCESS_KEY_LEN 20
#define AUTH_SECRET_LEN 40
/*
 * Generates a new access key and secret (NUL-terminated) from the CSPRNG,
 * each character uniform over its alphabet. The one generator for root's
 * first credentials and users' keys. Returns 0, or -1 when no randomness
 * is available (the secret is then wiped).
 */
int auth_credentials_generate(char access_key[AUTH_ACCESS_KEY_LEN + 1],
                              char secret[AUTH_SECRET_LEN + 1]);
/* Fills 'out' with 'len' bytes from the OpenSSL CSPRNG. Returns 0 or -1. */
int auth_random_bytes(void *out, size_t len);
/* Wipes 'len' bytes at 'p' in a way the compiler cannot drop. */
void auth_wipe(void *p, size_t len);

/* ---- encryption at rest (sse.c) --------------------------------------- */

/* AES-256 keys, segment salts, wrapped data keys (RFC 3394 key wrap of a
 * 32-byte key) and GCM tags. A package holds at most AUTH_SSE_PKG_MAX
 * bytes of plaintext and is stored as ciphertext | tag. */
#define AUTH_SSE_KEY_LEN 32
#define AUTH_SSE_SALT_LEN 16
#define AUTH_SSE_WRAPPED_LEN 40
#define AUTH_SSE_TAG_LEN 16
#define AUTH_SSE_PKG_MAX (1u << 20)

/* Wraps data key 'dk' under 'kek' into 'out'. Returns 0 or -EIO. */
int auth_sse_wrap(const uint8_t kek[AUTH_SSE_KEY_LEN], const uint8_t dk[AUTH_SSE_KEY_LEN],
                  uint8_t out[AUTH_SSE_WRAPPED_LEN]);
/* Unwraps 'in' under 'kek' into 'dk'. Returns 0, or -EBADMSG when 'in' was
 * not wrapped under 'kek' (the wrap's integrity check fails). */
int auth_sse_unwrap(const uint8_t kek[AUTH_SSE_KEY_LEN], const uint8_t in[AUTH_SSE_WRAPPED_LEN],
                    uint8_t dk[AUTH_SSE_KEY_LEN]);

/* The package cipher of one segment (an object or a part): its key derived
 * from the data key and the segment's salt. Not thread-safe; one per
 * stream. */
struct auth_sse_pkg;
/* Creates it (caller frees with auth_sse_pkg_destroy); the OpenSSL
 * contexts are made on first seal or open. Never NULL. */
struct auth_sse_pkg *auth_sse_pkg_create(const uint8_t dk[AUTH_SSE_KEY_LEN],
                                         const uint8_t salt[AUTH_SSE_SALT_LEN]);
/* Frees it and wipes its key; NULL is a no-op. */
void auth_sse_pkg_destroy(struct auth_sse_pkg *p);
/* Seals package 'index' ('is_last': the segment's final one) of 'len'
 * (<= AUTH_SSE_PKG_MAX) bytes into 'out' (len + AUTH_SSE_TAG_LEN bytes).
 * 'out' may be 'in' itself (sealed in place, as server/sse.c's units are)
 * but may not overlap it otherwise. Returns 0, -EINVAL or -EIO. */
int auth_sse_pkg_seal(struct auth_sse_pkg *p, uint64_t index, bool is_last, const void *in,
                      size_t len, void *out);
/* Opens a sealed package of 'len' bytes (tag included) into 'out' (len -
 * AUTH_SSE_TAG_LEN bytes). Returns 0, or -EBADMSG when it does not
 * authenticate (then 'out' is wiped), -EIO on an OpenSSL failure. */
int auth_sse_pkg_open(struct auth_sse_pkg *p, uint64_t index, bool is_last, const void *in,
                      size_t len, void *out);

#endif
