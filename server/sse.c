/*
 * sse.c: server-side encryption at rest: SSE-S3 and SSE-C on PUT, GET,
 * HEAD, multipart and copy (bucket defaults: sse_bucket.c).
 *
 * Every encrypted object has a random 256-bit data key, stored only
 * wrapped (RFC 3394): under a master key (SSE-S3; the record names the
 * key by an 8-byte id, so old keys listed in sse_old_key_files still
 * open it) or under the customer's key (SSE-C; the key itself is never
 * stored, only a salted HMAC of it to tell a wrong key from a corrupt
 * record). The object's bytes are segments (the object, or each part of a
 * multipart object, with its own random salt and derived key) of packages
 * of SSE_PKG_LEN plaintext bytes, each stored as AES-256-GCM ciphertext and
 * tag (auth/sse.c), so a range reads and checks only the packages it
 * touches and a changed bit is an error, never other bytes. The record
 * (META_SSE) is an internal metadata entry; object sizes, ETags (but
 * SSE-C's), checksums and part sizes stay those of the plaintext. A tier
 * stores the packages as they are; reads go through the tier the extent
 * flags name. Large bodies are pipelined: a GET decrypts on two workers at
 * once into a bounded ring ahead of the send (delivered in order), a PUT
 * seals units of four packages on a worker behind the receive; the event
 * loop only copies.
 *
 * Invariant: the data key leaves this file only inside a struct sse_obj
 * in request memory, wiped by its user (sse_obj_wipe).
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/commit.h"
#include "server/conf.h"
#include "server/errors.h"
#include "server/extents.h"
#include "server/http.h"
#include "server/meta.h"
#include "server/offload.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/sse.h"
#include "server/tier.h"
#include "server/versioning.h"
#include "storage/storage.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SSE_KEYS_MAX 16
#define RECORD_VERSION 1
#define RECORD_HEAD 104
#define STORED_PKG_LEN ((uint64_t)SSE_PKG_LEN + AUTH_SSE_TAG_LEN)
#define SSE_BLOCK_LEN (256 * 1024)
/* Stored bytes a stream reads at once: four packages, one read call. */
#define SSE_CT_LEN (4 * STORED_PKG_LEN)
/* The pipeline of a large GET: units of UNIT_PKGS packages (SSE_BLOCK_LEN
 * plaintext) decrypted by PIPE_LANES workers at once into RING_SLOTS slots
 * ahead of the send; bodies up to PIPE_MIN are decrypted in MHD's callback
 * (a range of a few packages costs less than a hand-off). */
#define UNIT_PKGS (SSE_BLOCK_LEN / SSE_PKG_LEN)
#define PIPE_LANES 2
#define RING_SLOTS 8
#define PIPE_MIN (2 * SSE_BLOCK_LEN)
/* The mapping window of a pipelined body's stored bytes. */
#define MAP_WINDOW (8u << 20)
/* Units (of UNIT_PKGS packages) a pipelined writer fills ahead of their
 * sealing on a worker: one hand-off per unit, 1 MiB of plaintext ahead. */
#define WRITER_SLOTS 4
#define VERIFY_LABEL "shardstore-sse-c-verify-v1"
#define KEY_ID_LABEL "shardstore-sse-key-id-v1"
#define ETAG_LABEL "shardstore-sse-c-etag-v1"

struct sse_key {
    uint8_t id[SSE_KEY_ID_LEN];
    uint8_t key[AUTH_SSE_KEY_LEN];
};

struct sse_keys {
    bool has_current; /* k[0] is the current key */
    size_t n;
    struct sse_key k[SSE_KEYS_MAX];
};

/* ======================================================================
 * Master keys
 * ====================================================================== */

/* Reads a key file: 32 raw bytes, or 64 hex digits and an optional
 * newline. Returns 0, -ENOENT, -EPERM (readable by group or others) or
 * another -errno. */
static int
key_file_read(const char *path, uint8_t key[AUTH_SSE_KEY_LEN])
{
    uint8_t raw[80];
    struct stat sb;
    int rc = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &sb) != 0) {
        rc = -errno;
        goto fail;
    }
    if (sb.st_mode & 077) {
        log_error("sse: key file %s is readable by group or others: chmod 600 it", path);
        rc = -EPERM;
        goto fail;
    }
    ssize_t n = read(fd, raw, sizeof(raw));
    if (n == AUTH_SSE_KEY_LEN) {
        memcpy(key, raw, AUTH_SSE_KEY_LEN);
    } else if (n == 64 || (n == 65 && raw[64] == '\n')) {
        for (int i = 0; i < AUTH_SSE_KEY_LEN && rc == 0; i++) {
            int hi = hex_digit_value(raw[2 * i]), lo = hex_digit_value(raw[2 * i + 1]);
            if (hi < 0 || lo < 0)
                rc = -EINVAL;
            else
                key[i] = (uint8_t)((unsigned)hi << 4 | (unsigned)lo);
        }
    } else {
        rc = n < 0 ? -errno : -EINVAL;
    }
    if (rc == -EINVAL)
        log_error("sse: key file %s holds neither 32 bytes nor 64 hex digits", path);

fail:
    auth_wipe(raw, sizeof(raw));
    close(fd);
    return rc;
}

/* Creates 'path' with a random key (mode 0600, durable) when its
 * directory is private. Returns 0, -EPERM (directory not private) or
 * -errno. */
static int
key_file_create(const char *path, uint8_t key[AUTH_SSE_KEY_LEN])
{
    char dir[4200];
    struct stat sb;
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    if (stat(dir, &sb) != 0)
        return -errno;
    if (sb.st_mode & 077)
        return -EPERM;
    if (auth_random_bytes(key, AUTH_SSE_KEY_LEN) != 0)
        return -EIO;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (write(fd, key, AUTH_SSE_KEY_LEN) != AUTH_SSE_KEY_LEN || fsync(fd) != 0)
        rc = -EIO;
    close(fd);
    if (rc == 0)
        rc = dir_sync_parent(path);
    if (rc < 0)
        unlink(path);
    return rc;
}

static void
key_id(const uint8_t key[AUTH_SSE_KEY_LEN], uint8_t id[SSE_KEY_ID_LEN])
{
    uint8_t h[32];
    auth_hmac_sha256(key, AUTH_SSE_KEY_LEN, KEY_ID_LABEL, sizeof(KEY_ID_LABEL) - 1, h);
    memcpy(id, h, SSE_KEY_ID_LEN);
}

int
sse_keys_open(const struct config *cfg, struct sse_keys **out)
{
    struct sse_keys *k = xcalloc(1, sizeof(*k));
    char path[4200];
    int rc;
    if (cfg->sse_master_key_file[0]) {
        snprintf(path, sizeof(path), "%s", cfg->sse_master_key_file);
    } else {
        /* DATA/keys/, made private here: the data dir itself need not be. */
        snprintf(path, sizeof(path), "%s/keys", cfg->data_dir);
        if (mkdir(path, 0700) == 0)
            dir_sync_parent(path);
        snprintf(path, sizeof(path), "%s/keys/sse-master.key", cfg->data_dir);
    }
    rc = key_file_read(path, k->k[0].key);
    if (rc == -ENOENT) {
        rc = key_file_create(path, k->k[0].key);
        if (rc == 0)
            log_info("sse: created the master key %s (back it up, apart from the data: it opens "
                     "every SSE-S3 object)",
                     path);
        if (rc == -EPERM) {
            log_warn("sse: no master key %s and its directory is not private: SSE-S3 is off", path);
            rc = 0;
            goto old;
        }
    }
    if (rc < 0) {
        log_error("sse: cannot load the master key %s: %s", path, strerror(-rc));
        goto fail;
    }
    k->has_current = true;
    key_id(k->k[0].key, k->k[0].id);
    k->n = 1;

old:;
    /* sse_old_key_files: comma-separated, read-only keys (rotation). */
    const char *p = cfg->sse_old_key_files;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len) {
            if (k->n == SSE_KEYS_MAX) {
                log_error("sse: more than %d keys in sse_old_key_files", SSE_KEYS_MAX - 1);
                rc = -E2BIG;
                goto fail;
            }
            snprintf(path, sizeof(path), "%.*s", (int)len, p);
            /* The slot after the last key: k[0] stays the current one. */
            size_t slot = k->n ? k->n : 1;
            rc = key_file_read(path, k->k[slot].key);
            if (rc < 0) {
                log_error("sse: cannot load the old key %s: %s", path, strerror(-rc));
                goto fail;
            }
            key_id(k->k[slot].key, k->k[slot].id);
            k->n = slot + 1;
        }
        p = end ? end + 1 : p + len;
        if (!end)
            break;
    }
    *out = k;
    return 0;

fail:
    sse_keys_close(k);
    *out = NULL;
    return rc;
}

