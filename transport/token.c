/*
 * token.c: the x-amz-rdma-token codec (transport.h). The token is the
 * base64url (RFC 4648 section 5, no padding) of this little-endian record:
 *
 *   u8  version            TRANSPORT_TOKEN_VERSION (2; 1 is still read)
 *   u8  provider_len       1..31, then that many bytes of [a-z0-9_;]
 *   u8  lanes              1..TRANSPORT_LANES_MAX (version 2 only; 1 in version 1)
 *   lanes times:
 *     u8  addr_len         1..TRANSPORT_ADDR_MAX, then the address bytes
 *   u64 key                memory key of the registered buffer
 *   u64 remote_addr        target address of the buffer's byte 0
 *   u64 len                bytes, 1..2^62, and remote_addr + len must not wrap
 *   u64 nonce              per request
 *
 * The parser takes untrusted input: it never reads past 'len', refuses
 * trailing bytes and every field out of range, and is fuzzed
 * (tests/fuzz/fuzz_rdma_token.c).
 */
#include "config.h"

#include "transport/transport.h"

#include <errno.h>
#include <string.h>

#define TOKEN_FIXED_LEN (3 + 4 * 8) /* version, provider_len, lanes, 4 x u64 */
/* Bytes TRANSPORT_TOKEN_MAX base64url characters hold. */
#define TOKEN_BIN_MAX (TRANSPORT_TOKEN_MAX * 6 / 8)
#define TOKEN_LEN_MAX (1ull << 62)

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int
b64url_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

static bool
provider_char_is_valid(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == ';';
}

static void
put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

int
transport_token_format(const struct transport_token *t, char *out, size_t cap)
{
    uint8_t bin[TOKEN_BIN_MAX];
    size_t plen = strnlen(t->provider, TRANSPORT_PROVIDER_MAX);
    if (plen == 0 || plen >= TRANSPORT_PROVIDER_MAX || t->n_lanes == 0 ||
        t->n_lanes > TRANSPORT_LANES_MAX || t->len == 0 || t->len > TOKEN_LEN_MAX ||
        t->remote_addr > UINT64_MAX - t->len)
        return -EINVAL;
    size_t need_bin = TOKEN_FIXED_LEN + plen;
    for (size_t l = 0; l < t->n_lanes; l++) {
        if (t->addr_len[l] == 0 || t->addr_len[l] > TRANSPORT_ADDR_MAX)
            return -EINVAL;
        need_bin += 1 + t->addr_len[l];
    }
    if (need_bin > TOKEN_BIN_MAX)
        return -E2BIG;
    for (size_t i = 0; i < plen; i++)
        if (!provider_char_is_valid((unsigned char)t->provider[i]))
            return -EINVAL;
    size_t n = 0;
    bin[n++] = TRANSPORT_TOKEN_VERSION;
    bin[n++] = (uint8_t)plen;
    memcpy(bin + n, t->provider, plen);
    n += plen;
    bin[n++] = (uint8_t)t->n_lanes;
    for (size_t l = 0; l < t->n_lanes; l++) {
        bin[n++] = (uint8_t)t->addr_len[l];
        memcpy(bin + n, t->addr[l], t->addr_len[l]);
        n += t->addr_len[l];
    }
    put_u64(bin + n, t->key);
    put_u64(bin + n + 8, t->remote_addr);
    put_u64(bin + n + 16, t->len);
    put_u64(bin + n + 24, t->nonce);
    n += 32;
    size_t need = (n * 8 + 5) / 6;
    if (need + 1 > cap)
        return -ENOSPC;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = (acc << 8) | bin[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[o++] = b64url[(acc >> bits) & 63];
        }
    }
    if (bits > 0)
        out[o++] = b64url[(acc << (6 - bits)) & 63];
    out[o] = '\0';
    return (int)o;
}

int
transport_token_parse(const char *s, size_t len, struct transport_token *out)
{
    uint8_t bin[TOKEN_BIN_MAX];
    if (len > TRANSPORT_TOKEN_MAX)
        return -E2BIG;
    /* A base64 length of 1 mod 4 cannot be produced by any byte count. */
    if (len == 0 || len % 4 == 1)
        return -EINVAL;
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64url_value((unsigned char)s[i]);
        if (v < 0)
            return -EINVAL;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n >= sizeof(bin))
                return -EINVAL;
            bin[n++] = (uint8_t)(acc >> bits);
        }
    }
    /* The unused low bits of the last character must be zero (canonical). */
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        return -EINVAL;
    if (n < 1)
        return -EINVAL;
    if (bin[0] != 1 && bin[0] != TRANSPORT_TOKEN_VERSION)
        return -EPROTONOSUPPORT;
    size_t p = 1;
    if (p >= n)
        return -EINVAL;
    size_t plen = bin[p++];
    if (plen == 0 || plen >= TRANSPORT_PROVIDER_MAX || plen > n - p)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < plen; i++) {
        if (!provider_char_is_valid(bin[p + i]))
            return -EINVAL;
        out->provider[i] = (char)bin[p + i];
    }
    p += plen;
    size_t lanes = 1;
    if (bin[0] >= 2) {
        if (p >= n)
            return -EINVAL;
        lanes = bin[p++];
        if (lanes == 0 || lanes > TRANSPORT_LANES_MAX)
            return -EINVAL;
    }
    for (size_t l = 0; l < lanes; l++) {
        if (p >= n)
            return -EINVAL;
        size_t alen = bin[p++];
        if (alen == 0 || alen > TRANSPORT_ADDR_MAX || alen > n - p)
            return -EINVAL;
        memcpy(out->addr[l], bin + p, alen);
        out->addr_len[l] = alen;
        p += alen;
    }
    out->n_lanes = lanes;
    if (n - p != 32)
        return -EINVAL;
    out->key = get_u64(bin + p);
    out->remote_addr = get_u64(bin + p + 8);
    out->len = get_u64(bin + p + 16);
    out->nonce = get_u64(bin + p + 24);
    if (out->len == 0 || out->len > TOKEN_LEN_MAX || out->remote_addr > UINT64_MAX - out->len)
        return -EINVAL;
    return 0;
}
