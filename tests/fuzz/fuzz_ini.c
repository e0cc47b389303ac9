/*
 * fuzz_ini.c: libFuzzer target for client/ini.c (aws-cli credentials and
 * config files). Properties beyond "no crash": every section, subsection,
 * key and value handed out is NUL-terminated within 255 bytes, holds no
 * newline and no leading or trailing blank; parsing the same input twice
 * gives the same sequence of callbacks.
 */
#include "client/shard_int.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_ini_state {
    uint64_t hash;
    size_t calls;
};

static void
fuzz_ini_check(const char *what, const char *s)
{
    size_t n = strnlen(s, 256);
    if (n > 255 || memchr(s, '\n', n) != NULL ||
        (n > 0 && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t'))) {
        fprintf(stderr, "fuzz_ini: bad %s \"%.*s\"\n", what, (int)MIN(n, 300), s);
        abort();
    }
}

static void
fuzz_ini_mix(struct fuzz_ini_state *st, const char *s)
{
    for (; *s; s++)
        st->hash = (st->hash ^ (unsigned char)*s) * 1099511628211ull;
    st->hash = (st->hash ^ 0xff) * 1099511628211ull;
}

static int
fuzz_ini_cb(void *ctx, const char *section, const char *sub, const char *key, const char *value)
{
    struct fuzz_ini_state *st = ctx;
    fuzz_ini_check("section", section);
    fuzz_ini_check("subsection", sub);
    fuzz_ini_check("key", key);
    fuzz_ini_check("value", value);
    fuzz_ini_mix(st, section);
    fuzz_ini_mix(st, sub);
    fuzz_ini_mix(st, key);
    fuzz_ini_mix(st, value);
    st->calls++;
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy with no slack after it: ASan catches any over-read. */
    char *copy = malloc(size ? size : 1);
    if (size)
        memcpy(copy, data, size);
    struct fuzz_ini_state a = {1469598103934665603ull, 0}, b = a;
    client__ini_parse(copy, size, fuzz_ini_cb, &a);
    client__ini_parse(copy, size, fuzz_ini_cb, &b);
    if (a.hash != b.hash || a.calls != b.calls) {
        fprintf(stderr, "fuzz_ini: two parses of one input differ\n");
        abort();
    }
    free(copy);
    return 0;
}
