/*
 * sse.c: the cryptography of server-side encryption at rest: data keys
 * wrapped under a key-encryption key (AES-256 key wrap, RFC 3394), and the
 * authenticated packages objects are stored in (AES-256-GCM).
 *
 * A segment (an object, or one part of a multipart object) has a 16-byte
 * random salt; its key is HMAC-SHA256(data key, "shardstore-sse-segment-v1"
 * || salt), so parts encrypted independently never share a key. Package i
 * of a segment is sealed with nonce = salt[0..4) || be64(i) and additional
 * data "SSE1" || be64(i) || is_last: a package moved to another index, to
 * another segment, or a truncated segment does not open. The EVP types stay
 * in this file.
 */
#include "auth/auth_int.h"

#include <errno.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#define SEGMENT_LABEL "shardstore-sse-segment-v1"

struct auth_sse_pkg {
    EVP_CIPHER_CTX *enc;
    EVP_CIPHER_CTX *dec;
    uint8_t key[AUTH_SSE_KEY_LEN];
    uint8_t salt[AUTH_SSE_SALT_LEN];
};

/* One AES-256 key wrap or unwrap of 'in_len' bytes into 'out'. Returns the
 * output length or -1. */
static int
key_wrap(bool is_wrap, const uint8_t kek[AUTH_SSE_KEY_LEN], const uint8_t *in, int in_len,
         uint8_t *out)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n = 0, fin = 0, rc = -1;
    if (!ctx)
        goto fail;
    EVP_CIPHER_CTX_set_flags(ctx, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
    if (EVP_CipherInit_ex(ctx, EVP_aes_256_wrap(), NULL, kek, NULL, is_wrap ? 1 : 0) != 1)
        goto fail;
    if (EVP_CipherUpdate(ctx, out, &n, in, in_len) != 1)
        goto fail;
    if (EVP_CipherFinal_ex(ctx, out + n, &fin) != 1)
        goto fail;
    rc = n + fin;

fail:
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

int
auth_sse_wrap(const uint8_t kek[AUTH_SSE_KEY_LEN], const uint8_t dk[AUTH_SSE_KEY_LEN],
              uint8_t out[AUTH_SSE_WRAPPED_LEN])
{
    return key_wrap(true, kek, dk, AUTH_SSE_KEY_LEN, out) == AUTH_SSE_WRAPPED_LEN ? 0 : -EIO;
}

int
auth_sse_unwrap(const uint8_t kek[AUTH_SSE_KEY_LEN], const uint8_t in[AUTH_SSE_WRAPPED_LEN],
                uint8_t dk[AUTH_SSE_KEY_LEN])
{
    uint8_t tmp[AUTH_SSE_WRAPPED_LEN + 16];
    int n = key_wrap(false, kek, in, AUTH_SSE_WRAPPED_LEN, tmp);
    int rc = -EBADMSG;
    if (n == AUTH_SSE_KEY_LEN) {
        memcpy(dk, tmp, AUTH_SSE_KEY_LEN);
        rc = 0;
    }
    OPENSSL_cleanse(tmp, sizeof(tmp));
    return rc;
}

struct auth_sse_pkg *
auth_sse_pkg_create(const uint8_t dk[AUTH_SSE_KEY_LEN], const uint8_t salt[AUTH_SSE_SALT_LEN])
{
    struct auth_sse_pkg *p = xcalloc(1, sizeof(*p));
    uint8_t msg[sizeof(SEGMENT_LABEL) - 1 + AUTH_SSE_SALT_LEN];
    memcpy(msg, SEGMENT_LABEL, sizeof(SEGMENT_LABEL) - 1);
    memcpy(msg + sizeof(SEGMENT_LABEL) - 1, salt, AUTH_SSE_SALT_LEN);
    auth_hmac_sha256(dk, AUTH_SSE_KEY_LEN, msg, sizeof(msg), p->key);
    memcpy(p->salt, salt, AUTH_SSE_SALT_LEN);
    return p;
}

/* The context of one direction, set up with the segment key on first use
 * (a range GET only decrypts, a PUT only encrypts). Returns NULL on an
 * OpenSSL failure. */
static EVP_CIPHER_CTX *
pkg_ctx(struct auth_sse_pkg *p, bool is_enc)
{
    EVP_CIPHER_CTX **ctx = is_enc ? &p->enc : &p->dec;
    if (!*ctx) {
        EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
        if (c && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, p->key, NULL, is_enc ? 1 : 0) != 1) {
            EVP_CIPHER_CTX_free(c);
            c = NULL;
        }
        *ctx = c;
    }
    return *ctx;
}

