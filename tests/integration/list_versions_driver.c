/*
 * list_versions_driver.c: test driver of libshard's ListObjectVersions
 * paging, for test_shard_versions.py: lists a bucket in pages of MAX_KEYS
 * either pipelined (the next page fetched while one is scanned, as
 * shard_list_versions does) or sequentially (each page asked for after
 * the previous one was scanned), so the test can compare the two across
 * many page boundaries. Usage:
 *   list_versions_driver pipe|seq BUCKET MAX_KEYS [PREFIX [DELIMITER [STOP_AFTER]]]
 * Endpoint and keys come from the environment, as for `shard`. Prints one
 * line per entry: P PREFIX, or V|D KEY VERSION-ID latest|- SIZE ETAG DATE,
 * key and prefix hex-encoded (any byte survives); STOP_AFTER > 0 makes the
 * callback stop the listing after that many entries. Then "rc=N" (what
 * the listing returned) and, on an error, "err=CODE". Exit 0 when it ran.
 */
#include "config.h"

#include "client/shard_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct driver_ctx {
    unsigned long stop_after;
    unsigned long seen;
};

static void
print_hex(const char *s)
{
    if (*s == '\0')
        fputc('-', stdout);
    for (; *s != '\0'; s++)
        printf("%02x", (unsigned char)*s);
}

static int
on_entry(void *ctx, const struct shard_version_entry *e)
{
    struct driver_ctx *d = ctx;
    if (e->is_prefix) {
        fputs("P ", stdout);
        print_hex(e->key);
    } else {
        fputs(e->is_delete_marker ? "D " : "V ", stdout);
        print_hex(e->key);
        printf(" %s %s %llu %s %s", e->version_id, e->is_latest ? "latest" : "-",
               (unsigned long long)e->info.size, e->info.etag[0] ? e->info.etag : "-",
               e->info.last_modified[0] ? e->info.last_modified : "-");
    }
    fputc('\n', stdout);
    d->seen++;
    return d->stop_after > 0 && d->seen >= d->stop_after ? 42 : 0;
}

int
main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "pipe") != 0 && strcmp(argv[1], "seq") != 0)) {
        fprintf(stderr, "usage: list_versions_driver pipe|seq BUCKET MAX_KEYS [PREFIX "
                        "[DELIMITER [STOP_AFTER]]]\n");
        return 1;
    }
    struct driver_ctx d = {.stop_after = argc > 6 ? strtoul(argv[6], NULL, 10) : 0};
    const char *prefix = argc > 4 ? argv[4] : NULL;
    const char *delimiter = argc > 5 && argv[5][0] != '\0' ? argv[5] : NULL;
    struct shard_error err;
    struct shard_client *c = shard_client_create(NULL, NULL, &err);
    if (c == NULL) {
        fprintf(stderr, "ERR %s %s\n", err.code, err.message);
        return 1;
    }
    int rc =
        client__list_versions(c, argv[2], prefix, delimiter, (unsigned)strtoul(argv[3], NULL, 10),
                              strcmp(argv[1], "pipe") == 0, on_entry, &d, &err);
    printf("rc=%d\n", rc);
    if (rc < 0)
        printf("err=%s %s\n", err.code, err.message);
    shard_client_destroy(c);
    return 0;
}
