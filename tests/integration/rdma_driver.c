/*
 * rdma_driver.c: test driver of the RDMA fast path at the request level,
 * for test_rdma.py: requests the shard tool never makes (GET by
 * partNumber, a token whose length disagrees, a token given as text).
 * Usage:
 *   rdma_driver get BUCKET KEY [--range A-B] [--part N] [--len N]
 *                   [--token TEXT] [--repeat 1]
 * --len registers a buffer of N bytes (default: the range's length, or
 * the object's size from HEAD); --token sends TEXT instead of a token of
 * that buffer; --repeat 1 sends the same request (same token) once more
 * after the first and prints "replay=S" (its status). Provider and
 * address come from AWS_RDMA_PROVIDER / AWS_RDMA_ADDRESS. Prints
 * "status=S reply=R" on stderr and, when the reply is 200 or 206, the
 * buffer on stdout. Exit 0 when it ran, 1 on a local failure.
 */
#include "config.h"

#include "client/shard_int.h"
#include "transport/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
write_all(const char *p, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = write(STDOUT_FILENO, p + done, len - done);
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc < 4 || strcmp(argv[1], "get") != 0) {
        fprintf(stderr, "usage: rdma_driver get BUCKET KEY [options]\n");
        return 1;
    }
    const char *bucket = argv[2], *key = argv[3], *range = NULL, *part = NULL, *token = NULL;
    bool is_repeat = false;
    uint64_t len = 0;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--range") == 0)
            range = argv[i + 1];
        else if (strcmp(argv[i], "--part") == 0)
            part = argv[i + 1];
        else if (strcmp(argv[i], "--len") == 0)
            len = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--token") == 0)
            token = argv[i + 1];
        else if (strcmp(argv[i], "--repeat") == 0)
            is_repeat = strcmp(argv[i + 1], "1") == 0;
    }
    struct shard_options opts = {.transport = SHARD_TRANSPORT_RDMA};
    struct shard_error err;
    struct shard_client *c = shard_client_create(NULL, &opts, &err);
    if (!c) {
        fprintf(stderr, "ERR %s %s\n", err.code, err.message);
        return 1;
    }
    if (len == 0 && range) {
        unsigned long long a, b;
        if (sscanf(range, "%llu-%llu", &a, &b) == 2)
            len = b - a + 1;
    }
    if (len == 0) {
        struct shard_object_info info;
        if (shard_head(c, bucket, key, &info, &err) != 0) {
            fprintf(stderr, "ERR %s %s\n", err.code, err.message);
            return 1;
        }
        len = info.size;
    }
    char *buf = calloc(1, len ? len : 1);
    struct transport_region *region = NULL;
    char hdr[CLIENT_RDMA_HDR_CAP + TRANSPORT_TOKEN_MAX];
    if (client__rdma_prepare(c, buf, len, false, &region, hdr, &err) != 0) {
        fprintf(stderr, "ERR %s %s\n", err.code, err.message);
        return 1;
    }
    if (token)
        snprintf(hdr, sizeof(hdr), "x-amz-rdma-token: %s", token);
    char range_hdr[100], query[64];
    struct client_req req = {.method = "GET", .bucket = bucket, .key = key};
    if (range) {
        snprintf(range_hdr, sizeof(range_hdr), "Range: bytes=%s", range);
        req.headers[req.n_headers++] = range_hdr;
    }
    if (part) {
        snprintf(query, sizeof(query), "partNumber=%s", part);
        req.query = query;
    }
    req.headers[req.n_headers++] = hdr;
    struct client_resp resp;
    client__resp_init(&resp);
    client__rdma_hold(c);
    client__perform(c, &req, NULL, 0, &resp, &err);
    long replay = 0;
    if (is_repeat) {
        struct client_resp again;
        client__resp_init(&again);
        client__perform(c, &req, NULL, 0, &again, &err);
        replay = again.status;
        client__resp_cleanup(&again);
    }
    client__rdma_release(c);
    transport_region_destroy(region);
    fprintf(stderr, "status=%ld reply=%d replay=%ld\n", resp.status, resp.rdma_reply, replay);
    if (resp.body.len)
        fprintf(stderr, "%.*s\n", (int)MIN(resp.body.len, 2000), resp.body.ptr);
    int rc = 0;
    if ((resp.rdma_reply == 200 || resp.rdma_reply == 206) && write_all(buf, len) != 0)
        rc = 1;
    client__resp_cleanup(&resp);
    free(buf);
    shard_client_destroy(c);
    return rc;
}