void
sse_keys_close(struct sse_keys *k)
{
    if (!k)
        return;
    auth_wipe(k, sizeof(*k));
    free(k);
}

bool
sse_keys_have_current(const struct sse_keys *k)
{
    return k && k->has_current;
}

static const struct sse_key *
key_find(const struct sse_keys *k, const uint8_t id[SSE_KEY_ID_LEN])
{
    if (!k)
        return NULL;
    for (size_t i = k->has_current ? 0 : 1; i < k->n; i++)
        if (memcmp(k->k[i].id, id, SSE_KEY_ID_LEN) == 0)
            return &k->k[i];
    return NULL;
}

/* ======================================================================
 * Records and headers
 * ====================================================================== */

uint64_t
sse_stored_len(uint64_t plain)
{
    return plain + (plain + SSE_PKG_LEN - 1) / SSE_PKG_LEN * AUTH_SSE_TAG_LEN;
}

struct slice
sse_record_format(struct arena *a, const struct sse_obj *o, const uint8_t *salts, uint32_t n)
{
    size_t len = RECORD_HEAD + (size_t)n * AUTH_SSE_SALT_LEN;
    uint8_t *p = arena_calloc(a, len, 1);
    p[0] = RECORD_VERSION;
    p[1] = (uint8_t)o->mode;
    p[2] = 16; /* log2(SSE_PKG_LEN) */
    memcpy(p + 4, o->key_id, SSE_KEY_ID_LEN);
    memcpy(p + 12, o->wrapped, AUTH_SSE_WRAPPED_LEN);
    memcpy(p + 52, o->verify_salt, 16);
    memcpy(p + 68, o->verify, 32);
    for (int i = 0; i < 4; i++)
        p[100 + i] = (uint8_t)(n >> (8 * i));
    if (n)
        memcpy(p + RECORD_HEAD, salts, (size_t)n * AUTH_SSE_SALT_LEN);
    return (struct slice){(const char *)p, len};
}

/* Parses a META_SSE value into 'o' (the data key not yet unwrapped). */
static bool
record_parse(struct slice v, struct sse_obj *o)
{
    const uint8_t *p = (const uint8_t *)v.ptr;
    memset(o, 0, sizeof(*o));
    if (v.len < RECORD_HEAD || p[0] != RECORD_VERSION || (p[1] != SSE_S3 && p[1] != SSE_C) ||
        p[2] != 16)
        return false;
    o->mode = (enum sse_mode)p[1];
    memcpy(o->key_id, p + 4, SSE_KEY_ID_LEN);
    memcpy(o->wrapped, p + 12, AUTH_SSE_WRAPPED_LEN);
    memcpy(o->verify_salt, p + 52, 16);
    memcpy(o->verify, p + 68, 32);
    o->n_segments =
        (uint32_t)p[100] | (uint32_t)p[101] << 8 | (uint32_t)p[102] << 16 | (uint32_t)p[103] << 24;
    if ((v.len - RECORD_HEAD) / AUTH_SSE_SALT_LEN != o->n_segments ||
        (v.len - RECORD_HEAD) % AUTH_SSE_SALT_LEN)
        return false;
    o->salts = p + RECORD_HEAD;
    return true;
}

void
sse_meta_set(struct arena *a, struct meta *m, struct slice record)
{
    struct meta_entry *e = arena_calloc(a, m->n + 1, sizeof(*e));
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!slice_eq(m->entries[i].name, SLICE_LIT(META_SSE)))
            e[n++] = m->entries[i];
    e[n].name = SLICE_LIT(META_SSE);
    e[n++].value = record;
    m->entries = e;
    m->n = n;
}

void
sse_meta_drop(struct meta *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!slice_eq(m->entries[i].name, SLICE_LIT(META_SSE)) &&
            !slice_eq(m->entries[i].name, SLICE_LIT(META_SSE_SEGMENT)))
            m->entries[n++] = m->entries[i];
    m->n = n;
}

void
sse_obj_wipe(struct sse_obj *o)
{
    auth_wipe(o->dk, sizeof(o->dk));
    auth_wipe(o->ckey, sizeof(o->ckey));
}

void
sse_resp_headers(struct MHD_Response *resp, const struct sse_obj *o)
{
    if (o->mode == SSE_S3) {
        s3_resp_header(resp, "x-amz-server-side-encryption", "AES256");
    } else if (o->mode == SSE_C) {
        s3_resp_header(resp, "x-amz-server-side-encryption-customer-algorithm", "AES256");
        if (o->key_md5[0])
            s3_resp_header(resp, "x-amz-server-side-encryption-customer-key-MD5", o->key_md5);
    }
}

void
sse_etag(const struct sse_obj *o, uint8_t etag[16])
{
    if (o->mode != SSE_C)
        return;
    uint8_t msg[sizeof(ETAG_LABEL) - 1 + 16], h[32];
    memcpy(msg, ETAG_LABEL, sizeof(ETAG_LABEL) - 1);
    memcpy(msg + sizeof(ETAG_LABEL) - 1, etag, 16);
    auth_hmac_sha256(o->dk, AUTH_SSE_KEY_LEN, msg, sizeof(msg), h);
    memcpy(etag, h, 16);
}

/* The HMAC that recognises customer key 'key' under 'salt'. */
static void
customer_verify(const uint8_t key[AUTH_SSE_KEY_LEN], const uint8_t salt[16], uint8_t out[32])
{
    uint8_t msg[sizeof(VERIFY_LABEL) - 1 + 16];
    memcpy(msg, VERIFY_LABEL, sizeof(VERIFY_LABEL) - 1);
    memcpy(msg + sizeof(VERIFY_LABEL) - 1, salt, 16);
    auth_hmac_sha256(key, AUTH_SSE_KEY_LEN, msg, sizeof(msg), out);
}

/*
 * The SSE-C headers of a request (the x-amz-copy-source-... ones when
 * 'is_copy_source'). Returns 1 with the key in 'o->ckey' and its MD5 in
 * 'o->key_md5', 0 when none is present, or -1 after answering AWS's
 * error.
 */
static int
customer_key(struct s3_req *r, bool is_copy_source, struct sse_obj *o)
{
    const char *pre = is_copy_source ? "x-amz-copy-source-server-side-encryption-customer-"
                                     : "x-amz-server-side-encryption-customer-";
    char name[96];
    snprintf(name, sizeof(name), "%salgorithm", pre);
    struct slice alg = s3_req_header(r, name);
    snprintf(name, sizeof(name), "%skey", pre);
    struct slice key = s3_req_header(r, name);
    snprintf(name, sizeof(name), "%skey-MD5", pre);
    struct slice md5 = s3_req_header(r, name);
    if (!alg.ptr && !key.ptr && !md5.ptr)
        return 0;
    const char *msg = NULL;
    enum s3_error e = S3_ERR_INVALID_ARGUMENT;
    uint8_t raw[64], dig[AUTH_CK_MAX_DIGEST], given[64];
    if (!r->srv->cfg.sse_c_allow_http && !http_conn_is_tls(r->conn)) {
        e = S3_ERR_INVALID_REQUEST;
        msg = "Requests specifying Server Side Encryption with Customer provided keys must be "
              "made over a secure connection.";
    } else if (!alg.ptr) {
        msg = "Requests specifying Server Side Encryption with Customer provided keys must "
              "provide a valid encryption algorithm.";
    } else if (!slice_eq(alg, SLICE_LIT("AES256"))) {
        e = S3_ERR_INVALID_ENCRYPTION_ALGORITHM;
    } else if (!key.ptr) {
        msg = "Requests specifying Server Side Encryption with Customer provided keys must "
              "provide an appropriate secret key.";
    } else if (key.len > 48 || base64_decode(key.ptr, key.len, raw) != AUTH_SSE_KEY_LEN) {
        msg = "The secret key was invalid for the specified algorithm.";
    } else if (!md5.ptr) {
        msg = "Requests specifying Server Side Encryption with Customer provided keys must "
              "provide the client calculated MD5 of the secret key.";
    } else {
        struct auth_checksum ck;
        auth_checksum_init(&ck, AUTH_CK_MD5);
        auth_checksum_update(&ck, raw, AUTH_SSE_KEY_LEN);
        auth_checksum_final(&ck, dig);
        if (md5.len > 32 || base64_decode(md5.ptr, md5.len, given) != 16 ||
            !auth_equal_ct(given, dig, 16))
            msg = "The calculated MD5 hash of the key did not match the hash that was provided.";
    }
    if (msg || e != S3_ERR_INVALID_ARGUMENT) {
        auth_wipe(raw, sizeof(raw));
        s3_respond_error(r, e, msg);
        return -1;
    }
    memcpy(o->ckey, raw, AUTH_SSE_KEY_LEN);
    auth_wipe(raw, sizeof(raw));
    o->has_ckey = true;
    base64_encode(dig, 16, o->key_md5);
    return 1;
}