void
auth_sse_pkg_destroy(struct auth_sse_pkg *p)
{
    if (!p)
        return;
    EVP_CIPHER_CTX_free(p->enc);
    EVP_CIPHER_CTX_free(p->dec);
    OPENSSL_cleanse(p->key, sizeof(p->key));
    free(p);
}

/* The nonce and additional data of package 'index'. */
static void
pkg_iv_aad(const struct auth_sse_pkg *p, uint64_t index, bool is_last, uint8_t iv[12],
           uint8_t aad[13])
{
    memcpy(iv, p->salt, 4);
    memcpy(aad, "SSE1", 4);
    for (int i = 0; i < 8; i++) {
        iv[4 + i] = (uint8_t)(index >> (56 - 8 * i));
        aad[4 + i] = iv[4 + i];
    }
    aad[12] = is_last ? 1 : 0;
}

int
auth_sse_pkg_seal(struct auth_sse_pkg *p, uint64_t index, bool is_last, const void *in, size_t len,
                  void *out)
{
    uint8_t iv[12], aad[13];
    uint8_t *o = out;
    int n = 0, fin = 0;
    if (len > AUTH_SSE_PKG_MAX)
        return -EINVAL;
    if (!pkg_ctx(p, true))
        return -EIO;
    pkg_iv_aad(p, index, is_last, iv, aad);
    if (EVP_EncryptInit_ex(p->enc, NULL, NULL, NULL, iv) != 1 ||
        EVP_EncryptUpdate(p->enc, NULL, &n, aad, sizeof(aad)) != 1 ||
        EVP_EncryptUpdate(p->enc, o, &n, in, (int)len) != 1 ||
        EVP_EncryptFinal_ex(p->enc, o + n, &fin) != 1 || (size_t)(n + fin) != len ||
        EVP_CIPHER_CTX_ctrl(p->enc, EVP_CTRL_GCM_GET_TAG, AUTH_SSE_TAG_LEN, o + len) != 1)
        return -EIO;
    return 0;
}

int
auth_sse_pkg_open(struct auth_sse_pkg *p, uint64_t index, bool is_last, const void *in, size_t len,
                  void *out)
{
    uint8_t iv[12], aad[13], tag[AUTH_SSE_TAG_LEN];
    const uint8_t *i8 = in;
    int n = 0, fin = 0;
    if (len < AUTH_SSE_TAG_LEN || len > AUTH_SSE_PKG_MAX + AUTH_SSE_TAG_LEN)
        return -EBADMSG;
    size_t plain = len - AUTH_SSE_TAG_LEN;
    if (!pkg_ctx(p, false))
        return -EIO;
    memcpy(tag, i8 + plain, AUTH_SSE_TAG_LEN);
    pkg_iv_aad(p, index, is_last, iv, aad);
    if (EVP_DecryptInit_ex(p->dec, NULL, NULL, NULL, iv) != 1 ||
        EVP_DecryptUpdate(p->dec, NULL, &n, aad, sizeof(aad)) != 1 ||
        EVP_DecryptUpdate(p->dec, out, &n, i8, (int)plain) != 1 ||
        EVP_CIPHER_CTX_ctrl(p->dec, EVP_CTRL_GCM_SET_TAG, AUTH_SSE_TAG_LEN, tag) != 1)
        return -EIO;
    if (EVP_DecryptFinal_ex(p->dec, (uint8_t *)out + n, &fin) != 1) {
        /* Never hand out unauthenticated plaintext. */
        OPENSSL_cleanse(out, plain);
        return -EBADMSG;
    }
    return 0;
}
