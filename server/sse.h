/*
 * sse.h: server-side encryption at rest (sse.c): the master keys, the
 * request headers of SSE-S3 and SSE-C, the encryption record an object
 * keeps in its metadata (META_SSE), the encrypting writer of PUTs and
 * copies, the decrypting body of GETs, and bucket default encryption
 * (Put/Get/DeleteBucketEncryption). The package cipher itself is auth's
 * (auth_sse_*); no OpenSSL type appears here.
 */
#ifndef SHARD_SERVER_SSE_H
#define SHARD_SERVER_SSE_H

#include "auth/auth.h"
#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct MHD_Response;
struct config;
struct index_bucket;
struct index_object;
struct index_part;
struct meta;
struct offload;
struct s3_req;
struct server;
struct storage_writer;

/* The internal metadata entries: an encrypted object's (or upload's)
 * encryption record, and an encrypted part's segment salt. */
#define META_SSE "x-shard-sse"
#define META_SSE_SEGMENT "x-shard-sse-segment"

/* Plaintext bytes per package; each is stored as ciphertext | 16-byte tag. */
#define SSE_PKG_LEN (64u * 1024)
#define SSE_KEY_ID_LEN 8

enum sse_mode {
    SSE_NONE = 0,
    SSE_S3 = 1, /* x-amz-server-side-encryption: AES256, data key under a master key */
    SSE_C = 2,  /* customer key: the data key wrapped under it, never stored */
};

/* An object's (or upload's) encryption, with its data key in the clear
 * (request memory only; sse_obj_wipe when done). */
struct sse_obj {
    enum sse_mode mode;
    uint8_t key_id[SSE_KEY_ID_LEN]; /* SSE_S3: the master key that wraps 'wrapped' */
    uint8_t wrapped[AUTH_SSE_WRAPPED_LEN];
    uint8_t verify_salt[16]; /* SSE_C: HMAC(customer key, label | salt) = verify */
    uint8_t verify[32];
    uint32_t n_segments;  /* one per part; 1 for a single PUT (0 in an upload) */
    const uint8_t *salts; /* n_segments * AUTH_SSE_SALT_LEN */
    uint8_t dk[AUTH_SSE_KEY_LEN];
    char key_md5[32]; /* SSE_C: base64 MD5 of the request's key, for the answer */
    bool has_ckey;    /* the request gave the customer key below */
    uint8_t ckey[AUTH_SSE_KEY_LEN];
};

/* The master keys (current first, then the old ones for reading). */
struct sse_keys;

/*
 * Loads the master keys at start-up: sse_master_key_file (default
 * DATA/keys/sse-master.key, DATA/keys made mode 0700 when absent; 32 raw
 * bytes or 64 hex digits), created with random bytes when absent and its
 * directory is private, and every file of
 * sse_old_key_files. A key file readable by group or others, or unreadable,
 * is an error. Without a current key (absent, directory not private) SSE-S3
 * is refused at request time; '*out' is still set. Returns 0 or -errno
 * (logged, without the key).
 */
int sse_keys_open(const struct config *cfg, struct sse_keys **out);
/* Wipes and frees; NULL is a no-op. */
void sse_keys_close(struct sse_keys *k);
/* Whether a current master key is loaded (SSE-S3 can be written). */
bool sse_keys_have_current(const struct sse_keys *k);

/* Stored bytes of a segment of 'plain' bytes. */
uint64_t sse_stored_len(uint64_t plain);

/*
 * The encryption a write asks for: x-amz-server-side-encryption or the
 * SSE-C headers, else (with 'bk') the bucket's default encryption. Makes
 * a fresh data key (wrapped) into '*out' (SSE_NONE: no encryption).
 * Responds with AWS's error and returns false on a bad request.
 */
bool sse_for_write(struct s3_req *r, const struct index_bucket *bk, struct sse_obj *out);
/*
 * Opens the encryption record in 'm' (an object's or an upload's) into
 * '*out': unwraps the data key under the master key it names, or under
 * the request's customer key (the x-amz-copy-source-... headers when
 * 'is_copy_source'), which must be given and right. Refuses customer-key
 * headers for an object that has no customer key. Responds with AWS's
 * error and returns false.
 */
bool sse_for_read(struct s3_req *r, const struct meta *m, bool is_copy_source, struct sse_obj *out);
/* Whether a copy from 'src' (opened by sse_for_read) to a destination
 * asking for 'dst' (sse_for_write) may share the source's stored bytes:
 * both plain, both SSE-S3 under the current master key, or SSE-C under the
 * same customer key. */
bool sse_copy_shares(const struct sse_obj *src, const struct sse_obj *dst);
/* The stored length of 'obj' into '*out': its size for a plain object,
 * its packages' bytes (ciphertext and tags) for an encrypted one, as a
 * tier stores them. 'a' for the decoding. Returns 0 or -EILSEQ (corrupt
 * metadata or record). */
int sse_stored_size(const struct index_object *obj, struct arena *a, uint64_t *out);
/* Whether 'obj' is encrypted (or its metadata unreadable); 'a' for the
 * decoding. */
bool sse_object_is_encrypted(const struct index_object *obj, struct arena *a);
/* CompleteMultipartUpload: when 'fm' (the object's metadata being built)
 * holds the upload's record, replaces it by one with the segment salts of
 * the 'n' parts 'used', and fills '*out' (mode only) for the answer.
 * Returns false when a part has no salt or the record is corrupt. */
