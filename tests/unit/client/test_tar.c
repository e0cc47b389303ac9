/*
 * test_tar.c: unit tests of client/tar.c, libshard's tar member reader
 * (shard_tar_create / _input / _next / _error).
 *
 * Differential: every archive is read by the reader in pieces of many
 * sizes and parsed whole by common/tar.c, the parser it is built on, and
 * the two must agree: the same members (name, size, header offset) with
 * the data the archive holds at each member's offset, the same verdict and
 * the same reason and offset on an error, with only whole members handed
 * out before it. Archives: USTAR, PAX and GNU from Python's tarfile
 * (tests/unit/common/tar_fixtures.py), every truncation of one, bit flips,
 * a header claiming a terabyte, garbage after the end block; plus the
 * reader's own contract: pointers into the piece, the one-run layout of a
 * call's members, a resume base, small caps and misuse.
 */
#include "config.h"

#include "client/shard.h"
#include "common/tar.h"
#include "tests/lib/tar_fixture.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MEMBERS 64

struct member {
    char *name;
    uint64_t size, offset, header_offset;
    uint8_t *data; /* the reader's copy of the data (NULL from the parser) */
};

struct list {
    size_t n;
    struct member m[MAX_MEMBERS];
    int rc;          /* 0: whole; else the error */
    const char *why; /* on SHARD_ERR_FORMAT / TAR_ERROR */
    uint64_t at;
};

static void
list_free(struct list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->m[i].name);
        free(l->m[i].data);
    }
    memset(l, 0, sizeof(*l));
}

static int
ref_collect(void *ctx, const struct tar_member *m)
{
    struct list *l = ctx;
    if (l->n == MAX_MEMBERS)
        TEST_FAIL("too many members");
    l->m[l->n].name = strdup(m->name);
    l->m[l->n].size = m->size;
    l->m[l->n].offset = m->offset;
    l->m[l->n].header_offset = m->header_offset;
    l->n++;
    return 0;
}

/* The reference: common/tar.c over the whole input. */
static void
ref_parse(const uint8_t *data, size_t len, struct list *l)
{
    static struct tar_parser p;
    tar_parser_init(&p, ref_collect, l);
    tar_parser_feed(&p, data, len);
    l->rc = tar_parser_finish(&p) == TAR_OK ? 0 : SHARD_ERR_FORMAT;
    l->why = tar_parser_error(&p, &l->at);
}

/* Piece sizes: 'step' bytes each, or uneven ones when 'step' is 0. */
static size_t
piece_len(size_t step, size_t k)
{
    static const size_t uneven[] = {1, 700, 13, 2000, 511, 4095, 512, 3, 1536, 10000};
    return step ? step : uneven[k % (sizeof(uneven) / sizeof(uneven[0]))];
}

/* Reads 'data' with the reader from archive offset 'base' in pieces
 * (piece_len), 'cap' members per call, into 'l' (offsets relative to
 * 'base'). Checks on the way that a call's members but the first lie in
 * the current piece in order, and that a member whose data the piece
 * holds whole points into it. */
static void
reader_parse(const uint8_t *data, size_t len, uint64_t base, size_t step, size_t cap,
             struct list *l)
{
    struct shard_tar *t = shard_tar_create(base);
    struct shard_tar_member out[MAX_MEMBERS];
    struct shard_error err;
    size_t off = 0, k = 0;
    const uint8_t *piece = NULL;
    size_t plen = 0;
    bool is_ended = false;
    for (;;) {
        int n = shard_tar_next(t, out, cap, &err);
        if (n < 0) {
            l->rc = n;
            l->why = shard_tar_error(t, &l->at);
            if (l->why != NULL)
                l->at -= base;
            break;
        }
        if (n == 0) {
            if (is_ended)
                break; /* the archive is whole */
            if (off == len) {
                ASSERT_EQ(shard_tar_input(t, NULL, 0, &err), 0);
                is_ended = true;
                piece = NULL;
                plen = 0;
                continue;
            }
            plen = piece_len(step, k++);
            if (plen > len - off)
                plen = len - off;
            piece = data + off;
            ASSERT_EQ(shard_tar_input(t, piece, plen, &err), 0);
            off += plen;
            continue;
        }
        ASSERT((size_t)n <= cap);
        for (int i = 0; i < n; i++) {
            const struct shard_tar_member *m = &out[i];
            ASSERT(l->n < MAX_MEMBERS);
            ASSERT_EQ(m->name[m->name_len], '\0');
            const uint8_t *d = m->data;
            if (i > 0 && m->size > 0) {
                /* The one run: in the piece, after the member before. */
                ASSERT(piece != NULL && d >= piece && d + m->size <= piece + plen);
                if (i > 1 && out[i - 1].size > 0)
                    ASSERT(d >= (const uint8_t *)out[i - 1].data + out[i - 1].size);
            }
            struct member *c = &l->m[l->n++];
            c->name = strdup(m->name);
            c->size = m->size;
            c->header_offset = m->header_offset - base;
            c->data = malloc(m->size ? m->size : 1);
            memcpy(c->data, m->data, m->size);
        }
    }
    /* Errors are sticky. */
    if (l->rc != 0)
        ASSERT_EQ(shard_tar_next(t, out, cap, &err), l->rc);
    shard_tar_destroy(t);
}

