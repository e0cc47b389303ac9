/*
 * test_secret.c: secrets sealed with AES-256-GCM: round trip, a fresh
 * nonce each time (two seals differ), the secret not in the blob in clear,
 * and refusal of a flipped bit, a wrong key, another access key and a
 * short buffer.
 */
#include "config.h"

#include "auth/auth.h"
#include "tests/lib/test.h"

int
main(void)
{
    uint8_t key[32], other[32];
    ASSERT_EQ(auth_random_bytes(key, sizeof(key)), 0);
    memcpy(other, key, sizeof(key));
    other[0] ^= 1;
    const char *secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    size_t len = strlen(secret);
    struct slice ak = SLICE_LIT("AKIDEXAMPLE");
    uint8_t blob[128], blob2[128];
    char out[64];

    long n = auth_secret_seal(key, ak, secret, len, blob, sizeof(blob));
    ASSERT_EQ(n, (long)(len + AUTH_SECRET_OVERHEAD));
    ASSERT(memmem(blob, (size_t)n, secret, len) == NULL);
    ASSERT(memmem(blob, (size_t)n, "EXAMPLEKEY", 10) == NULL);
    long n2 = auth_secret_seal(key, ak, secret, len, blob2, sizeof(blob2));
    ASSERT_EQ(n2, n);
    ASSERT(memcmp(blob, blob2, 12) != 0); /* fresh nonce */
    ASSERT(memcmp(blob, blob2, (size_t)n) != 0);

    ASSERT_EQ(auth_secret_open(key, ak, blob, (size_t)n, out, sizeof(out)), (long)len);
    ASSERT_STR_EQ(out, secret);
    ASSERT_EQ(auth_secret_open(key, ak, blob2, (size_t)n2, out, sizeof(out)), (long)len);
    ASSERT_STR_EQ(out, secret);

    ASSERT_EQ(auth_secret_open(other, ak, blob, (size_t)n, out, sizeof(out)), -1);
    ASSERT_EQ(auth_secret_open(key, SLICE_LIT("AKIDOTHER"), blob, (size_t)n, out, sizeof(out)), -1);
    for (long i = 0; i < n; i += 7) {
        blob[i] ^= 0x20;
        ASSERT_EQ(auth_secret_open(key, ak, blob, (size_t)n, out, sizeof(out)), -1);
        blob[i] ^= 0x20;
    }
    ASSERT_EQ(auth_secret_open(key, ak, blob, (size_t)n - 1, out, sizeof(out)), -1);
    ASSERT_EQ(auth_secret_open(key, ak, blob, 10, out, sizeof(out)), -1);
    ASSERT_EQ(auth_secret_open(key, ak, blob, (size_t)n, out, len), -1);
    ASSERT_EQ(auth_secret_seal(key, ak, secret, len, blob, len + 27), -1);
    /* The one credential generator: lengths, alphabets, no repeats. */
    char ak1[AUTH_ACCESS_KEY_LEN + 1], sk1[AUTH_SECRET_LEN + 1];
    char ak2[AUTH_ACCESS_KEY_LEN + 1], sk2[AUTH_SECRET_LEN + 1];
    unsigned seen[256] = {0};
    for (int round = 0; round < 200; round++) {
        ASSERT_EQ(auth_credentials_generate(ak1, sk1), 0);
        ASSERT_EQ(auth_credentials_generate(ak2, sk2), 0);
        ASSERT_EQ(strlen(ak1), AUTH_ACCESS_KEY_LEN);
        ASSERT_EQ(strlen(sk1), AUTH_SECRET_LEN);
        ASSERT(strcmp(ak1, ak2) != 0);
        ASSERT(strcmp(sk1, sk2) != 0);
        ASSERT_EQ(strspn(ak1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), AUTH_ACCESS_KEY_LEN);
        ASSERT_EQ(strspn(sk1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
                  AUTH_SECRET_LEN);
        for (int i = 0; i < AUTH_ACCESS_KEY_LEN; i++)
            seen[(unsigned char)ak1[i]]++;
    }
    /* Every access-key letter shows up (4000 draws over 36 letters). */
    for (const char *p = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"; *p; p++)
        ASSERT(seen[(unsigned char)*p] > 0);
    return 0;
}