/* The bucket's default encryption (sse_bucket.c's stored form). */
static enum sse_mode
bucket_default(struct s3_req *r, const struct index_bucket *bk)
{
    const void *val;
    size_t len;
    if (index_bucket_config_get(r->srv->index, bk->id, INDEX_BUCKET_CONFIG_ENCRYPTION, r->arena,
                                &val, &len) != 0)
        return SSE_NONE;
    const uint8_t *p = val;
    return len >= 2 && p[0] == 1 && p[1] == SSE_S3 ? SSE_S3 : SSE_NONE;
}

bool
sse_for_write(struct s3_req *r, const struct index_bucket *bk, struct sse_obj *out)
{
    memset(out, 0, sizeof(*out));
    struct slice sse = s3_req_header(r, "x-amz-server-side-encryption");
    int has_c = customer_key(r, false, out);
    if (has_c < 0)
        return false;
    const char *msg = NULL;
    enum s3_error e = S3_ERR_INVALID_ARGUMENT;
    if (has_c && sse.ptr) {
        msg = "Server Side Encryption with Customer provided key is incompatible with the "
              "encryption method specified";
    } else if (has_c) {
        out->mode = SSE_C;
    } else if (sse.ptr) {
        if (slice_eq(sse, SLICE_LIT("AES256"))) {
            out->mode = SSE_S3;
        } else if (slice_eq(sse, SLICE_LIT("aws:kms")) ||
                   slice_eq(sse, SLICE_LIT("aws:kms:dsse"))) {
            e = S3_ERR_NOT_IMPLEMENTED;
            msg = "This server has no KMS: use x-amz-server-side-encryption: AES256 (SSE-S3) or "
                  "SSE-C.";
        } else {
            msg = "The encryption method specified is not supported";
        }
    } else if (bk) {
        out->mode = bucket_default(r, bk);
    }
    if (!msg && out->mode == SSE_S3 &&
        s3_req_has_header(r, "x-amz-server-side-encryption-aws-kms-key-id"))
        msg = "Server Side Encryption with AWS KMS managed key requires HTTP header "
              "x-amz-server-side-encryption : aws:kms";
    if (!msg && out->mode == SSE_S3 && !sse_keys_have_current(r->srv->sse_keys)) {
        e = S3_ERR_NOT_IMPLEMENTED;
        msg = "Server-side encryption needs a master key (sse_master_key_file), which this "
              "server has not.";
    }
    if (msg) {
        sse_obj_wipe(out);
        s3_respond_error(r, e, msg);
        return false;
    }
    if (out->mode == SSE_NONE)
        return true;
    int rc = auth_random_bytes(out->dk, AUTH_SSE_KEY_LEN);
    if (rc == 0 && out->mode == SSE_S3) {
        memcpy(out->key_id, r->srv->sse_keys->k[0].id, SSE_KEY_ID_LEN);
        rc = auth_sse_wrap(r->srv->sse_keys->k[0].key, out->dk, out->wrapped);
    } else if (rc == 0) {
        rc = auth_random_bytes(out->verify_salt, sizeof(out->verify_salt));
        customer_verify(out->ckey, out->verify_salt, out->verify);
        if (rc == 0)
            rc = auth_sse_wrap(out->ckey, out->dk, out->wrapped);
    }
    if (rc != 0) {
        sse_obj_wipe(out);
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return false;
    }
    return true;
}

bool
sse_for_read(struct s3_req *r, const struct meta *m, bool is_copy_source, struct sse_obj *out)
{
    struct sse_obj given;
    memset(&given, 0, sizeof(given));
    memset(out, 0, sizeof(*out));
    int has_c = customer_key(r, is_copy_source, &given);
    if (has_c < 0)
        return false;
    struct slice rec = meta_get(m, META_SSE);
    const char *msg = NULL;
    enum s3_error e = S3_ERR_INVALID_REQUEST;
    if (!rec.ptr) {
        if (has_c)
            msg = "The encryption parameters are not applicable to this object.";
    } else if (!record_parse(rec, out)) {
        e = S3_ERR_INTERNAL_ERROR;
        log_error("request %s: corrupt encryption record", r->request_id);
    } else if (out->mode == SSE_S3) {
        const struct sse_key *k = key_find(r->srv->sse_keys, out->key_id);
        char id[2 * SSE_KEY_ID_LEN + 1];
        hex_encode(out->key_id, SSE_KEY_ID_LEN, id);
        if (has_c) {
            msg = "The encryption parameters are not applicable to this object.";
        } else if (!k) {
            e = S3_ERR_INTERNAL_ERROR;
            log_error("request %s: the object's master key %s is not loaded (sse_old_key_files)",
                      r->request_id, id);
        } else if (auth_sse_unwrap(k->key, out->wrapped, out->dk) != 0) {
            e = S3_ERR_INTERNAL_ERROR;
            log_error("request %s: the data key does not unwrap under master key %s", r->request_id,
                      id);
        } else {
            e = S3_OK;
        }
    } else if (!has_c) {
        msg = "The object was stored using a form of Server Side Encryption. The correct "
              "parameters must be provided to retrieve the object.";
    } else {
        uint8_t v[32];
        customer_verify(given.ckey, out->verify_salt, v);
        if (!auth_equal_ct(v, out->verify, 32) ||
            auth_sse_unwrap(given.ckey, out->wrapped, out->dk) != 0) {
            e = S3_ERR_ACCESS_DENIED;
            msg = "The provided customer key does not match the key the object was encrypted "
                  "with.";
        } else {
            e = S3_OK;
            memcpy(out->key_md5, given.key_md5, sizeof(out->key_md5));
            memcpy(out->ckey, given.ckey, sizeof(out->ckey));
            out->has_ckey = true;
        }
    }
    sse_obj_wipe(&given);
    if (!rec.ptr && !msg)
        return true;
    if (e == S3_OK)
        return true;
    sse_obj_wipe(out);
    s3_respond_error(r, e, msg);
    return false;
}

bool
sse_copy_shares(const struct sse_obj *src, const struct sse_obj *dst)
{
    if (src->mode != dst->mode)
        return false;
    if (src->mode == SSE_S3) /* under an old master key: re-encrypted (rotation) */
        return memcmp(src->key_id, dst->key_id, SSE_KEY_ID_LEN) == 0;
    if (src->mode != SSE_C)
        return true;
    uint8_t v[32];
    customer_verify(dst->ckey, src->verify_salt, v);
    return dst->has_ckey && auth_equal_ct(v, src->verify, 32);
}

bool
sse_object_is_encrypted(const struct index_object *obj, struct arena *a)
{
    struct meta m;
    return !meta_decode(a, obj->meta, obj->meta_len, &m) || meta_get(&m, META_SSE).ptr;
}

bool
sse_complete(struct s3_req *r, struct index_part **used, uint32_t n, struct meta *fm,
             struct sse_obj *out)
{
    memset(out, 0, sizeof(*out));
    struct slice rec = meta_get(fm, META_SSE);
    if (!rec.ptr)
        return true;
    if (!record_parse(rec, out))
        return false;
    uint8_t *salts = arena_alloc(r->arena, (size_t)n * AUTH_SSE_SALT_LEN + 1);
    for (uint32_t i = 0; i < n; i++) {
        struct meta pm;
        struct slice salt = SLICE_NULL;
        if (meta_decode(r->arena, used[i]->meta, used[i]->meta_len, &pm))
            salt = meta_get(&pm, META_SSE_SEGMENT);
        if (salt.len != AUTH_SSE_SALT_LEN) {
            log_error("request %s: part %" PRIu32 " of an encrypted upload has no segment salt",
                      r->request_id, used[i]->number);
            return false;
        }
        memcpy(salts + (size_t)i * AUTH_SSE_SALT_LEN, salt.ptr, AUTH_SSE_SALT_LEN);
    }
    sse_meta_set(r->arena, fm, sse_record_format(r->arena, out, salts, n));
    return true;
}

/* ======================================================================
 * Writing
 * ====================================================================== */

/* A unit of a pipelined writer: up to UNIT_PKGS packages, filled by the
 * writer's thread at their stored places (package p at p * STORED_PKG_LEN),
 * sealed in place (ciphertext, then the tag, so the unit becomes the stored
 * bytes) by a worker or by the writer's thread, and written to storage by
 * the writer's thread in one call, in order. */
enum wslot_state { WSLOT_FREE, WSLOT_FULL, WSLOT_SEALING, WSLOT_SEALED };

struct wslot {
    uint8_t *buf;   /* UNIT_PKGS * STORED_PKG_LEN */
    uint64_t index; /* of the first package */
    size_t len;     /* plaintext bytes (all packages full but the last) */
    bool is_last;   /* its last package is the segment's */
    int rc;         /* of the seal */
    enum wslot_state state;
};

