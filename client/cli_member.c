/*
 * cli_member.c: the `shard` commands for shardstore's tar extensions:
 * `ls --members` (a tar object's member index) and `batch` (batch GET:
 * entries read one per line, KEY[TAB MEMBER[TAB RANGE]], the tar answer
 * written to stdout as it streams in). `cat --member` is cat's own
 * (cli.c). A RANGE is "A-B", "A-", "-N" or the same after "bytes=".
 */
#include "config.h"

#include "client/cli_util.h"
#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
print_member(void *ctx, const struct shard_member *m)
{
    (void)ctx;
    printf("%12llu %10llu %s\n", (unsigned long long)m->offset, (unsigned long long)m->size,
           m->name);
    return ferror(stdout) ? 1 : 0;
}

int
cli_ls_members(struct shard_client *c, const char *bucket, const char *key, const char *what)
{
    struct shard_error err;
    if (key[0] == '\0') {
        cli_msg("ls --members wants s3://bucket/key, not '%s'", what);
        return CLI_USAGE;
    }
    int rc = shard_member_list(c, bucket, key, NULL, print_member, NULL, &err);
    if (rc < 0)
        return cli_fail(what, &err);
    if (rc > 0) {
        cli_msg("stdout: %s", strerror(errno));
        return CLI_IO;
    }
    return CLI_OK;
}

static int
write_stdout(void *ctx, const void *data, size_t len)
{
    (void)ctx;
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The entries read from 'f': arrays of strings owned by the struct. */
struct entry_list {
    struct shard_batch_entry *e;
    char **lines;
    size_t n, cap;
};

/* Splits one line (without its newline) into an entry. Returns 0 or -1. */
static int
entry_parse(char *line, struct shard_batch_entry *e)
{
    char *tab = strchr(line, '\t');
    memset(e, 0, sizeof(*e));
    e->key = line;
    if (tab == NULL)
        return line[0] ? 0 : -1;
    *tab = '\0';
    char *member = tab + 1;
    tab = strchr(member, '\t');
    if (tab != NULL) {
        *tab = '\0';
        char *range = tab + 1;
        if (strchr(range, '\t') != NULL || range[0] == '\0')
            return -1;
        if (strncmp(range, "bytes=", 6) != 0) {
            /* "A-B" as --range takes it: the header wants the unit. */
            size_t n = strlen(range);
            char *withunit = xmalloc(n + 7);
            memcpy(withunit, "bytes=", 6);
            memcpy(withunit + 6, range, n + 1);
            e->range = withunit;
        } else {
            e->range = xstrdup(range);
        }
    }
    e->member = member[0] ? member : NULL;
    return line[0] ? 0 : -1;
}

int
cli_batch(struct shard_client *c, const struct cli_opts *o, int nargs, char **args)
{
    char bucket[64], key[1025];
    struct entry_list l = {0};
    struct shard_error err;
    int rc = CLI_OK;
    FILE *f = stdin;
    char *line = NULL;
    size_t line_cap = 0;
    if (nargs < 1 || nargs > 2 || shard_parse_s3_url(args[0], bucket, key) != 0 || key[0]) {
        cli_msg("batch wants s3://bucket [FILE|-]");
        return CLI_USAGE;
    }
    const char *path = nargs == 2 ? args[1] : "-";
    if (strcmp(path, "-") != 0 && (f = fopen(path, "r")) == NULL) {
        cli_msg("%s: %s", path, strerror(errno));
        return CLI_IO;
    }
    ssize_t got;
    size_t lineno = 0;
    while ((got = getline(&line, &line_cap, f)) >= 0) {
        lineno++;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
            line[--got] = '\0';
        if (got == 0)
            continue; /* blank lines separate nothing */
        if (l.n == l.cap) {
            l.cap = l.cap ? 2 * l.cap : 256;
            l.e = xrealloc(l.e, l.cap * sizeof(*l.e));
            l.lines = xrealloc(l.lines, l.cap * sizeof(*l.lines));
        }
        l.lines[l.n] = xstrdup(line);
        if (entry_parse(l.lines[l.n], &l.e[l.n]) != 0) {
            cli_msg("%s:%zu: want KEY[<TAB>MEMBER[<TAB>RANGE]]", path, lineno);
            free(l.lines[l.n]);
            free((char *)l.e[l.n].range);
            rc = CLI_USAGE;
            goto done;
        }
        l.n++;
    }
    if (ferror(f)) {
        cli_msg("%s: %s", path, strerror(errno));
        rc = CLI_IO;
        goto done;
    }
    if (l.n == 0) {
        cli_msg("%s: no entries", path);
        rc = CLI_USAGE;
        goto done;
    }
    /* More than one request's worth: consecutive batches make one tar
     * stream only when each drops its end-of-archive blocks, which a
     * streamed answer cannot know in advance; refuse instead. */
    if (l.n > 10000) {
        cli_msg("%s: %zu entries; a batch holds at most 10000", path, l.n);
        rc = CLI_USAGE;
        goto done;
    }
    if (shard_batch_get(c, bucket, l.e, l.n, o->is_continue_on_error, write_stdout, NULL, &err) !=
        0)
        rc = cli_fail(args[0], &err);

done:
    for (size_t i = 0; i < l.n; i++) {
        free(l.lines[i]);
        free((char *)l.e[i].range);
    }
    free(l.e);
    free(l.lines);
    free(line);
    if (f != stdin)
        fclose(f);
    return rc;
}
