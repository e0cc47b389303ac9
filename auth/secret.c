/*
 * secret.c: access-key secrets at rest. Each secret is sealed with
 * AES-256-GCM under the server's 32-byte secret key (DATA/secret.key or
 * the file named by the secret_key_file directive), with a fresh random
 * 96-bit nonce per secret and the access key as additional authenticated
 * data:  blob = nonce(12) | ciphertext(len) | tag(16).
 * A tampered blob, or one copied to another access key, does not open.
 * Plaintext copies made here are wiped before returning. New access keys
 * and secrets (root's first credentials and users' keys alike) are made
 * here, from the OpenSSL CSPRNG, without modulo bias.
 */
#include "auth/auth_int.h"

#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#define NONCE_LEN 12
#define TAG_LEN 16

int
auth_random_bytes(void *out, size_t len)
{
    if (len > INT_MAX)
        return -1;
    return RAND_bytes(out, (int)len) == 1 ? 0 : -1;
}

/* Fills 'out' with 'n' characters drawn uniformly from 'alphabet' (at most
 * 256 letters) and a NUL: bytes that would bias the draw are rejected. */
static int
random_string(char *out, size_t n, const char *alphabet)
{
    size_t alen = strlen(alphabet);
    unsigned limit = 256 - 256 % (unsigned)alen; /* accept bytes below a multiple of alen */
    uint8_t rnd[64];
    size_t have = 0, used = 0;
    int rc = -1;
    for (size_t i = 0; i < n;) {
        if (used == have) {
            if (auth_random_bytes(rnd, sizeof(rnd)) != 0)
                goto fail;
            have = sizeof(rnd);
            used = 0;
        }
        uint8_t b = rnd[used++];
        if (b < limit)
            out[i++] = alphabet[b % alen];
    }
    out[n] = '\0';
    rc = 0;
fail:
    OPENSSL_cleanse(rnd, sizeof(rnd));
    return rc;
}

int
auth_credentials_generate(char access_key[AUTH_ACCESS_KEY_LEN + 1],
                          char secret[AUTH_SECRET_LEN + 1])
{
    if (random_string(access_key, AUTH_ACCESS_KEY_LEN, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") !=
            0 ||
        random_string(secret, AUTH_SECRET_LEN,
                      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != 0) {
        OPENSSL_cleanse(secret, AUTH_SECRET_LEN + 1);
        return -1;
    }
    return 0;
}

void
auth_wipe(void *p, size_t len)
{
    if (p)
        OPENSSL_cleanse(p, len);
}

long
auth_secret_seal(const uint8_t key[AUTH_SECRET_KEY_LEN], struct slice access_key,
                 const char *secret, size_t len, uint8_t *out, size_t cap)
{
    EVP_CIPHER_CTX *ctx = NULL;
    long rc = -1;
    int n = 0;

    if (len > INT_MAX / 2 || access_key.len > INT_MAX || cap < len + AUTH_SECRET_OVERHEAD)
        return -1;
    if (auth_random_bytes(out, NONCE_LEN) != 0)
        return -1;
    if (!(ctx = EVP_CIPHER_CTX_new()))
        goto fail;
    if (EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) != 1 ||
        EVP_EncryptInit_ex(ctx, NULL, NULL, key, out) != 1)
        goto fail;
    if (access_key.len &&
        EVP_EncryptUpdate(ctx, NULL, &n, (const uint8_t *)access_key.ptr, (int)access_key.len) != 1)
        goto fail;
    if (EVP_EncryptUpdate(ctx, out + NONCE_LEN, &n, (const uint8_t *)secret, (int)len) != 1 ||
        (size_t)n != len)
        goto fail;
    int fin = 0;
    if (EVP_EncryptFinal_ex(ctx, out + NONCE_LEN + n, &fin) != 1 || fin != 0)
        goto fail;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_LEN, out + NONCE_LEN + len) != 1)
        goto fail;
    rc = (long)(len + AUTH_SECRET_OVERHEAD);

fail:
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

long
auth_secret_open(const uint8_t key[AUTH_SECRET_KEY_LEN], struct slice access_key,
                 const uint8_t *blob, size_t len, char *out, size_t cap)
{
    EVP_CIPHER_CTX *ctx = NULL;
    long rc = -1;
    int n = 0;

    if (len < AUTH_SECRET_OVERHEAD || len > INT_MAX / 2 || access_key.len > INT_MAX)
        return -1;
    size_t plain_len = len - AUTH_SECRET_OVERHEAD;
    if (cap < plain_len + 1)
        return -1;
    uint8_t tag[TAG_LEN];
    memcpy(tag, blob + len - TAG_LEN, TAG_LEN);
    if (!(ctx = EVP_CIPHER_CTX_new()))
        goto fail;
    if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) != 1 ||
        EVP_DecryptInit_ex(ctx, NULL, NULL, key, blob) != 1)
        goto fail;
    if (access_key.len &&
        EVP_DecryptUpdate(ctx, NULL, &n, (const uint8_t *)access_key.ptr, (int)access_key.len) != 1)
        goto fail;
    if (EVP_DecryptUpdate(ctx, (uint8_t *)out, &n, blob + NONCE_LEN, (int)plain_len) != 1 ||
        (size_t)n != plain_len)
        goto fail;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) != 1)
        goto fail;
    int fin = 0;
    if (EVP_DecryptFinal_ex(ctx, (uint8_t *)out + n, &fin) != 1)
        goto fail;
    out[plain_len] = '\0';
    rc = (long)plain_len;

fail:
    if (rc < 0)
        OPENSSL_cleanse(out, cap);
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}
