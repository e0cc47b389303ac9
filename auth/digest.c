/*
 * digest.c: SHA-256 and HMAC-SHA256 for SigV4, on the request hot path.
 *
 * OpenSSL 3's one-shot calls (EVP_Digest, HMAC with EVP_sha256()) fetch the
 * algorithm from the provider store on every call, under a global rwlock;
 * profiled, that was about a fifth of the server's CPU on small range GETs.
 * Here SHA-256 is fetched once, each thread keeps one digest context, and
 * HMAC is computed from its definition (RFC 2104) on that context.
 * Thread-local state is released by a pthread key destructor when the
 * thread exits (connections have threads of their own).
 */
#include "auth/auth_int.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static EVP_MD *g_sha256;
static pthread_key_t g_key;

static void
ctx_free(void *p)
{
    EVP_MD_CTX_free(p);
}

static void
digest_init_once(void)
{
    g_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (!g_sha256) {
        log_error("auth: cannot fetch SHA256 from OpenSSL");
        abort();
    }
    if (pthread_key_create(&g_key, ctx_free) != 0)
        abort();
}

/* The calling thread's digest context, initialized for SHA-256. */
static EVP_MD_CTX *
thread_ctx(void)
{
    pthread_once(&g_once, digest_init_once);
    EVP_MD_CTX *ctx = pthread_getspecific(g_key);
    if (!ctx) {
        ctx = EVP_MD_CTX_new();
        if (!ctx || pthread_setspecific(g_key, ctx) != 0)
            abort();
    }
    if (EVP_DigestInit_ex2(ctx, g_sha256, NULL) != 1)
        abort();
    return ctx;
}

void
auth_sha256(const void *data, size_t len, uint8_t out[32])
{
    EVP_MD_CTX *ctx = thread_ctx();
    unsigned int n = 32;
    EVP_DigestUpdate(ctx, data, len);
    EVP_DigestFinal_ex(ctx, out, &n);
}

void
auth_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, uint8_t out[32])
{
    uint8_t k[64], pad[64], inner[32];
    memset(k, 0, sizeof(k));
    if (key_len > sizeof(k))
        auth_sha256(key, key_len, k);
    else if (key_len)
        memcpy(k, key, key_len);
    for (size_t i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    EVP_MD_CTX *ctx = thread_ctx();
    unsigned int n = 32;
    EVP_DigestUpdate(ctx, pad, 64);
    EVP_DigestUpdate(ctx, data, len);
    EVP_DigestFinal_ex(ctx, inner, &n);
    for (size_t i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    ctx = thread_ctx();
    EVP_DigestUpdate(ctx, pad, 64);
    EVP_DigestUpdate(ctx, inner, 32);
    EVP_DigestFinal_ex(ctx, out, &n);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(pad, sizeof(pad));
}
