/*
 * test_token.c: the x-amz-rdma-token codec: format-then-parse round trips,
 * and every malformed input refused (garbage, truncation, trailing bytes,
 * oversize, another version, fields out of range).
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
    t.addr_len = 16;
    for (size_t i = 0; i < t.addr_len; i++)
        t.addr[i] = (uint8_t)(i * 37 + 1);
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
    ASSERT_EQ(u.addr_len, t.addr_len);
    ASSERT(memcmp(u.addr, t.addr, t.addr_len) == 0);
    ASSERT_UEQ(u.key, t.key);
    ASSERT_UEQ(u.remote_addr, t.remote_addr);
    ASSERT_UEQ(u.len, t.len);
    ASSERT_UEQ(u.nonce, t.nonce);
    /* The largest token fits TRANSPORT_TOKEN_MAX. */
    t.addr_len = TRANSPORT_ADDR_MAX;
    memset(t.provider, 'a', TRANSPORT_PROVIDER_MAX - 1);
    t.provider[TRANSPORT_PROVIDER_MAX - 1] = '\0';
    n = transport_token_format(&t, s, sizeof(s));
    ASSERT(n > 0 && n <= TRANSPORT_TOKEN_MAX);
    ASSERT_EQ(transport_token_parse(s, (size_t)n, &u), 0);
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
    /* Another version: first byte 2. */
    ASSERT(transport_token_parse("Ag", 2, &u) == -EPROTONOSUPPORT);
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
}

int
main(void)
{
    test_round_trip();
    test_refused();
    return 0;
}
