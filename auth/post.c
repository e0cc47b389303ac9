/*
 * post.c: the signature of a POST Object form (browser uploads). The form
 * carries a base64 policy document and its signature; nothing of the HTTP
 * request itself is signed:
 *   SigV4: x-amz-signature = hex(HMAC-SHA256(signing key, policy)), the
 *          signing key derived from x-amz-credential's date and region;
 *   SigV2: signature = base64(HMAC-SHA1(secret, policy)).
 * Comparisons are constant time; secrets are wiped after use.
 */
#include "auth/auth_int.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>

#define SECRET_CAP 256

enum auth_result
auth_post_verify_v4(const struct auth_post *post, auth_secret_fn lookup, void *ctx,
                    struct auth_verdict *out)
{
    char secret[SECRET_CAP];
    char want[65], got[65];
    enum auth_result res = AUTH_MALFORMED;
    struct slice cred = post->credential, parts[5], item;
    size_t n = 0;

    memset(out, 0, sizeof(*out));
    secret[0] = '\0';
    if (!slice_eq(post->algorithm, SLICE_LIT("AWS4-HMAC-SHA256"))) {
        res = AUTH_UNSUPPORTED;
        goto fail;
    }
    while (n < 5 && slice_split_next(&cred, '/', &item))
        parts[n++] = item;
    if (n != 5 || cred.len || parts[0].len == 0 || parts[0].len >= sizeof(out->access_key) ||
        parts[1].len != 8 || !slice_eq(parts[3], SLICE_LIT("s3")) ||
        !slice_eq(parts[4], SLICE_LIT("aws4_request")) || !auth__parse_sig(post->signature, got))
        goto fail;
    if (!slice_eq(parts[2], slice_from_cstr(post->region))) {
        res = AUTH_BAD_REGION;
        goto fail;
    }
    /* x-amz-date must be of the credential's day. */
    if (post->amz_date.len != 16 || memcmp(post->amz_date.ptr, parts[1].ptr, 8) != 0)
        goto fail;
    if (lookup(ctx, parts[0], secret, sizeof(secret)) != 0) {
        res = AUTH_UNKNOWN_KEY;
        goto fail;
    }
    size_t sl = strnlen(secret, sizeof(secret) - 1);
    char k[4 + SECRET_CAP];
    uint8_t a[32], b[32];
    memcpy(k, "AWS4", 4);
    memcpy(k + 4, secret, sl);
    auth_hmac_sha256(k, 4 + sl, parts[1].ptr, 8, a);
    auth_hmac_sha256(a, 32, parts[2].ptr, parts[2].len, b);
    auth_hmac_sha256(b, 32, "s3", 2, a);
    auth_hmac_sha256(a, 32, "aws4_request", 12, b);
    auth__hmac_hex(b, post->policy.ptr, post->policy.len, want);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(a, sizeof(a));
    OPENSSL_cleanse(b, sizeof(b));
    if (!auth_equal_ct(want, got, 64)) {
        res = AUTH_BAD_SIGNATURE;
        goto fail;
    }
    memcpy(out->access_key, parts[0].ptr, parts[0].len);
    out->access_key[parts[0].len] = '\0';
    out->payload = AUTH_PAYLOAD_UNSIGNED;
    res = AUTH_OK;

fail:
    OPENSSL_cleanse(secret, sizeof(secret));
    return res;
}

enum auth_result
auth_post_verify_v2(const struct auth_post *post, auth_secret_fn lookup, void *ctx,
                    struct auth_verdict *out)
{
    char secret[SECRET_CAP];
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    char want[64];
    enum auth_result res = AUTH_MALFORMED;

    memset(out, 0, sizeof(*out));
    secret[0] = '\0';
    if (post->access_key.len == 0 || post->access_key.len >= sizeof(out->access_key) ||
        post->signature.len == 0 || post->signature.len > 40)
        goto fail;
    if (lookup(ctx, post->access_key, secret, sizeof(secret)) != 0) {
        res = AUTH_UNKNOWN_KEY;
        goto fail;
    }
    HMAC(EVP_sha1(), secret, (int)strnlen(secret, sizeof(secret) - 1),
         (const unsigned char *)(post->policy.ptr ? post->policy.ptr : ""), post->policy.len, mac,
         &mac_len);
    size_t wl = base64_encode(mac, mac_len, want);
    if (wl != post->signature.len || !auth_equal_ct(want, post->signature.ptr, wl)) {
        res = AUTH_BAD_SIGNATURE;
        goto fail;
    }
    memcpy(out->access_key, post->access_key.ptr, post->access_key.len);
    out->access_key[post->access_key.len] = '\0';
    out->payload = AUTH_PAYLOAD_UNSIGNED;
    res = AUTH_OK;

fail:
    OPENSSL_cleanse(secret, sizeof(secret));
    OPENSSL_cleanse(mac, sizeof(mac));
    return res;
}
