/*
 * test_sse.c: the encryption-at-rest primitives of auth/sse.c. Known-answer
 * vectors (computed independently with Python's `cryptography`: HMAC
 * segment key, AES-256-GCM with the nonce and additional data of the
 * format, RFC 3394 key wrap), round trips of full and short packages, and
 * refusal of every tampering: a flipped bit anywhere, another index, a
 * dropped last flag, another salt or data key, a wrong key-encryption key.
 */
#include "config.h"

#include "auth/auth.h"
#include "tests/lib/test.h"

#include <errno.h>
#include <stdlib.h>

static void
from_hex(const char *hex, uint8_t *out)
{
    for (size_t i = 0; hex[2 * i]; i++)
        out[i] = (uint8_t)(hex_digit_value(hex[2 * i]) << 4 | hex_digit_value(hex[2 * i + 1]));
}

static void
test_known_answers(void)
{
    uint8_t dk[32], salt[16], kek[32], want[64], got[64];
    for (int i = 0; i < 32; i++)
        dk[i] = (uint8_t)i;
    for (int i = 0; i < 16; i++)
        salt[i] = (uint8_t)(16 + i);
    memset(kek, 0x42, sizeof(kek));
    struct auth_sse_pkg *p = auth_sse_pkg_create(dk, salt);
    ASSERT(p != NULL);
    const char *pt0 = "shardstore package zero";
    ASSERT_EQ(auth_sse_pkg_seal(p, 0, false, pt0, strlen(pt0), got), 0);
    from_hex("86e4f059de261344e1e2499f874a85a238e8b0a48ae98bb2438f3217133a84e641e38c670fe24d",
             want);
    ASSERT(memcmp(got, want, strlen(pt0) + 16) == 0);
    /* Sealed in place (server/sse.c seals its units so): the same bytes. */
    uint8_t inplace[64];
    memcpy(inplace, pt0, strlen(pt0));
    ASSERT_EQ(auth_sse_pkg_seal(p, 0, false, inplace, strlen(pt0), inplace), 0);
    ASSERT(memcmp(inplace, want, strlen(pt0) + 16) == 0);
    ASSERT_EQ(auth_sse_pkg_seal(p, 7, true, "last", 4, got), 0);
    from_hex("9bc471b0d5296be38b0f0eb0902b747783482893", want);
    ASSERT(memcmp(got, want, 20) == 0);
    char back[8];
    ASSERT_EQ(auth_sse_pkg_open(p, 7, true, want, 20, back), 0);
    ASSERT(memcmp(back, "last", 4) == 0);
    auth_sse_pkg_destroy(p);

    uint8_t wrapped[40], dk2[32];
    ASSERT_EQ(auth_sse_wrap(kek, dk, wrapped), 0);
    from_hex("2ba58533e54f79b993b626ec7233ad4291924d6e52ad8e0b3056a31e850dddd13a133bf6926842eb",
             want);
    ASSERT(memcmp(wrapped, want, 40) == 0);
    ASSERT_EQ(auth_sse_unwrap(kek, wrapped, dk2), 0);
    ASSERT(memcmp(dk, dk2, 32) == 0);
    kek[31] ^= 1;
    ASSERT_EQ(auth_sse_unwrap(kek, wrapped, dk2), -EBADMSG);
    kek[31] ^= 1;
    wrapped[5] ^= 0x10;
    ASSERT_EQ(auth_sse_unwrap(kek, wrapped, dk2), -EBADMSG);
}

static void
test_round_trip_and_tamper(void)
{
    enum { LEN = 65536 };
    uint8_t dk[32], salt[16], other[16];
    ASSERT_EQ(auth_random_bytes(dk, sizeof(dk)), 0);
    ASSERT_EQ(auth_random_bytes(salt, sizeof(salt)), 0);
    memcpy(other, salt, sizeof(salt));
    other[15] ^= 1;
    uint8_t *pt = malloc(LEN), *ct = malloc(LEN + 16), *out = malloc(LEN);
    for (size_t i = 0; i < LEN; i++)
        pt[i] = (uint8_t)(i * 31 + 7);
    struct auth_sse_pkg *p = auth_sse_pkg_create(dk, salt);
    struct auth_sse_pkg *q = auth_sse_pkg_create(dk, other);
    ASSERT(p && q);
    ASSERT_EQ(auth_sse_pkg_seal(p, 3, false, pt, LEN, ct), 0);
    ASSERT(memmem(ct, LEN, pt + 100, 32) == NULL);
    ASSERT_EQ(auth_sse_pkg_open(p, 3, false, ct, LEN + 16, out), 0);
    ASSERT(memcmp(out, pt, LEN) == 0);
    /* Another index, the last flag, another segment: refused. */
    ASSERT_EQ(auth_sse_pkg_open(p, 4, false, ct, LEN + 16, out), -EBADMSG);
    ASSERT_EQ(auth_sse_pkg_open(p, 3, true, ct, LEN + 16, out), -EBADMSG);
    ASSERT_EQ(auth_sse_pkg_open(q, 3, false, ct, LEN + 16, out), -EBADMSG);
    /* A flipped bit anywhere, tag included, and the output is wiped. */
    for (size_t i = 0; i < LEN + 16; i += 4099) {
        ct[i] ^= 0x04;
        memset(out, 0xAA, LEN);
        ASSERT_EQ(auth_sse_pkg_open(p, 3, false, ct, LEN + 16, out), -EBADMSG);
        ASSERT(memmem(out, LEN, pt + 200, 16) == NULL);
        ct[i] ^= 0x04;
    }
    ASSERT_EQ(auth_sse_pkg_open(p, 3, false, ct, LEN + 15, out), -EBADMSG);
    ASSERT_EQ(auth_sse_pkg_open(p, 3, false, ct, 15, out), -EBADMSG);
    /* An empty package still authenticates its position. */
    ASSERT_EQ(auth_sse_pkg_seal(p, 9, true, pt, 0, ct), 0);
    ASSERT_EQ(auth_sse_pkg_open(p, 9, true, ct, 16, out), 0);
    ASSERT_EQ(auth_sse_pkg_open(p, 8, true, ct, 16, out), -EBADMSG);
    /* The same plaintext under two salts differs. */
    uint8_t *ct2 = malloc(LEN + 16);
    ASSERT_EQ(auth_sse_pkg_seal(q, 3, false, pt, LEN, ct2), 0);
    ASSERT(memcmp(ct, ct2, 64) != 0);
    auth_sse_pkg_destroy(p);
    auth_sse_pkg_destroy(q);
    auth_sse_pkg_destroy(NULL);
    free(pt);
    free(ct);
    free(ct2);
    free(out);
}

int
main(void)
{
    test_known_answers();
    test_round_trip_and_tamper();
    return 0;
}