struct sse_writer {
    struct auth_sse_pkg *cipher; /* the writer's thread's */
    uint64_t index;              /* of the package (unit: its first) being filled */
    size_t have;                 /* plaintext bytes in it */
    uint8_t *pt;                 /* without workers: the package, */
    uint8_t *ct;                 /* and its sealed form */

    /* With workers: the units, and a job that seals FULL ones. */
    struct offload *offload;
    struct auth_sse_pkg *job_cipher; /* the job's (both may seal at once) */
    struct offload_job job;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool is_running; /* the job is queued or running */
    bool is_freed;   /* destroyed while it ran: the job frees */
    struct wslot slot[WRITER_SLOTS];
    unsigned fill;  /* the slot being filled (FREE) */
    unsigned drain; /* the oldest slot not yet written */
};

static void writer_job(void *arg);
static void writer_free(struct sse_writer *sw);

struct sse_writer *
sse_writer_create(const struct sse_obj *o, uint8_t salt[AUTH_SSE_SALT_LEN])
{
    return sse_writer_create_pipelined(o, salt, NULL);
}

struct sse_writer *
sse_writer_create_pipelined(const struct sse_obj *o, uint8_t salt[AUTH_SSE_SALT_LEN],
                            struct offload *offload)
{
    if (auth_random_bytes(salt, AUTH_SSE_SALT_LEN) != 0)
        return NULL;
    struct sse_writer *sw = xcalloc(1, sizeof(*sw));
    sw->cipher = auth_sse_pkg_create(o->dk, salt);
    if (offload) {
        sw->offload = offload;
        sw->job_cipher = auth_sse_pkg_create(o->dk, salt);
        sw->job.fn = writer_job;
        sw->job.arg = sw;
        pthread_mutex_init(&sw->lock, NULL);
        pthread_cond_init(&sw->cond, NULL);
        for (unsigned i = 0; i < WRITER_SLOTS; i++)
            sw->slot[i].buf = xmalloc(UNIT_PKGS * STORED_PKG_LEN);
    } else {
        sw->pt = xmalloc(SSE_PKG_LEN);
        sw->ct = xmalloc(SSE_PKG_LEN + AUTH_SSE_TAG_LEN);
    }
    if (!sw->cipher || (offload && !sw->job_cipher)) {
        sse_writer_destroy(sw);
        return NULL;
    }
    return sw;
}

/* Seals the package in 'sw->pt' and hands it to storage. */
static int
writer_seal(struct sse_writer *sw, struct storage_writer *w, bool is_last)
{
    int rc = auth_sse_pkg_seal(sw->cipher, sw->index, is_last, sw->pt, sw->have, sw->ct);
    if (rc == 0)
        rc = storage_writer_write(w, sw->ct, sw->have + AUTH_SSE_TAG_LEN);
    sw->index++;
    sw->have = 0;
    return rc;
}

/* Seals unit 'ws' in place with 'cipher': each package's ciphertext
 * where its plaintext was, then its tag. Returns 0 or -errno. */
