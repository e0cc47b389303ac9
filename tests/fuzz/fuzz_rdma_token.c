/*
 * fuzz_rdma_token.c: libFuzzer target for transport/token.c (the
 * x-amz-rdma-token header). Properties beyond "no crash": a parsed token
 * has every field in range (provider and address non-empty and within
 * their caps, length > 0, remote_addr + len does not wrap); formatting it
 * again gives exactly the input (the encoding is canonical: one token, one
 * string), and parsing that gives the same token.
 */
#include "transport/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_token_fail(const char *what, const uint8_t *data, size_t size)
{
    fprintf(stderr, "fuzz_rdma_token: %s (input \"%.*s\")\n", what, (int)size, (const char *)data);
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct transport_token t, back;
    char text[TRANSPORT_TOKEN_MAX + 1];
    if (transport_token_parse((const char *)data, size, &t) != 0)
        return 0;
    size_t plen = strnlen(t.provider, sizeof(t.provider));
    if (plen == 0 || plen >= sizeof(t.provider))
        fuzz_token_fail("provider out of range", data, size);
    if (t.n_lanes == 0 || t.n_lanes > TRANSPORT_LANES_MAX)
        fuzz_token_fail("lane count out of range", data, size);
    for (size_t l = 0; l < t.n_lanes; l++)
        if (t.addr_len[l] == 0 || t.addr_len[l] > TRANSPORT_ADDR_MAX)
            fuzz_token_fail("address length out of range", data, size);
    if (t.len == 0 || t.remote_addr > UINT64_MAX - t.len)
        fuzz_token_fail("length out of range", data, size);
    int n = transport_token_format(&t, text, sizeof(text));
    if (n < 0)
        fuzz_token_fail("a parsed token does not format", data, size);
    /* A version 1 token ("AQ".."Af": first byte 1) comes back as version 2. */
    bool is_v1 = size >= 2 && data[0] == 'A' && data[1] >= 'Q' && data[1] <= 'f';
    if (!is_v1 && ((size_t)n != size || memcmp(text, data, size) != 0))
        fuzz_token_fail("format(parse(x)) != x", data, size);
    if (transport_token_parse(text, (size_t)n, &back) != 0 || back.len != t.len ||
        back.key != t.key || back.remote_addr != t.remote_addr || back.nonce != t.nonce ||
        back.n_lanes != t.n_lanes || memcmp(back.addr_len, t.addr_len, sizeof(t.addr_len)) != 0 ||
        memcmp(back.addr, t.addr, sizeof(t.addr)) != 0 || strcmp(back.provider, t.provider) != 0)
        fuzz_token_fail("parse(format(t)) != t", data, size);
    return 0;
}
