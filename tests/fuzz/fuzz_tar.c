/*
 * fuzz_tar.c: libFuzzer target for common/tar.c (the tar header parser).
 *
 * Input: the archive itself. Properties checked beyond "no crash": the
 * archive fed whole, byte by byte and in chunks of sizes taken from the
 * input gives the same status and the same members; members come in
 * archive order with data ranges that never overlap and start after their
 * header, which starts after the previous member's data; an error always
 * has a reason and an offset within the input; when the parse finishes
 * TAR_OK every member's data lies within the input; names have their
 * stated length and fit TAR_NAME_MAX; skipping member data unread (as the
 * server's first-use build does) changes nothing.
 */
#include "common/tar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_TAR_MAX_MEMBERS 256

struct fuzz_tar_list {
    size_t n;
    uint64_t offset[FUZZ_TAR_MAX_MEMBERS];
    uint64_t size[FUZZ_TAR_MAX_MEMBERS];
    uint64_t name_hash[FUZZ_TAR_MAX_MEMBERS];
};

static void
fuzz_tar_fail(const char *what)
{
    fprintf(stderr, "fuzz_tar: %s\n", what);
    abort();
}

static int
fuzz_tar_collect(void *ctx, const struct tar_member *m)
{
    struct fuzz_tar_list *l = ctx;
    if (m->name_len == 0 || m->name_len > TAR_NAME_MAX || m->name[m->name_len] != '\0')
        fuzz_tar_fail("name length");
    if (l->n && m->offset < l->offset[l->n - 1] + l->size[l->n - 1])
        fuzz_tar_fail("members overlap or go backwards");
    if (m->offset < TAR_BLOCK || m->offset % TAR_BLOCK)
        fuzz_tar_fail("data does not start after a header");
    if (m->header_offset > m->offset - TAR_BLOCK || m->header_offset % TAR_BLOCK ||
        (l->n && m->header_offset < l->offset[l->n - 1] + l->size[l->n - 1]))
        fuzz_tar_fail("header offset not between the previous data and this member's");
    if (l->n == FUZZ_TAR_MAX_MEMBERS)
        return -1; /* a cap, as the server has one */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < m->name_len; i++)
        h = (h ^ (uint8_t)m->name[i]) * 1099511628211ull;
    h ^= m->header_offset; /* chunking must not move it either */
    l->offset[l->n] = m->offset;
    l->size[l->n] = m->size;
    l->name_hash[l->n] = h;
    l->n++;
    return 0;
}

/* Parses 'data' in chunks: 0 whole, 1 byte by byte, 2 sizes taken from the
 * input, 3 as the server's first-use build reads: skippable bytes skipped
 * unread (tar_parser_skip), the rest fed a block at a time, stopping at the
 * end-of-archive block. */
static enum tar_status
fuzz_tar_parse(const uint8_t *data, size_t size, int mode, struct fuzz_tar_list *l)
{
    static struct tar_parser p;
    tar_parser_init(&p, fuzz_tar_collect, l);
    size_t off = 0, k = 0;
    while (off < size) {
        size_t n = size - off;
        if (mode == 3) {
            uint64_t skip = tar_parser_skippable(&p);
            if (tar_parser_is_end(&p))
                break;
            if (skip) {
                n = skip < n ? (size_t)skip : n;
                tar_parser_skip(&p, n);
                off += n;
                continue;
            }
            n = n < TAR_BLOCK ? n : TAR_BLOCK;
        } else if (mode == 1)
            n = 1;
        else if (mode == 2 && n > 1)
            n = 1 + (size_t)data[k++ % size] % n;
        tar_parser_feed(&p, data + off, n);
        off += n;
    }
    enum tar_status st = tar_parser_finish(&p);
    uint64_t at = UINT64_MAX;
    const char *why = tar_parser_error(&p, &at);
    if ((st == TAR_ERROR) != (why != NULL) || (why && at > size))
        fuzz_tar_fail("an error without a reason, or a reason past the input");
    return st;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_tar_list a, b;
    memset(&a, 0, sizeof(a));
    enum tar_status st = fuzz_tar_parse(data, size, 0, &a);
    if (st == TAR_OK)
        for (size_t i = 0; i < a.n; i++)
            if (a.offset[i] > size || a.size[i] > size - a.offset[i])
                fuzz_tar_fail("member data past the end of a whole archive");
    for (int mode = 1; mode <= 3; mode++) {
        memset(&b, 0, sizeof(b));
        if (fuzz_tar_parse(data, size, mode, &b) != st)
            fuzz_tar_fail("chunked status differs from whole");
        if (b.n != a.n || memcmp(b.offset, a.offset, a.n * sizeof(a.offset[0])) ||
            memcmp(b.size, a.size, a.n * sizeof(a.size[0])) ||
            memcmp(b.name_hash, a.name_hash, a.n * sizeof(a.name_hash[0])))
            fuzz_tar_fail("chunked members differ from whole");
    }
    return 0;
}