static int
wslot_seal(struct auth_sse_pkg *cipher, struct wslot *ws)
{
    size_t left = ws->len;
    for (unsigned p = 0; left; p++) {
        size_t n = MIN(left, (size_t)SSE_PKG_LEN);
        uint8_t *pkg = ws->buf + p * STORED_PKG_LEN;
        left -= n;
        int rc = auth_sse_pkg_seal(cipher, ws->index + p, ws->is_last && !left, pkg, n, pkg);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The stored length of unit 'ws' once sealed. */
static size_t
wslot_stored_len(const struct wslot *ws)
{
    size_t pkgs = (ws->len + SSE_PKG_LEN - 1) / SSE_PKG_LEN;
    return ws->len + pkgs * AUTH_SSE_TAG_LEN;
}

/* The job: seals FULL units, oldest first, until none is left. */
static void
writer_job(void *arg)
{
    struct sse_writer *sw = arg;
    pthread_mutex_lock(&sw->lock);
    for (;;) {
        struct wslot *ws = NULL;
        for (unsigned i = 0; i < WRITER_SLOTS && !ws; i++) {
            struct wslot *c = &sw->slot[(sw->drain + i) % WRITER_SLOTS];
            if (c->state == WSLOT_FULL)
                ws = c;
        }
        if (!ws || sw->is_freed)
            break;
        ws->state = WSLOT_SEALING;
        pthread_mutex_unlock(&sw->lock);
        int rc = wslot_seal(sw->job_cipher, ws);
        pthread_mutex_lock(&sw->lock);
        ws->rc = rc;
        ws->state = WSLOT_SEALED;
        pthread_cond_broadcast(&sw->cond);
    }
    sw->is_running = false;
    bool is_freed = sw->is_freed;
    pthread_cond_broadcast(&sw->cond);
    pthread_mutex_unlock(&sw->lock);
    if (is_freed)
        writer_free(sw);
}

/*
 * The writer's thread: writes sealed slots to storage in order, sealing
 * FULL ones itself when the job has not taken them, until slot 'until'
 * is free (every slot when 'until' is WRITER_SLOTS). Waits only for a
 * seal in progress (one package). Returns 0 or -errno.
 */
static int
writer_drain(struct sse_writer *sw, struct storage_writer *w, unsigned until)
{
    int rc = 0;
    pthread_mutex_lock(&sw->lock);
    for (;;) {
        struct wslot *ws = &sw->slot[sw->drain];
        if (ws->state == WSLOT_SEALED) {
            pthread_mutex_unlock(&sw->lock);
            rc = ws->rc;
            if (rc == 0)
                rc = storage_writer_write(w, ws->buf, wslot_stored_len(ws));
            pthread_mutex_lock(&sw->lock);
            ws->state = WSLOT_FREE;
            sw->drain = (sw->drain + 1) % WRITER_SLOTS;
            if (rc < 0)
                break;
            continue;
        }
        /* Pending slots run from 'drain' to 'fill': a FREE oldest one
         * means none is. */
        struct wslot *need = until == WRITER_SLOTS ? ws : &sw->slot[until];
        if (need->state == WSLOT_FREE || ws->state == WSLOT_FREE)
            break;
        if (ws->state == WSLOT_FULL) {
            /* The job lags: seal the oldest here rather than wait. */
            ws->state = WSLOT_SEALING;
            pthread_mutex_unlock(&sw->lock);
            int src = wslot_seal(sw->cipher, ws);
            pthread_mutex_lock(&sw->lock);
            ws->rc = src;
            ws->state = WSLOT_SEALED;
        } else {
            pthread_cond_wait(&sw->cond, &sw->lock); /* a seal in progress */
        }
    }
    pthread_mutex_unlock(&sw->lock);
    return rc;
}

/* Hands the unit being filled to the job as packages from 'sw->index' on,
 * then frees the next one for filling. Returns 0 or -errno. */
static int
writer_hand_off(struct sse_writer *sw, struct storage_writer *w, bool is_last)
{
    struct wslot *ws = &sw->slot[sw->fill];
    pthread_mutex_lock(&sw->lock);
    ws->index = sw->index;
    sw->index += (sw->have + SSE_PKG_LEN - 1) / SSE_PKG_LEN;
    ws->len = sw->have;
    ws->is_last = is_last;
    ws->state = WSLOT_FULL;
    sw->fill = (sw->fill + 1) % WRITER_SLOTS;
    sw->have = 0;
    bool must_start = !sw->is_running;
    sw->is_running = true;
    pthread_mutex_unlock(&sw->lock);
    if (must_start)
        offload_submit(sw->offload, &sw->job);
    return writer_drain(sw, w, sw->fill);
}

int
sse_writer_write(struct sse_writer *sw, struct storage_writer *w, const void *data, size_t len)
{
    const uint8_t *p = data;
    /* Plaintext bytes per hand-off: a package, or a unit of them. */
    size_t cap = sw->offload ? SSE_BLOCK_LEN : SSE_PKG_LEN;
    while (len) {
        if (sw->have == cap) {
            /* More bytes: the full package (unit) does not end the segment. */
            int rc = sw->offload ? writer_hand_off(sw, w, false) : writer_seal(sw, w, false);
            if (rc < 0)
                return rc;
        }
        /* Within the current package; in a unit, at its stored place. */
        size_t off = sw->have % SSE_PKG_LEN;
        size_t n = MIN(len, SSE_PKG_LEN - off);
        uint8_t *dst =
            sw->offload ? sw->slot[sw->fill].buf + sw->have / SSE_PKG_LEN * STORED_PKG_LEN : sw->pt;
        memcpy(dst + off, p, n);
        sw->have += n;
        p += n;
        len -= n;
    }
    return 0;
}

int
sse_writer_finish(struct sse_writer *sw, struct storage_writer *w)
{
    if (!sw->offload)
        return sw->have ? writer_seal(sw, w, true) : 0;
    int rc = sw->have ? writer_hand_off(sw, w, true) : 0;
    return rc < 0 ? rc : writer_drain(sw, w, WRITER_SLOTS);
}

void
sse_writer_destroy(struct sse_writer *sw)
{
    if (!sw)
        return;
    if (sw->offload) {
        /* A queued or running job frees it when it ends (never waited
         * for: the pool may be slow to start it). */
        pthread_mutex_lock(&sw->lock);
        bool is_running = sw->is_running;
        sw->is_freed = true;
        pthread_mutex_unlock(&sw->lock);
        if (is_running)
            return;
    }
    writer_free(sw);
}

static void
writer_free(struct sse_writer *sw)
{
    if (sw->offload) {
        for (unsigned i = 0; i < WRITER_SLOTS; i++) {
            if (sw->slot[i].buf)
                auth_wipe(sw->slot[i].buf, UNIT_PKGS * STORED_PKG_LEN);
            free(sw->slot[i].buf);
        }
        pthread_cond_destroy(&sw->cond);
        pthread_mutex_destroy(&sw->lock);
        auth_sse_pkg_destroy(sw->job_cipher);
    }
    auth_sse_pkg_destroy(sw->cipher);
    if (sw->pt)
        auth_wipe(sw->pt, SSE_PKG_LEN);
    free(sw->pt);
    free(sw->ct);
    free(sw);
}

/* ======================================================================
 * Reading: a stream of plaintext from the packages of a range
 * ====================================================================== */

struct sse_stream {
    struct server *srv;
    struct storage_reader *rd; /* the stored bytes: hot extents, */
    struct tier_reader *trd;   /* or the tier copy */
    bool owns_pins;            /* 'pin' and 'tier_pins' are the stream's to drop */
    uint64_t pin;
    struct tier_pins tier_pins;
    uint64_t rd_base; /* stored offset of the reader's first byte */
    uint32_t n_seg;
    uint64_t *plain;      /* n_seg plaintext sizes */
    uint64_t *stored_off; /* n_seg + 1 */
    uint8_t *salts;       /* n_seg * AUTH_SSE_SALT_LEN */
    uint8_t dk[AUTH_SSE_KEY_LEN];
    uint32_t seg; /* the next package to read: segment, index */
    uint64_t pkg;
    struct auth_sse_pkg *cipher;
    uint32_t cipher_seg;
    uint64_t skip; /* plaintext to drop from the first package */
    uint64_t left; /* plaintext still to deliver */
    size_t pt_pos; /* window of 'pt' not yet delivered */
    size_t pt_len;
    uint64_t ct_pos; /* reader offset of 'ct''s first byte */
    size_t ct_len;   /* stored bytes in 'ct' (read ahead, several packages) */
    uint64_t rd_len; /* stored bytes the reader covers */
    uint64_t n_pkgs; /* packages the range touches */
    bool may_map;    /* a pipelined body on hot extents: mmap the stored bytes */
    uint8_t *map;    /* a window of them: reader bytes [map_pos, map_pos + map_len) */
    uint64_t map_pos;
    size_t map_len, map_skew; /* the mapping starts map_skew bytes before */
    char request_id[24];
    /* Buffers last: not zeroed at creation (a range GET makes one per request). */
    uint8_t ct[SSE_CT_LEN];
    uint8_t pt[SSE_PKG_LEN];
};

static uint64_t
pkg_count(uint64_t plain)
{
    return (plain + SSE_PKG_LEN - 1) / SSE_PKG_LEN;
}

static void
stream_destroy(struct sse_stream *s)
{
    if (!s)
        return;
    if (s->map)
        munmap(s->map, s->map_skew + s->map_len);
    storage_reader_destroy(s->rd);
    tier_reader_destroy(s->trd);
    if (s->owns_pins) {
        storage_reader_unpin(s->srv->storage, s->pin);
        tier_pins_drop(s->srv->tiers, &s->tier_pins, TIER_MAX);
    }
    auth_sse_pkg_destroy(s->cipher);
    free(s->plain);
    free(s->stored_off);
    free(s->salts);
    auth_wipe(s->dk, sizeof(s->dk));
    auth_wipe(s->pt, sizeof(s->pt));
    free(s);
}

/* The plaintext sizes of the 'n' segments of 'obj' ('m' its metadata):
 * its part sizes, or its size. False when they do not add up to it. */
static bool
segment_sizes(const struct index_object *obj, const struct meta *m, uint32_t n, uint64_t *plain)
{
    if (!obj->parts_count) {
        plain[0] = obj->size;
        return n == 1;
    }
    struct slice sizes = meta_get(m, META_PART_SIZES);
    uint64_t total = 0;
    if (sizes.len != (size_t)n * 8)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        plain[i] = 0;
        for (int b = 7; b >= 0; b--)
            plain[i] = plain[i] << 8 | (uint8_t)sizes.ptr[(size_t)i * 8 + (size_t)b];
        if (plain[i] > obj->size - total)
            return false;
        total += plain[i];
    }
    return total == obj->size;
}

int
sse_stored_size(const struct index_object *obj, struct arena *a, uint64_t *out)
{
    struct meta m;
    struct sse_obj o;
    uint32_t n = obj->parts_count ? obj->parts_count : 1;
    *out = obj->size;
    if (!meta_decode(a, obj->meta, obj->meta_len, &m))
        return -EILSEQ;
    struct slice rec = meta_get(&m, META_SSE);
    if (!rec.ptr)
        return 0;
    uint64_t *plain = arena_calloc(a, n, sizeof(*plain));
    if (!record_parse(rec, &o) || o.n_segments != n || !segment_sizes(obj, &m, n, plain))
        return -EILSEQ;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += sse_stored_len(plain[i]);
    *out = total;
    return 0;
}

/*
 * Builds the stream of plaintext bytes [first, first+len) (len > 0) of
 * 'obj': its segments from the record and the part sizes, and a reader of
 * exactly the stored bytes of the packages the range touches: on the hot
 * extents, or through the tier the extent flags name (under the request's
 * pins). Returns 0 or -errno.
 */
static int
stream_create(struct s3_req *r, const struct index_object *obj, const struct meta *m,
              const struct sse_obj *o, uint64_t first, uint64_t len, struct sse_stream **out)
{
    struct sse_stream *s = xmalloc(sizeof(*s));
    memset(s, 0, offsetof(struct sse_stream, ct));
    int rc = -EIO;
    uint32_t n = obj->parts_count ? obj->parts_count : 1;
    bool is_tiered = TIER_OF(tier_object_flags(obj)) != TIER_HOT;
    *out = NULL;
    s->srv = r->srv;
    snprintf(s->request_id, sizeof(s->request_id), "%s", r->request_id);
    memcpy(s->dk, o->dk, sizeof(s->dk));
    s->cipher_seg = UINT32_MAX;
    if (o->n_segments != n) {
        log_error("request %s: encryption record has %" PRIu32 " segments for %" PRIu32 " parts",
                  r->request_id, o->n_segments, n);
        goto fail;
    }
    s->n_seg = n;
    s->plain = xcalloc(n, sizeof(*s->plain));
    s->stored_off = xcalloc(n + 1, sizeof(*s->stored_off));
    s->salts = xmalloc((size_t)n * AUTH_SSE_SALT_LEN);
    memcpy(s->salts, o->salts, (size_t)n * AUTH_SSE_SALT_LEN);
    uint64_t total_extents = 0;
    for (uint32_t i = 0; i < obj->n_extents; i++)
        total_extents += obj->extents[i].len;
    bool is_sane = segment_sizes(obj, m, n, s->plain);
    for (uint32_t i = 0; i < n; i++)
        s->stored_off[i + 1] = s->stored_off[i] + sse_stored_len(s->plain[i]);
    /* A tier's extents are its own (a blob, a remote object): it checks
     * the stored length itself. */
    if (!is_sane || (!is_tiered && s->stored_off[n] != total_extents) || first + len > obj->size) {
        log_error("request %s: encrypted object layout does not match its extents", r->request_id);
        goto fail;
    }
    /* The segment and package of the first and the last byte. */
    /* ... and their indexes among the object's packages. */
    uint64_t plain_off = 0, last = first + len - 1, start = 0, end = 0;
    uint64_t pkgs_before = 0, start_pkg = 0, end_pkg = 0;
    bool has_start = false;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t seg_end = plain_off + s->plain[i];
        if (!has_start && first < seg_end) {
            s->seg = i;
            s->pkg = (first - plain_off) / SSE_PKG_LEN;
            s->skip = (first - plain_off) % SSE_PKG_LEN;
            start = s->stored_off[i] + s->pkg * STORED_PKG_LEN;
            start_pkg = pkgs_before + s->pkg;
            has_start = true;
        }
        if (last < seg_end) {
            uint64_t k = (last - plain_off) / SSE_PKG_LEN;
            uint64_t plen = MIN((uint64_t)SSE_PKG_LEN, s->plain[i] - k * SSE_PKG_LEN);
            end = s->stored_off[i] + k * STORED_PKG_LEN + plen + AUTH_SSE_TAG_LEN;
            end_pkg = pkgs_before + k;
            break;
        }
        plain_off = seg_end;
        pkgs_before += pkg_count(s->plain[i]);
    }
    s->rd_base = start;
    s->rd_len = end - start;
    s->n_pkgs = end_pkg - start_pkg + 1;
    s->left = len;
    if (is_tiered) {
        rc = tier_reader_create_stored(r->srv->tiers, &r->tier_pins, obj, s->stored_off[n], start,
                                       end - start, &s->trd);
    } else {
        struct storage_extent *se = arena_calloc(r->arena, obj->n_extents + 1, sizeof(*se));
        extents_from_index(obj->extents, obj->n_extents, se);
        rc = storage_reader_create(r->srv->storage, r->pin, se, obj->n_extents, start, end - start,
                                   &s->rd);
    }
    if (rc < 0)
        goto fail;
    *out = s;
    return 0;

fail:
    stream_destroy(s);
    return rc;
}

