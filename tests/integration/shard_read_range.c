/*
 * shard_read_range.c: test driver of the two calls that read into a
 * caller's buffer, linked against the shared libshard. Usage:
 *   shard_read_range BUCKET KEY OFF LEN [PARALLEL CHUNK]
 *       shard_read_range: LEN bytes at OFF into one buffer;
 *   shard_read_range --reader CAP BUCKET KEY OFF LEN [PARALLEL CHUNK]
 *       shard_reader_open + shard_reader_read into a CAP-byte buffer until
 *       it returns 0 (LEN 0 means to the end of the object).
 * The endpoint and credentials come from the environment like the shard
 * tool. Writes the bytes to stdout; exit 0, or 1 with "ERR code" on stderr.
 */
#include "config.h"

#include "client/shard.h"

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

/* Streams through shard_reader_read; checks the count against shard_reader_length. */
static int
read_with_reader(struct shard_client *c, char **argv, uint64_t off, uint64_t len, size_t cap,
                 struct shard_error *err)
{
    struct shard_reader *r =
        shard_reader_open(c, argv[0], argv[1], off, len ? len : UINT64_MAX, NULL, err);
    if (r == NULL)
        return -1;
    char *buf = malloc(cap);
    uint64_t total = 0;
    long n;
    while ((n = shard_reader_read(r, buf, cap, err)) > 0) {
        if ((size_t)n > cap || write_all(buf, (size_t)n) != 0) {
            n = -1;
            snprintf(err->code, sizeof(err->code), "BadCount");
            break;
        }
        total += (uint64_t)n;
    }
    if (n == 0 && total != shard_reader_length(r)) {
        n = -1;
        snprintf(err->code, sizeof(err->code), "ShortRead");
    }
    free(buf);
    shard_reader_close(r);
    return n == 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
    size_t cap = 0;
    bool is_reader = argc > 3 && strcmp(argv[1], "--reader") == 0;
    if (is_reader) {
        cap = strtoul(argv[2], NULL, 10);
        argc -= 2;
        argv += 2; /* argv[1] is BUCKET again */
    }
    if ((argc != 5 && argc != 7) || (is_reader && cap == 0))
        return 2;
    struct shard_options opts = {0};
    if (argc == 7) {
        opts.parallel = (unsigned)strtoul(argv[5], NULL, 10);
        opts.chunk_size = strtoull(argv[6], NULL, 10);
    }
    struct shard_error err;
    struct shard_client *c = shard_client_create(NULL, &opts, &err);
    if (c == NULL) {
        fprintf(stderr, "ERR %s %s\n", err.code, err.message);
        return 1;
    }
    uint64_t off = strtoull(argv[3], NULL, 10), len = strtoull(argv[4], NULL, 10);
    int rc;
    if (cap > 0) {
        rc = read_with_reader(c, argv + 1, off, len, cap, &err);
    } else {
        char *buf = malloc(len ? len : 1);
        rc = shard_read_range(c, argv[1], argv[2], off, len, buf, &err);
        if (rc == 0 && write_all(buf, len) != 0)
            rc = -1;
        free(buf);
    }
    if (rc != 0)
        fprintf(stderr, "ERR %s %s\n", err.code, err.message);
    shard_client_destroy(c);
    return rc == 0 ? 0 : 1;
}
