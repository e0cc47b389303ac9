/*
 * test_token.c: the x-amz-rdma-token codec: format-then-parse round trips
 * with one and several lanes, a version 1 token still read, and every
 * malformed input refused (garbage, truncation, trailing bytes, oversize,
 * another version, fields out of range, too many lanes).
 */
#include "config.h"

#include "tests/lib/test.h"
#include "transport/transport.h"

#include <errno.h>

static struct transport_token
sample(void)
{
    struct transport_token t;
    memset(&t, 0, sizeof(t));
    snprintf(t.provider, sizeof(t.provider), "tcp;ofi_rxm");
    t.n_lanes = 1;
    t.addr_len[0] = 16;
    for (size_t i = 0; i < t.addr_len[0]; i++)
        t.addr[0][i] = (uint8_t)(i * 37 + 1);
    t.key = 0x1122334455667788ull;
    t.remote_addr = 0x7f0000001000ull;
    t.len = 1ull << 30;
    t.nonce = 42;
    return t;
}

static void
test_round_trip(void)
{
    struct transport_token t = sample(), u;
    char s[TRANSPORT_TOKEN_MAX + 1];
    int n = transport_token_format(&t, s, sizeof(s));
    ASSERT(n > 0);
    ASSERT_EQ(strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              (size_t)n);
    ASSERT_EQ(transport_token_parse(s, (size_t)n, &u), 0);
    ASSERT(strcmp(u.provider, t.provider) == 0);
    ASSERT_EQ(u.n_lanes, (size_t)1);
    ASSERT_EQ(u.addr_len[0], t.addr_len[0]);
    ASSERT(memcmp(u.addr[0], t.addr[0], t.addr_len[0]) == 0);
    ASSERT_UEQ(u.key, t.key);
    ASSERT_UEQ(u.remote_addr, t.remote_addr);
    ASSERT_UEQ(u.len, t.len);
    ASSERT_UEQ(u.nonce, t.nonce);
    /* Two lanes of shm-sized addresses. */
    t.n_lanes = 2;
    t.addr_len[0] = t.addr_len[1] = 37;
    memset(t.addr[1], 'b', 37);
    n = transport_token_format(&t, s, sizeof(s));
    ASSERT(n > 0);
    ASSERT_EQ(transport_token_parse(s, (size_t)n, &u), 0);
    ASSERT_EQ(u.n_lanes, (size_t)2);
    ASSERT(u.addr_len[1] == 37 && memcmp(u.addr[1], t.addr[1], 37) == 0);
    ASSERT(memcmp(u.addr[0], t.addr[0], 37) == 0);
    /* The largest one-lane token fits TRANSPORT_TOKEN_MAX. */
    t.n_lanes = 1;
    t.addr_len[0] = TRANSPORT_ADDR_MAX;
    memset(t.provider, 'a', TRANSPORT_PROVIDER_MAX - 1);
    t.provider[TRANSPORT_PROVIDER_MAX - 1] = '\0';
    n = transport_token_format(&t, s, sizeof(s));
    ASSERT(n > 0 && n <= TRANSPORT_TOKEN_MAX);
    ASSERT_EQ(transport_token_parse(s, (size_t)n, &u), 0);
}

/* A version 1 token (one address, no lane count) is still read. */
static void
test_version_1(void)
{
    /* 01 | 03 "shm" | 02 "ab" | key 5 | remote 0x1000 | len 16 | nonce 9, base64url. */
    uint8_t bin[] = {1, 3, 's', 'h', 'm', 2, 'a', 'b', 5, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0,
                     0, 0, 0,   0,   16,  0, 0,   0,   0, 0, 0, 0, 9, 0, 0, 0, 0, 0,    0, 0};
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char s[80];
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < sizeof(bin); i++) {
        acc = (acc << 8) | bin[i];
        for (bits += 8; bits >= 6; bits -= 6)
            s[o++] = b64[(acc >> (bits - 6)) & 63];
    }
    if (bits > 0)
        s[o++] = b64[(acc << (6 - bits)) & 63];
    struct transport_token u;
    ASSERT_EQ(transport_token_parse(s, o, &u), 0);
    ASSERT(strcmp(u.provider, "shm") == 0);
    ASSERT(u.n_lanes == 1 && u.addr_len[0] == 2 && memcmp(u.addr[0], "ab", 2) == 0);
    ASSERT(u.key == 5 && u.remote_addr == 0x1000 && u.len == 16 && u.nonce == 9);
}

static void
test_refused(void)
{
    struct transport_token t = sample(), u;
    char s[TRANSPORT_TOKEN_MAX + 1];
    int n = transport_token_format(&t, s, sizeof(s));
    ASSERT(n > 0);
    /* Every truncation is refused. */
    for (int k = 0; k < n; k++)
        ASSERT(transport_token_parse(s, (size_t)k, &u) < 0);
    /* Trailing bytes. */
    char longer[TRANSPORT_TOKEN_MAX + 8];
    snprintf(longer, sizeof(longer), "%sAAAA", s);
    ASSERT_EQ(transport_token_parse(longer, strlen(longer), &u), -EINVAL);
    /* Not base64url: standard alphabet, padding, spaces. */
    ASSERT_EQ(transport_token_parse("AQ+/", 4, &u), -EINVAL);
    ASSERT_EQ(transport_token_parse("AQ==", 4, &u), -EINVAL);
    ASSERT_EQ(transport_token_parse("A Q", 3, &u), -EINVAL);
    /* Oversized. */
    char big[TRANSPORT_TOKEN_MAX + 2];
    memset(big, 'A', sizeof(big));
    ASSERT_EQ(transport_token_parse(big, sizeof(big), &u), -E2BIG);
    /* Another version: first byte 3. */
    ASSERT(transport_token_parse("Aw", 2, &u) == -EPROTONOSUPPORT);
    /* Fields out of range are refused on both sides. */
    t.len = 0;
    ASSERT_EQ(transport_token_format(&t, s, sizeof(s)), -EINVAL);
    t = sample();
    t.remote_addr = UINT64_MAX - 10;
    ASSERT_EQ(transport_token_format(&t, s, sizeof(s)), -EINVAL);
    t = sample();
    snprintf(t.provider, sizeof(t.provider), "Shm");
    ASSERT_EQ(transport_token_format(&t, s, sizeof(s)), -EINVAL);
    t = sample();
    ASSERT_EQ(transport_token_format(&t, s, 10), -ENOSPC);
    /* No lane, too many lanes, a lane without an address, too long. */
    t.n_lanes = 0;
    ASSERT_EQ(transport_token_format(&t, s, sizeof(s)), -EINVAL);
    t.n_lanes = TRANSPORT_LANES_MAX + 1;
    ASSERT_EQ(transport_token_format(&t, s, sizeof(s)), -EINVAL);
    t.n_lanes = 2;
    ASSERT_EQ(transport_token_format(&t, s, sizeof(s)), -EINVAL);
    t.n_lanes = TRANSPORT_LANES_MAX;
    for (size_t l = 0; l < TRANSPORT_LANES_MAX; l++)
        t.addr_len[l] = TRANSPORT_ADDR_MAX;
    ASSERT_EQ(transport_token_format(&t, s, sizeof(s)), -E2BIG);
    /* A lane count of 0 or 5 in the bytes: 02 | 01 "a" | lanes. */
    ASSERT_EQ(transport_token_parse("AgFhAA", 6, &u), -EINVAL);
    ASSERT_EQ(transport_token_parse("AgFhBQ", 6, &u), -EINVAL);
}

int
main(void)
{
    test_round_trip();
    test_version_1();
    test_refused();
    return 0;
}