/* The reader agrees with the parser on 'data' for every way of cutting it
 * into pieces; 'base' is the archive offset of data[0]. */
static void
agree(const uint8_t *data, size_t len, uint64_t base)
{
    struct list ref = {0};
    ref_parse(data, len, &ref);
    static const size_t steps[] = {0, 1, 7, 511, 512, 513, 4096, 65536, (size_t)1 << 30};
    static const size_t caps[] = {MAX_MEMBERS, 1, 3};
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        struct list got = {0};
        size_t cap = caps[s % 3];
        reader_parse(data, len, base, steps[s], cap, &got);
        ASSERT_EQ(got.rc, ref.rc);
        /* Every member whose data came, and only those (a truncated one's
         * header was parsed, but it is not handed out). */
        size_t whole = 0;
        for (size_t i = 0; i < ref.n; i++)
            whole += ref.m[i].offset + ref.m[i].size <= len;
        ASSERT_UEQ(got.n, whole);
        if (ref.rc != 0) {
            ASSERT_STR_EQ(got.why, ref.why);
            ASSERT_UEQ(got.at, ref.at);
        }
        for (size_t i = 0; i < got.n; i++) {
            ASSERT_STR_EQ(got.m[i].name, ref.m[i].name);
            ASSERT_UEQ(got.m[i].size, ref.m[i].size);
            ASSERT_UEQ(got.m[i].header_offset, ref.m[i].header_offset);
            ASSERT(ref.m[i].offset + ref.m[i].size <= len);
            ASSERT_MEM_EQ(got.m[i].data, data + ref.m[i].offset, (size_t)ref.m[i].size);
        }
        list_free(&got);
    }
    list_free(&ref);
}

/* Python's archives, each cut every way, with bits flipped, at a base. */
static void
test_fixtures(const char *dir)
{
    const char *names[] = {"ustar", "pax", "gnu", "gnu_too_long", "pax_too_long"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[4096];
        size_t len;
        snprintf(path, sizeof(path), "%s/%s.tar", dir, names[i]);
        uint8_t *tar = tar_fixture_read(path, &len);
        agree(tar, len, 0);
        agree(tar, len, 123456789);
        if (i == 1) {
            /* Every truncation (inside headers, pax records, data, padding). */
            for (size_t cut = 0; cut < len; cut += 97)
                agree(tar, cut, 0);
            /* Bit flips in headers and data. */
            for (size_t at = 5; at < len; at += 1531) {
                tar[at] ^= 0x20;
                agree(tar, len, 0);
                tar[at] ^= 0x20;
            }
        }
        free(tar);
    }
}

/* A member whose header claims a terabyte, then 1000 bytes: malformed
 * (truncated), and the reader holds only what came, never the claim. */
static void
test_lying_size(void)
{
    size_t len = 3 * TAR_BLOCK;
    uint8_t *buf = calloc(1, len);
    tar_fixture_header(buf, "a.bin", 1ull << 40, '0', true);
    memset(buf + TAR_BLOCK, 'x', 1000);
    agree(buf, len, 0);
    struct list got = {0};
    reader_parse(buf, len, 0, 100, MAX_MEMBERS, &got);
    ASSERT_EQ(got.rc, SHARD_ERR_FORMAT);
    ASSERT_STR_EQ(got.why, "truncated in an entry's data");
    ASSERT_UEQ(got.at, len);
    ASSERT_UEQ(got.n, 0);
    list_free(&got);
    free(buf);
}

/* Whole members point into the piece (no copy); bytes after the end block
 * are accepted and ignored; a member spanning pieces is copied whole. */
