/*
 * test_fabric.c: two fabrics of one provider in one process, a "client"
 * (registered buffer, progress thread) and a "server" (transfers against
 * the client's token): writes and reads land byte for byte, a transfer
 * outside the token's bytes is refused before anything is posted, and a
 * token of another provider is refused. Runs over shm (one and two client
 * lanes: the two writes go to different lanes) and over tcp;ofi_rxm on
 * 127.0.0.1; skips (77) without libfabric.
 */
#include "config.h"

#include "tests/lib/test.h"
#include "transport/transport.h"

#include <errno.h>
#include <stdlib.h>

#define BUF_LEN (3u << 20)

static int
run(const char *provider, const char *node, unsigned lanes)
{
    struct transport_config ccfg = {provider, node, true, 0, lanes},
                            scfg = {provider, node, false, 0, 1};
    struct transport_fabric *cf = NULL, *sf = NULL;
    int rc = transport_fabric_open(&ccfg, &cf);
    if (rc == -ENODEV || rc == -ENOTSUP) {
        fprintf(stderr, "provider %s not usable here (%d)\n", provider, rc);
        return 0;
    }
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(transport_fabric_open(&scfg, &sf), 0);
    uint8_t *cbuf = calloc(1, BUF_LEN), *sbuf = malloc(BUF_LEN);
    for (size_t i = 0; i < BUF_LEN; i++)
        sbuf[i] = (uint8_t)(i * 7 + (i >> 12));
    struct transport_region *cr, *sr = NULL;
    ASSERT_EQ(transport_region_create(cf, cbuf, BUF_LEN,
                                      TRANSPORT_REMOTE_WRITE | TRANSPORT_REMOTE_READ, &cr),
              0);
    if (transport_fabric_needs_local_region(sf))
        ASSERT_EQ(transport_region_create(sf, sbuf, BUF_LEN, TRANSPORT_LOCAL, &sr), 0);
    struct transport_token t;
    /* The token covers the last 2 MiB + 5 bytes of the client buffer. */
    uint64_t tlen = (2u << 20) + 5;
    ASSERT_EQ(transport_region_token(cr, cbuf + BUF_LEN - tlen, tlen, 7, &t), 0);
    ASSERT_EQ(transport_region_token(cr, cbuf + 1, BUF_LEN, 7, &t) == -ERANGE, 1);
    ASSERT_EQ(transport_region_token(cr, cbuf + BUF_LEN - tlen, tlen, 7, &t), 0);
    char enc[TRANSPORT_TOKEN_MAX + 1];
    int n = transport_token_format(&t, enc, sizeof(enc));
    ASSERT(n > 0);
    struct transport_token u;
    ASSERT_EQ(transport_token_parse(enc, (size_t)n, &u), 0);
    /* shm shares keys between endpoints and counts peers' accesses: every
     * lane asked for is in the token; tcp;ofi_rxm has one. */
    ASSERT_EQ(u.n_lanes, strcmp(provider, "shm") == 0 ? (size_t)lanes : (size_t)1);

    transport_fabric_hold(cf);
    struct transport_xfer *x;
    ASSERT_EQ(transport_xfer_begin(sf, &u, &x), 0);
    struct transport_done d1, d2;
    ASSERT_EQ(transport_xfer_write(x, 0, sbuf, 1u << 20, sr, &d1), 0);
    ASSERT_EQ(transport_xfer_write(x, 1u << 20, sbuf + (1u << 20), (1u << 20) + 5, sr, &d2), 0);
    ASSERT_EQ(transport_xfer_wait(x, &d1, 10000), 0);
    ASSERT_EQ(transport_xfer_wait(x, &d2, 10000), 0);
    /* Outside the token: refused, nothing posted. */
    ASSERT_EQ(transport_xfer_write(x, 1, sbuf, tlen, sr, &d1), -ERANGE);
    ASSERT_EQ(transport_xfer_write(x, tlen, sbuf, 1, sr, &d1), -ERANGE);
    ASSERT_EQ(transport_xfer_end(x, 10000), 0);
    ASSERT(memcmp(cbuf + BUF_LEN - tlen, sbuf, tlen) == 0);
    for (size_t i = 0; i < BUF_LEN - tlen; i++)
        ASSERT_EQ(cbuf[i], 0);

    /* Read back into the server buffer. */
    memset(sbuf, 0, BUF_LEN);
    ASSERT_EQ(transport_xfer_begin(sf, &u, &x), 0);
    ASSERT_EQ(transport_xfer_read(x, 0, sbuf, (size_t)tlen, sr, &d1), 0);
    ASSERT_EQ(transport_xfer_wait(x, &d1, 10000), 0);
    ASSERT_EQ(transport_xfer_end(x, 10000), 0);
    ASSERT(memcmp(cbuf + BUF_LEN - tlen, sbuf, tlen) == 0);

    /* Another provider's token. */
    struct transport_token other = u;
    snprintf(other.provider, sizeof(other.provider), "nosuch");
    ASSERT_EQ(transport_xfer_begin(sf, &other, &x), -EPROTO);

    transport_fabric_release(cf);

    transport_region_destroy(cr);
    transport_region_destroy(sr);
    transport_fabric_close(sf);
    transport_fabric_close(cf);
    free(cbuf);
    free(sbuf);
    return 1;
}

int
main(void)
{
    if (!transport_is_available())
        TEST_SKIP("built without libfabric (RDMA transport)");
    setenv("FI_TCP_IFACE", "lo", 1);
    int ran = run("shm", NULL, 1);
    ran += run("shm", NULL, 2);
    ran += run("tcp", "127.0.0.1", 2);
    if (!ran)
        TEST_SKIP("no usable libfabric provider (shm, tcp)");
    return 0;
}