/* The plaintext length of the next package (moving past empty segments);
 * 0 when none is left. */
static size_t
stream_next_len(struct sse_stream *s)
{
    while (s->seg < s->n_seg && s->pkg >= pkg_count(s->plain[s->seg])) {
        s->seg++;
        s->pkg = 0;
    }
    if (s->seg == s->n_seg)
        return 0;
    return (size_t)MIN((uint64_t)SSE_PKG_LEN, s->plain[s->seg] - s->pkg * SSE_PKG_LEN);
}

/* The stored bytes [pos, pos + need) of the reader in a mapping of its
 * volume (up to MAP_WINDOW of its span from 'pos', prefaulted), so that
 * decryption reads the page cache without a copy. NULL when they do not
 * lie in one span or cannot be mapped (the caller reads them instead). */
static const uint8_t *
stream_mapped(struct sse_stream *s, uint64_t pos, size_t need)
{
    if (s->map && pos >= s->map_pos && pos + need <= s->map_pos + s->map_len)
        return s->map + s->map_skew + (pos - s->map_pos);
    if (s->map)
        munmap(s->map, s->map_skew + s->map_len);
    s->map = NULL;
    struct storage_send_span sp;
    if (storage_reader_span(s->rd, pos, &sp) < 0 || sp.len < need)
        return NULL;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    size_t len = (size_t)MIN(sp.len, (uint64_t)MAP_WINDOW);
    size_t skew = (size_t)(sp.offset % page);
    void *m = mmap(NULL, skew + len, PROT_READ, MAP_SHARED | MAP_POPULATE, sp.fd,
                   (off_t)(sp.offset - skew));
    if (m == MAP_FAILED)
        return NULL;
    s->map = m;
    s->map_pos = pos;
    s->map_len = len;
    s->map_skew = skew;
    return s->map + skew;
}

/* The stored bytes [pos, pos + need) of the reader (one package): mapped
 * (s->may_map), else read into 'ct' with the packages after it (up to
 * SSE_CT_LEN, one read call) unless they are there already. NULL on
 * failure, with '*rc'. */
static const uint8_t *
stream_stored(struct sse_stream *s, uint64_t pos, size_t need, int *rc)
{
    if (pos >= s->ct_pos && pos + need <= s->ct_pos + s->ct_len)
        return s->ct + (pos - s->ct_pos);
    const uint8_t *m = s->may_map ? stream_mapped(s, pos, need) : NULL;
    if (m)
        return m;
    size_t want = (size_t)MIN((uint64_t)SSE_CT_LEN, s->rd_len - MIN(pos, s->rd_len)), got = 0;
    s->ct_pos = pos;
    s->ct_len = 0;
    *rc = -EIO;
    if (want < need)
        return NULL;
    while (got < want) {
        ssize_t n = s->rd ? storage_reader_read(s->rd, pos + got, s->ct + got, want - got)
                          : tier_reader_read(s->trd, pos + got, s->ct + got, want - got);
        if (n <= 0) {
            *rc = n < 0 ? (int)n : -EIO;
            return NULL;
        }
        got += (size_t)n;
    }
    s->ct_len = got;
    return s->ct;
}

/* Reads the next package and opens it into 'dst' ('*plen' bytes). Returns
 * 0, -EBADMSG (it does not authenticate) or -errno. */
static int
stream_next(struct sse_stream *s, uint8_t *dst, size_t *plen)
{
    size_t pl = stream_next_len(s);
    int rc = -EIO;
    if (pl == 0)
        return -EIO;
    size_t sl = pl + AUTH_SSE_TAG_LEN;
    uint64_t pos = s->stored_off[s->seg] + s->pkg * STORED_PKG_LEN - s->rd_base;
    const uint8_t *ct = stream_stored(s, pos, sl, &rc);
    if (!ct)
        return rc;
    if (s->cipher_seg != s->seg) {
        auth_sse_pkg_destroy(s->cipher);
        s->cipher = auth_sse_pkg_create(s->dk, s->salts + (size_t)s->seg * AUTH_SSE_SALT_LEN);
        s->cipher_seg = s->seg;
        if (!s->cipher) {
            s->cipher_seg = UINT32_MAX;
            return -EIO;
        }
    }
    bool is_last = s->pkg + 1 == pkg_count(s->plain[s->seg]);
    rc = auth_sse_pkg_open(s->cipher, s->pkg, is_last, ct, sl, dst);
    if (rc < 0) {
        log_error("request %s: encrypted package %" PRIu64 " of segment %" PRIu32
                  " does not authenticate (corrupt on disk)",
                  s->request_id, s->pkg, s->seg);
        return rc;
    }
    s->pkg++;
    *plen = pl;
    return 0;
}

/* Delivers up to 'max' bytes of plaintext into 'buf'. Returns the bytes
 * (0 at the end) or -errno. */
static ssize_t
stream_read(struct sse_stream *s, uint8_t *buf, size_t max)
{
    size_t out = 0;
    while (out < max && s->left) {
        if (s->pt_pos < s->pt_len) {
            size_t n = (size_t)MIN(MIN((uint64_t)(s->pt_len - s->pt_pos), s->left), max - out);
            memcpy(buf + out, s->pt + s->pt_pos, n);
            s->pt_pos += n;
            out += n;
            s->left -= n;
            continue;
        }
        size_t next = stream_next_len(s), plen;
        int rc;
        if (s->skip == 0 && next && next <= s->left && next <= max - out) {
            /* A whole package wanted and room for it: open it in place. */
            rc = stream_next(s, buf + out, &plen);
            if (rc < 0)
                return rc;
            out += plen;
            s->left -= plen;
            continue;
        }
        rc = stream_next(s, s->pt, &plen);
        if (rc < 0)
            return rc;
        s->pt_len = plen;
        s->pt_pos = (size_t)s->skip;
        s->skip = 0;
    }
    return (ssize_t)out;
}

/* Delivers the plaintext of the stream's next 'n' packages (fewer at the
 * end of the range) into 'buf' (room for n * SSE_PKG_LEN bytes), whole
 * packages opened in place; with 'buf' NULL, passes over them without
 * reading. The package opened before the answer (in 'pt') counts as the
 * first. Returns the bytes or -errno. */
static ssize_t
stream_packages(struct sse_stream *s, uint8_t *buf, unsigned n)
{
    size_t out = 0;
    for (unsigned k = 0; k < n && s->left; k++) {
        if (s->pt_pos < s->pt_len) {
            size_t m = (size_t)MIN((uint64_t)(s->pt_len - s->pt_pos), s->left);
            if (buf)
                memcpy(buf + out, s->pt + s->pt_pos, m);
            s->pt_pos = s->pt_len;
            out += m;
            s->left -= m;
            continue;
        }
        size_t pl = stream_next_len(s), plen;
        if (pl <= s->skip)
            return -EIO; /* bytes left but no package: a layout bug */
        size_t m = (size_t)MIN((uint64_t)(pl - s->skip), s->left);
        int rc = 0;
        if (!buf)
            s->pkg++;
        else if (s->skip == 0 && m == pl)
            rc = stream_next(s, buf + out, &plen);
        else if ((rc = stream_next(s, s->pt, &plen)) == 0)
            memcpy(buf + out, s->pt + s->skip, m);
        if (rc < 0)
            return rc;
        s->skip = 0;
        out += m;
        s->left -= m;
    }
    return (ssize_t)out;
}