bool sse_complete(struct s3_req *r, struct index_part **used, uint32_t n, struct meta *fm,
                  struct sse_obj *out);
/* Wipes the data key. */
void sse_obj_wipe(struct sse_obj *o);

/* The META_SSE value of 'o' with its 'n' segment salts, in 'a'. */
struct slice sse_record_format(struct arena *a, const struct sse_obj *o, const uint8_t *salts,
                               uint32_t n);
/* Adds (or replaces) META_SSE in '*m' (entries re-allocated in 'a'). */
void sse_meta_set(struct arena *a, struct meta *m, struct slice record);
/* Removes META_SSE and META_SSE_SEGMENT from '*m' (in place). */
void sse_meta_drop(struct meta *m);

/* The response headers of 'o' (none for SSE_NONE). */
void sse_resp_headers(struct MHD_Response *resp, const struct sse_obj *o);
/* SSE-C: the ETag is not the MD5 of the bytes, as AWS's is not: replaces
 * 'etag' (the MD5) by a keyed digest of it. No-op otherwise. */
void sse_etag(const struct sse_obj *o, uint8_t etag[16]);

/* ---- writing: plaintext in, packages out -------------------------------- */

struct sse_writer;
/* A writer of one new segment under 'o' with a fresh random salt (copied
 * to 'salt'). NULL on failure (no randomness, OpenSSL). */
struct sse_writer *sse_writer_create(const struct sse_obj *o, uint8_t salt[AUTH_SSE_SALT_LEN]);
/*
 * The same, sealing packages on workers of 'offload' (NULL: as above)
 * behind the caller, which only copies plaintext in and writes sealed
 * packages to storage, in order. Packages go to a worker four at a time
 * (a 256 KiB unit, one hand-off), up to four units ahead; when the workers
 * lag the caller seals the oldest unit itself, so it never waits longer
 * than one unit's seal. The writer's calls stay on one thread at a time.
 */
struct sse_writer *sse_writer_create_pipelined(const struct sse_obj *o,
                                               uint8_t salt[AUTH_SSE_SALT_LEN],
                                               struct offload *offload);
/* Encrypts 'len' bytes into 'w' (full packages go to storage once the next
 * byte shows they are not the last). Returns 0 or -errno. */
int sse_writer_write(struct sse_writer *sw, struct storage_writer *w, const void *data, size_t len);
/* Seals the last package into 'w'. Returns 0 or -errno. */
int sse_writer_finish(struct sse_writer *sw, struct storage_writer *w);
/* Frees (a seal a worker still runs frees it when done); NULL is a no-op. */
void sse_writer_destroy(struct sse_writer *sw);

/* ---- reading ------------------------------------------------------------ */

/*
 * The body of bytes [first, first+len) of encrypted 'obj' ('m' its
 * metadata, 'o' its opened record): reads only the packages the range
 * touches (from the hot extents or through the tier its extent flags
 * name), decrypts and checks each. The first package is read before the
 * answer starts, so a bad one makes this return NULL (the caller answers
 * InternalError); a bad one later ends the body with an error (MHD closes
 * the connection). A body of more than 512 KiB is decrypted ahead of the
 * send by two lanes on workers at once (one for a tiered object; 2 MiB in
 * flight), which then own the request's pins (r->has_pin is cleared); a
 * smaller one keeps them like s3_body_response.
 */
struct MHD_Response *sse_body_response(struct s3_req *r, const struct index_object *obj,
                                       const struct meta *m, const struct sse_obj *o,
                                       uint64_t first, uint64_t len, bool is_head);
/*
 * Copies plaintext bytes [first, first+len) of 'src' (metadata 'src_meta',
 * record 'src_sse', SSE_NONE for a plain one) into a new finished writer,
 * encrypted under 'dst' as one new segment (salt into 'salt') unless
 * SSE_NONE. The MD5 of the plaintext goes to 'md5'. Runs on a worker
 * under the request's pin. Returns 0 or -errno ('*out' may then hold a
 * writer to destroy).
 */
int sse_copy_range(struct s3_req *r, const struct index_object *src, const struct meta *src_meta,
                   const struct sse_obj *src_sse, uint64_t first, uint64_t len,
                   const struct sse_obj *dst, struct storage_writer **out, uint8_t md5[16],
                   uint8_t salt[AUTH_SSE_SALT_LEN]);

/*
 * CopyObject when the source and destination encryption differ: copies the
 * plaintext of 'src' re-encrypted under 'dst' (or decrypted, SSE_NONE) into
 * new extents, with metadata 'new_meta' (its part sizes, composite
 * checksums and old record dropped: the copy is one segment), and
 * publishes it as the request's key in bucket 'bk' (Object Lock fields
 * from the request or the bucket's default). Fills '*out' (the record
 * published, with the version the commit made). Returns 0 or -errno (not
 * answered), or 1 after answering an Object Lock error.
 */
int sse_copy_object(struct s3_req *r, const struct index_bucket *bk, const struct index_object *src,
                    const struct meta *src_meta, const struct sse_obj *src_sse,
                    const struct meta *new_meta, const struct sse_obj *dst,
                    struct index_object *out);

/* ---- bucket default encryption (?encryption) ------------------------------ */

void op_put_bucket_encryption(struct s3_req *r);
void op_get_bucket_encryption(struct s3_req *r);
void op_delete_bucket_encryption(struct s3_req *r);

#endif
