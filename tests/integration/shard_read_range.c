/*
 * shard_read_range.c: test driver for shard_read_range (the read-into-buffer
 * call). Usage: shard_read_range BUCKET KEY OFF LEN [PARALLEL CHUNK]; the
 * endpoint and credentials come from the environment like the shard tool.
 * Writes the LEN bytes to stdout; exit 0, or 1 with "ERR code" on stderr.
 */
#include "config.h"

#include "client/shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    if (argc != 5 && argc != 7)
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
    char *buf = malloc(len ? len : 1);
    int rc = shard_read_range(c, argv[1], argv[2], off, len, buf, &err);
    if (rc != 0) {
        fprintf(stderr, "ERR %s %s\n", err.code, err.message);
    } else {
        for (size_t done = 0; done < len;) {
            ssize_t n = write(STDOUT_FILENO, buf + done, len - done);
            if (n <= 0)
                return 1;
            done += (size_t)n;
        }
    }
    free(buf);
    shard_client_destroy(c);
    return rc == 0 ? 0 : 1;
}