/* A body of up to PIPE_MIN bytes: decrypted in MHD's callback. */
static ssize_t
stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct sse_stream *s = cls;
    (void)pos;
    if (s->left == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    ssize_t n = stream_read(s, (uint8_t *)buf, max);
    if (n <= 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void
stream_free(void *cls)
{
    stream_destroy(cls);
}

/* ---- the pipeline of a large body ---------------------------------------
 *
 * The body is cut into units of UNIT_PKGS packages (unit 0 starts at the
 * range's first package, so only the first and last units are short).
 * Lane L (a job on the offload pool with its own stream: reader, mapping,
 * cipher context) decrypts units L, L + n_lanes, L + 2 n_lanes, ... each
 * into slot (unit % RING_SLOTS), passing over the others' packages without
 * reading them; packages are independent, so lanes run at once on as many
 * cores. A lane works only on units less than RING_SLOTS ahead of the
 * reader's, so a slot is rewritten only after it was sent. MHD's content
 * reader (event loop) copies ready slots out strictly in unit order,
 * restarts lanes as slots free and, when the unit it needs is not ready,
 * suspends the connection until that unit's lane resumes it. A unit that
 * fails (a package does not authenticate) is never marked ready: the units
 * before it go out, then the body ends in error. Memory per body is the
 * ring; the lanes never wait for the client.
 *
 *      reader: head ---------> (ready, in order)
 *      slots:  [u8][u1][u2][u3][u4][u5][u6][u7]   u = unit, slot = u % 8
 *      lane 0:  u0  u2  u4  u6  u8 ...   lane 1: u1 u3 u5 u7 u9 ...
 */

struct sse_pipe;
struct pipe_lane {
    struct sse_pipe *p;
    unsigned id;
    struct offload_job job;
    struct sse_stream *s; /* the lane's alone */
    uint64_t at;          /* the unit 's' is positioned at (lane's alone) */
};

struct sse_pipe {
    /* Fixed once the answer is queued. */
    struct server *srv;
    struct MHD_Connection *conn;
    unsigned n_lanes;
    struct pipe_lane lane[PIPE_LANES];
    uint64_t n_units;
    uint8_t *slot[RING_SLOTS];   /* SSE_BLOCK_LEN plaintext bytes each */
    size_t slot_len[RING_SLOTS]; /* written by a lane before 'ready_unit' names it */

    /* Shared by the lanes and the reader, under 'lock'. */
    pthread_mutex_t lock;
    uint64_t head;                   /* the unit the reader sends next */
    size_t head_off;                 /* bytes of it already handed to MHD */
    uint64_t ready_unit[RING_SLOTS]; /* unit + 1 a slot holds decrypted; 0: none */
    uint64_t lane_next[PIPE_LANES];  /* the next unit of each lane */
    bool is_running[PIPE_LANES];     /* the lane is queued or running */
    uint64_t failed_unit;            /* the first unit that failed; UINT64_MAX: none */
    bool is_suspended;               /* the reader suspended the connection */
    bool is_freed;                   /* the response is gone: whoever runs last frees */
};

static void
pipe_destroy(struct sse_pipe *p)
{
    /* Lane 0's stream owns the pins: it goes last. */
    for (unsigned i = PIPE_LANES; i-- > 0;)
        stream_destroy(p->lane[i].s);
    for (unsigned i = 0; i < RING_SLOTS; i++)
        free(p->slot[i]);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Whether lane 'id' has a unit to work on now. Under p->lock. */
static bool
pipe_lane_has_work(const struct sse_pipe *p, unsigned id)
{
    uint64_t j = p->lane_next[id];
    return !p->is_freed && j < p->n_units && j < p->head + RING_SLOTS && j < p->failed_unit;
}

/* Lane 'arg': decrypts its units into their slots until it runs
 * RING_SLOTS ahead of the reader, its units are done or one failed,
 * resuming the connection when the reader waits for the unit it finished.
 * Runs with is_running[id] set; the last of the lanes and the response to
 * go frees the pipe. */
static void
pipe_job(void *arg)
{
    struct pipe_lane *ln = arg;
    struct sse_pipe *p = ln->p;
    struct MHD_Connection *conn = p->conn;
    unsigned id = ln->id;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        if (!pipe_lane_has_work(p, id)) {
            bool must_resume = p->is_suspended;
            p->is_suspended = false;
            p->is_running[id] = false;
            bool must_free = p->is_freed;
            for (unsigned i = 0; i < p->n_lanes; i++)
                must_free = must_free && !p->is_running[i];
            pthread_mutex_unlock(&p->lock);
            if (must_resume)
                MHD_resume_connection(conn);
            if (must_free)
                pipe_destroy(p);
            return;
        }
        uint64_t j = p->lane_next[id];
        unsigned w = (unsigned)(j % RING_SLOTS);
        pthread_mutex_unlock(&p->lock);
        /* Slot 'w' last held unit j - RING_SLOTS, which the reader has sent
         * (j < head + RING_SLOTS): it is this lane's until marked ready. */
        ssize_t n = 0;
        if (j > ln->at)
            n = stream_packages(ln->s, NULL, (unsigned)((j - ln->at) * UNIT_PKGS));
        if (n >= 0)
            n = stream_packages(ln->s, p->slot[w], UNIT_PKGS);
        ln->at = j + 1;
        pthread_mutex_lock(&p->lock);
        if (n > 0) {
            p->slot_len[w] = (size_t)n;
            p->ready_unit[w] = j + 1;
        } else if (j < p->failed_unit) {
            p->failed_unit = j;
        }
        p->lane_next[id] = j + p->n_lanes;
        bool must_resume = p->is_suspended && j == p->head;
        if (must_resume)
            p->is_suspended = false;
        pthread_mutex_unlock(&p->lock);
        if (must_resume)
            MHD_resume_connection(conn);
    }
}

/* Queues lane 'id' (p->is_running[id] already set); with a thread per
 * connection, runs it here. */
static void
pipe_start(struct sse_pipe *p, unsigned id)
{
    if (p->srv->offload)
        offload_submit(p->srv->offload, &p->lane[id].job);
    else
        pipe_job(&p->lane[id]);
}

static ssize_t
pipe_read_cb(void *cls, uint64_t pos, char *out, size_t max)
{
    struct sse_pipe *p = cls;
    (void)pos;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        uint64_t head = p->head;
        size_t off = p->head_off;
        unsigned ready = 0;
        while (ready < RING_SLOTS && p->ready_unit[(head + ready) % RING_SLOTS] == head + ready + 1)
            ready++;
        if (ready == 0) {
            if (head == p->n_units || head >= p->failed_unit) {
                bool is_failed = head != p->n_units;
                pthread_mutex_unlock(&p->lock);
                return is_failed ? MHD_CONTENT_READER_END_WITH_ERROR
                                 : MHD_CONTENT_READER_END_OF_STREAM;
            }
            unsigned id = (unsigned)(head % p->n_lanes);
            if (p->is_running[id]) {
                p->is_suspended = true;
                MHD_suspend_connection(p->conn);
                pthread_mutex_unlock(&p->lock);
                return 0;
            }
            p->is_running[id] = true;
            pthread_mutex_unlock(&p->lock);
            pipe_start(p, id);
            continue; /* after shutdown the lane ran here: its slots are in */
        }
        pthread_mutex_unlock(&p->lock);
        /* The ready slots are the reader's until it gives them back. */
        size_t n = 0;
        unsigned used = 0;
        while (n < max && used < ready) {
            unsigned w = (unsigned)((head + used) % RING_SLOTS);
            size_t k = MIN(max - n, p->slot_len[w] - off);
            memcpy(out + n, p->slot[w] + off, k);
            n += k;
            off += k;
            if (off == p->slot_len[w]) {
                used++;
                off = 0;
            }
        }
        bool must_start[PIPE_LANES] = {false};
        pthread_mutex_lock(&p->lock);
        for (unsigned i = 0; i < used; i++)
            p->ready_unit[(head + i) % RING_SLOTS] = 0;
        p->head = head + used;
        p->head_off = off;
        for (unsigned i = 0; used && i < p->n_lanes; i++) {
            must_start[i] = !p->is_running[i] && pipe_lane_has_work(p, i);
            if (must_start[i])
                p->is_running[i] = true;
        }
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 0; i < p->n_lanes; i++)
            if (must_start[i])
                pipe_start(p, i);
        return (ssize_t)n;
    }
}

static void
pipe_free_cb(void *cls)
{
    struct sse_pipe *p = cls;
    pthread_mutex_lock(&p->lock);
    p->is_freed = true;
    bool is_running = false;
    for (unsigned i = 0; i < p->n_lanes; i++)
        is_running = is_running || p->is_running[i];
    pthread_mutex_unlock(&p->lock);
    if (!is_running)
        pipe_destroy(p);
}