static void
test_pointers_and_end(void)
{
    size_t len = 12 * TAR_BLOCK;
    uint8_t *buf = calloc(1, len);
    tar_fixture_header(buf, "0.jpg", 600, '0', false); /* data in blocks 1-2 */
    memset(buf + TAR_BLOCK, 'a', 600);
    tar_fixture_header(buf + 3 * TAR_BLOCK, "0.cls", 1, '0', false); /* data in block 4 */
    buf[4 * TAR_BLOCK] = '7';
    tar_fixture_header(buf + 5 * TAR_BLOCK, "1.jpg", 1500, '0', false); /* data in blocks 6-8 */
    memset(buf + 6 * TAR_BLOCK, 'b', 1500);
    /* Block 9 ends the archive; blocks 10-11 are garbage after it. */
    memset(buf + 10 * TAR_BLOCK, 0xa5, 2 * TAR_BLOCK);
    agree(buf, len, 0);

    struct shard_tar *t = shard_tar_create(0);
    struct shard_tar_member out[8];
    struct shard_error err;
    /* The first piece ends inside 1.jpg's data. */
    size_t first = 7 * TAR_BLOCK;
    ASSERT_EQ(shard_tar_input(t, buf, first, &err), 0);
    ASSERT_EQ(shard_tar_next(t, out, 1, &err), 1);
    ASSERT(out[0].data == buf + TAR_BLOCK);
    /* A second piece before the first is used up is refused. */
    ASSERT_EQ(shard_tar_input(t, buf + first, len - first, &err), SHARD_ERR_ARG);
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), 1);
    ASSERT(out[0].data == buf + 4 * TAR_BLOCK);
    ASSERT_UEQ(out[0].header_offset, 3 * TAR_BLOCK);
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), 0);
    ASSERT_EQ(shard_tar_input(t, buf + first, len - first, &err), 0);
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), 1);
    ASSERT_STR_EQ(out[0].name, "1.jpg");
    ASSERT(out[0].data < (const void *)buf || out[0].data >= (const void *)(buf + len));
    ASSERT_UEQ(out[0].size, 1500);
    ASSERT_MEM_EQ(out[0].data, buf + 6 * TAR_BLOCK, 1500);
    /* The end block came: the garbage after it is never parsed. */
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), 0);
    ASSERT_EQ(shard_tar_input(t, NULL, 0, &err), 0);
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), 0);
    ASSERT_EQ(shard_tar_input(t, buf, 1, &err), SHARD_ERR_ARG); /* input after its end */
    ASSERT_EQ(shard_tar_next(t, out, 0, &err), SHARD_ERR_ARG);
    ASSERT_STR_EQ(err.code, "InvalidArgument");
    ASSERT(shard_tar_error(t, NULL) == NULL);
    shard_tar_destroy(t);
    shard_tar_destroy(NULL);

    /* Two members spanning pieces in one call: each keeps its own copy. */
    t = shard_tar_create(0);
    ASSERT_EQ(shard_tar_input(t, buf, TAR_BLOCK + 100, &err), 0); /* inside 0.jpg */
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), 0);
    ASSERT_EQ(shard_tar_input(t, buf + TAR_BLOCK + 100, 6 * TAR_BLOCK, &err), 0); /* into 1.jpg */
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), 2);
    ASSERT_STR_EQ(out[0].name, "0.jpg");
    ASSERT_MEM_EQ(out[0].data, buf + TAR_BLOCK, 600);
    ASSERT_MEM_EQ(out[1].data, buf + 4 * TAR_BLOCK, 1);
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), 0);
    const uint8_t *prev = out[0].data;
    ASSERT_EQ(shard_tar_input(t, buf + 7 * TAR_BLOCK + 100, len - 7 * TAR_BLOCK - 100, &err), 0);
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), 1);
    ASSERT(out[0].data != prev || out[0].size == 0);
    ASSERT_MEM_EQ(out[0].data, buf + 6 * TAR_BLOCK, 1500);
    shard_tar_destroy(t);
    free(buf);
}

/* Malformed archives: the members before the damage, then the reason at
 * the byte (the base added). */
static void
test_malformed(void)
{
    size_t len = 8 * TAR_BLOCK;
    uint8_t *buf = calloc(1, len);
    tar_fixture_header(buf, "a.cls", 1, '0', false);
    buf[TAR_BLOCK] = '1';
    tar_fixture_header(buf + 2 * TAR_BLOCK, "b.cls", 1, '0', false);
    buf[3 * TAR_BLOCK] = '2';
    tar_fixture_header(buf + 4 * TAR_BLOCK, "c.cls", 1, '0', false);
    buf[4 * TAR_BLOCK + 148] ^= 0x11; /* c's checksum */
    agree(buf, len, 0);
    struct shard_tar *t = shard_tar_create(1000);
    struct shard_tar_member out[8];
    struct shard_error err;
    ASSERT_EQ(shard_tar_input(t, buf, len, &err), 0);
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), 2);
    ASSERT_UEQ(out[1].header_offset, 1000 + 2 * TAR_BLOCK);
    ASSERT_EQ(shard_tar_next(t, out, 8, &err), SHARD_ERR_FORMAT);
    ASSERT_STR_EQ(err.code, "MalformedTar");
    uint64_t at = 0;
    ASSERT_STR_EQ(shard_tar_error(t, &at), "bad header checksum");
    ASSERT_UEQ(at, 1000 + 4 * TAR_BLOCK);
    ASSERT_STR_EQ(err.message, "malformed tar at byte 3048: bad header checksum");
    shard_tar_destroy(t);

    /* Empty input and garbage are not archives. */
    agree(buf, 0, 0);
    uint32_t x = 99;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245 + 12345;
        buf[i] = (uint8_t)(x >> 16);
    }
    agree(buf, len, 0);
    free(buf);
}

int
main(void)
{
    test_pointers_and_end();
    test_malformed();
    test_lying_size();
    const char *src = getenv("SHARD_SRCDIR");
    char cmd[8192];
    char *dir = test_tmpdir_create("tar");
    snprintf(cmd, sizeof(cmd), "python3 '%s/tests/unit/common/tar_fixtures.py' '%s'",
             src ? src : ".", dir);
    if (system(cmd) != 0) {
        test_tmpdir_remove(dir);
        TEST_SKIP("python3 with tarfile is needed for the fixtures");
    }
    test_fixtures(dir);
    test_tmpdir_remove(dir);
    return 0;
}