struct MHD_Response *
sse_body_response(struct s3_req *r, const struct index_object *obj, const struct meta *m,
                  const struct sse_obj *o, uint64_t first, uint64_t len, bool is_head)
{
    if (is_head || len == 0)
        return s3_body_response(r, obj, first, len, is_head);
    uint32_t id = TIER_OF(tier_object_flags(obj));
    if (id != TIER_HOT && storage_reader_narrow(r->srv->storage, r->pin, NULL, 0, 0, 0) < 0)
        return NULL; /* tiered: no hot extent held back, only the tier's */
    tier_pins_drop(r->srv->tiers, &r->tier_pins, id == TIER_HOT ? TIER_MAX : id);
    struct sse_stream *s;
    if (stream_create(r, obj, m, o, first, len, &s) < 0)
        return NULL;
    /* The first package before the status goes out: a bad one is a 500. */
    size_t plen;
    if (stream_next(s, s->pt, &plen) < 0) {
        stream_destroy(s);
        return NULL;
    }
    s->pt_len = plen;
    s->pt_pos = (size_t)s->skip;
    s->skip = 0;
    struct MHD_Response *resp;
    if (len <= PIPE_MIN) {
        resp = MHD_create_response_from_callback(len, (size_t)MAX(len, (uint64_t)4096), stream_cb,
                                                 s, stream_free);
        if (!resp)
            stream_destroy(s);
        return resp;
    }
    struct sse_pipe *p = xcalloc(1, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
    p->srv = r->srv;
    p->conn = r->conn;
    p->failed_unit = UINT64_MAX;
    p->n_units = (s->n_pkgs + UNIT_PKGS - 1) / UNIT_PKGS;
    p->lane[0].s = s;
    p->n_lanes = 1;
    /* More lanes on hot extents only: each maps the stored bytes itself,
     * where a tier reader would fetch (and a cold one decompress) them
     * once per lane. */
    if (s->rd) {
        while (p->n_lanes < PIPE_LANES &&
               stream_create(r, obj, m, o, first, len, &p->lane[p->n_lanes].s) == 0)
            p->n_lanes++;
    }
    for (unsigned i = 0; i < p->n_lanes; i++) {
        p->lane[i].p = p;
        p->lane[i].id = i;
        p->lane[i].job.fn = pipe_job;
        p->lane[i].job.arg = &p->lane[i];
        p->lane_next[i] = i;
        p->lane[i].s->may_map = p->lane[i].s->rd != NULL;
    }
    for (unsigned i = 0; i < RING_SLOTS; i++)
        p->slot[i] = xmalloc(SSE_BLOCK_LEN);
    /* Lane 0's stream takes the request's pins: its lanes may still read
     * after the request completed (a client gone), until they see the
     * response freed. */
    s->owns_pins = true;
    s->pin = r->pin;
    s->tier_pins = r->tier_pins;
    r->has_pin = false;
    resp = MHD_create_response_from_callback(len, SSE_BLOCK_LEN, pipe_read_cb, p, pipe_free_cb);
    if (!resp) {
        pipe_destroy(p);
        return NULL;
    }
    /* Decrypt ahead while the headers go out. */
    for (unsigned i = 0; i < p->n_lanes; i++) {
        p->is_running[i] = true;
        pipe_start(p, i);
    }
    return resp;
}

/* ======================================================================
 * Copies
 * ====================================================================== */

int
sse_copy_range(struct s3_req *r, const struct index_object *src, const struct meta *src_meta,
               const struct sse_obj *src_sse, uint64_t first, uint64_t len,
               const struct sse_obj *dst, struct storage_writer **out, uint8_t md5[16],
               uint8_t salt[AUTH_SSE_SALT_LEN])
{
    struct sse_stream *s = NULL;
    struct storage_reader *rd = NULL;
    struct tier_reader *trd = NULL;
    struct sse_writer *sw = NULL;
    struct auth_checksum ck;
    uint8_t *buf = xmalloc(SSE_BLOCK_LEN);
    uint8_t dig[AUTH_CK_MAX_DIGEST];
    auth_checksum_init(&ck, AUTH_CK_MD5);
    *out = NULL;
    int rc = storage_writer_create(r->srv->storage, dst->mode ? sse_stored_len(len) : len, out);
    if (rc < 0)
        goto fail;
    if (dst->mode && !(sw = sse_writer_create(dst, salt))) {
        rc = -EIO;
        goto fail;
    }
    if (len && src_sse->mode) {
        rc = stream_create(r, src, src_meta, src_sse, first, len, &s);
    } else if (len && TIER_OF(tier_object_flags(src)) != TIER_HOT) {
        rc = tier_reader_create(r->srv->tiers, &r->tier_pins, src, first, len, &trd);
    } else if (len && !src->inline_len) {
        struct storage_extent *se = arena_calloc(r->arena, src->n_extents + 1, sizeof(*se));
        extents_from_index(src->extents, src->n_extents, se);
        rc = storage_reader_create(r->srv->storage, r->pin, se, src->n_extents, first, len, &rd);
    } else if (len && first + len > src->inline_len) {
        rc = -EIO;
    }
    uint64_t done = 0;
    while (rc == 0 && done < len) {
        ssize_t n;
        const uint8_t *p = buf;
        if (s) {
            n = stream_read(s, buf, SSE_BLOCK_LEN);
        } else if (rd) {
            n = storage_reader_read(rd, done, buf,
                                    (size_t)MIN((uint64_t)SSE_BLOCK_LEN, len - done));
        } else if (trd) {
            n = tier_reader_read(trd, done, buf, (size_t)MIN((uint64_t)SSE_BLOCK_LEN, len - done));
        } else {
            p = src->inline_data + first + done;
            n = (ssize_t)(len - done);
        }
        if (n <= 0) {
            rc = n < 0 ? (int)n : -EIO;
            break;
        }
        auth_checksum_update(&ck, p, (size_t)n);
        rc = sw ? sse_writer_write(sw, *out, p, (size_t)n)
                : storage_writer_write(*out, p, (size_t)n);
        done += (uint64_t)n;
    }
    if (rc == 0 && sw)
        rc = sse_writer_finish(sw, *out);
    if (rc == 0)
        rc = storage_writer_finish(*out);

fail:
    auth_checksum_final(&ck, dig);
    memcpy(md5, dig, 16);
    stream_destroy(s);
    storage_reader_destroy(rd);
    tier_reader_destroy(trd);
    sse_writer_destroy(sw);
    free(buf);
    return rc;
}

int
sse_copy_object(struct s3_req *r, const struct index_bucket *bk, const struct index_object *src,
                const struct meta *src_meta, const struct sse_obj *src_sse,
                const struct meta *new_meta, const struct sse_obj *dst, struct index_object *out)
{
    struct storage_writer *w = NULL;
    uint8_t salt[AUTH_SSE_SALT_LEN];
    memset(out, 0, sizeof(*out));
    int rc = sse_copy_range(r, src, src_meta, src_sse, 0, src->size, dst, &w, out->etag, salt);
    if (rc < 0)
        goto fail;
    sse_etag(dst, out->etag);
    /* One new segment: the part layout and part-wise checksums are gone. */
    struct meta m;
    m.entries = arena_calloc(r->arena, new_meta->n + 1, sizeof(*m.entries));
    m.n = 0;
    bool is_composite = slice_eq(meta_get(new_meta, "x-amz-checksum-type"), SLICE_LIT("COMPOSITE"));
    for (size_t i = 0; i < new_meta->n; i++) {
        struct slice name = new_meta->entries[i].name;
        if (slice_eq(name, SLICE_LIT(META_PART_SIZES)) ||
            (is_composite && slice_has_prefix(name, SLICE_LIT("x-amz-checksum-"))))
            continue;
        m.entries[m.n++] = new_meta->entries[i];
    }
    sse_meta_drop(&m);
    if (dst->mode)
        sse_meta_set(r->arena, &m, sse_record_format(r->arena, dst, salt, 1));
    out->size = src->size;
    out->mtime_ns = clock_now_ns();
    meta_encode(r->arena, &m, &out->meta, &out->meta_len);
    const struct storage_extent *se;
    size_t n = storage_writer_extents(w, &se);
    out->extents = extents_to_index(r->arena, se, n);
    out->n_extents = (uint32_t)n;
    out->sums = storage_writer_sums(w, &out->sums_len);
    const char *lock_msg;
    enum s3_error le = s3_lock_for_write(r, bk, out, out->mtime_ns, false, &lock_msg);
    if (le != S3_OK) {
        s3_respond_error(r, le, lock_msg);
        rc = 1;
        goto fail;
    }
    struct index_op op = {
        .kind = INDEX_OP_PUT,
        .bucket_id = bk->id,
        .key = r->key,
        .object = out,
        .arena = r->arena,
    };
    rc = committer_run(r->srv->committer, &op, 1);
    if (rc == 0)
        rc = op.result;
    out->version_flags = op.result_version_flags;
    memcpy(out->version_id, op.result_version_id, INDEX_VERSION_ID_LEN);

fail:
    storage_writer_destroy(w, rc == 0);
    return rc;
}
