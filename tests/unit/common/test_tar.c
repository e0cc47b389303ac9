/*
 * test_tar.c: unit tests of common/tar.c, the streaming tar header parser.
 * Archives in USTAR, PAX and GNU formats come from Python's tarfile
 * (tar_fixtures.py, run at test time), which also gives the expected
 * members (name, data offset, size, mode, mtime). Each archive is parsed
 * whole, byte by byte and in uneven chunks, with the same result; every
 * truncation inside a header or a member's data fails; garbage, bit flips,
 * a name past TAR_NAME_MAX and a callback that stops all fail. Headers made
 * here cover GNU base-256 sizes and pax size overrides.
 */
#include "config.h"

#include "common/tar.h"
#include "tests/lib/tar_fixture.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MEMBERS 64

struct seen {
    size_t n;
    size_t stop_after; /* 0: never stop */
    char *names[MAX_MEMBERS];
    struct tar_member m[MAX_MEMBERS];
};

static int
collect(void *ctx, const struct tar_member *m)
{
    struct seen *s = ctx;
    if (s->stop_after && s->n == s->stop_after)
        return -1;
    if (s->n == MAX_MEMBERS)
        TEST_FAIL("too many members");
    ASSERT_UEQ(strlen(m->name), m->name_len);
    s->names[s->n] = strdup(m->name);
    s->m[s->n] = *m;
    s->m[s->n].name = s->names[s->n];
    s->n++;
    return 0;
}

static void
seen_free(struct seen *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->names[i]);
    s->n = 0;
}

/* The parser of the last parse() (large: not on the stack). */
static struct tar_parser p;

/* Parses 'data' in chunks of 'chunk' bytes (0: whole); returns finish's status. */
static enum tar_status
parse(const uint8_t *data, size_t len, size_t chunk, struct seen *s)
{
    tar_parser_init(&p, collect, s);
    size_t off = 0;
    size_t step = chunk ? chunk : len;
    while (off < len) {
        size_t n = len - off < step ? len - off : step;
        if (tar_parser_feed(&p, data + off, n) == TAR_ERROR)
            return TAR_ERROR;
        off += n;
        if (chunk > 1)
            step = (step * 7) % 1021 + 1; /* uneven chunks */
    }
    return tar_parser_finish(&p);
}

static void
same_members(const struct seen *a, const struct seen *b)
{
    ASSERT_UEQ(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        ASSERT_STR_EQ(a->m[i].name, b->m[i].name);
        ASSERT_UEQ(a->m[i].offset, b->m[i].offset);
        ASSERT_UEQ(a->m[i].header_offset, b->m[i].header_offset);
        ASSERT_UEQ(a->m[i].size, b->m[i].size);
        ASSERT_UEQ(a->m[i].mode, b->m[i].mode);
        ASSERT_EQ(a->m[i].mtime_s, b->m[i].mtime_s);
    }
}

/* The last parse() failed for 'why' at archive offset 'at'. */
static void
failed_for(const char *why, uint64_t at)
{
    uint64_t off = UINT64_MAX;
    const char *got = tar_parser_error(&p, &off);
    ASSERT(got != NULL);
    ASSERT_STR_EQ(got, why);
    ASSERT_UEQ(off, at);
}

/* Checks archive DIR/NAME.tar against DIR/NAME.expect. */
static void
check_fixture(const char *dir, const char *name)
{
    char path[4096];
    size_t len, elen;
    snprintf(path, sizeof(path), "%s/%s.tar", dir, name);
    uint8_t *tar = tar_fixture_read(path, &len);
    snprintf(path, sizeof(path), "%s/%s.expect", dir, name);
    char *expect = (char *)tar_fixture_read(path, &elen);

    struct seen whole = {0}, bytes = {0}, chunks = {0};
    enum tar_status st = parse(tar, len, 0, &whole);
    bool want_ok = strncmp(expect, "ok\n", 3) == 0;
    if ((st == TAR_OK) != want_ok)
        TEST_FAIL("%s: status %d, want %s", name, (int)st, want_ok ? "ok" : "error");
    ASSERT_EQ(parse(tar, len, 1, &bytes), st);
    ASSERT_EQ(parse(tar, len, 3, &chunks), st);
    if (want_ok) {
        same_members(&whole, &bytes);
        same_members(&whole, &chunks);
        /* Against tarfile's view. */
        size_t i = 0;
        char *line = strchr(expect, '\n') + 1;
        while (*line) {
            char *end = strchr(line, '\n');
            *end = '\0';
            char *tab = strchr(line, '\t');
            *tab = '\0';
            unsigned long long off, size, mode, hoff;
            long long mtime;
            ASSERT_EQ(
                sscanf(tab + 1, "%llu\t%llu\t%llu\t%lld\t%llu", &off, &size, &mode, &mtime, &hoff),
                5);
            if (i >= whole.n)
                TEST_FAIL("%s: member %s not reported", name, line);
            ASSERT_STR_EQ(whole.m[i].name, line);
            ASSERT_UEQ(whole.m[i].offset, off);
            ASSERT_UEQ(whole.m[i].header_offset, hoff);
            ASSERT_UEQ(whole.m[i].size, size);
            ASSERT_EQ(whole.m[i].mtime_s, mtime);
            ASSERT_UEQ(whole.m[i].mode, mode);
            i++;
            line = end + 1;
        }
        ASSERT_UEQ(i, whole.n);
        /* Truncated inside a header or a member's data: unreadable. */
        for (size_t k = 0; k < whole.n; k++) {
            struct seen t = {0};
            ASSERT_EQ(parse(tar, whole.m[k].offset - 1, 0, &t), TAR_ERROR);
            failed_for("truncated header", whole.m[k].offset - TAR_BLOCK);
            seen_free(&t);
            if (whole.m[k].size) {
                ASSERT_EQ(parse(tar, whole.m[k].offset + whole.m[k].size - 1, 0, &t), TAR_ERROR);
                failed_for("truncated in an entry's data", whole.m[k].offset + whole.m[k].size - 1);
                seen_free(&t);
            }
            /* Parsing again from a member's header offset gives it first. */
            ASSERT(parse(tar + whole.m[k].header_offset, len - whole.m[k].header_offset, 0, &t) ==
                   TAR_OK);
            ASSERT(t.n > 0);
            ASSERT_STR_EQ(t.m[0].name, whole.m[k].name);
            ASSERT_UEQ(t.m[0].offset + whole.m[k].header_offset, whole.m[k].offset);
            seen_free(&t);
        }
        /* A callback that stops (a cap) fails the parse. */
        struct seen capped = {.stop_after = 2};
        ASSERT_EQ(parse(tar, len, 0, &capped), TAR_ERROR);
        ASSERT_UEQ(capped.n, 2);
        failed_for("stopped by the member callback", whole.m[2].header_offset);
        seen_free(&capped);
        /* A flipped bit in the first header breaks its checksum. */
        tar[10] ^= 0x04;
        struct seen flipped = {0};
        ASSERT_EQ(parse(tar, len, 0, &flipped), TAR_ERROR);
        failed_for("bad header checksum", 0);
        seen_free(&flipped);
    }
    seen_free(&whole);
    seen_free(&bytes);
    seen_free(&chunks);
    free(tar);
    free(expect);
}

static void
test_base256_and_pax_size(void)
{
    uint8_t buf[TAR_BLOCK * 8];
    memset(buf, 0, sizeof(buf));
    tar_fixture_header(buf, "big.bin", 700, '0', true);
    /* data 700 bytes -> 2 blocks; then a pax header overriding the size */
    const char *rec = "12 size=100\n";
    tar_fixture_header(buf + 3 * TAR_BLOCK, "PaxHeaders/x", strlen(rec), 'x', false);
    memcpy(buf + 4 * TAR_BLOCK, rec, strlen(rec));
    tar_fixture_header(buf + 5 * TAR_BLOCK, "small.bin", 99999, '0', false);
    /* 100 bytes of data in block 6; block 7 is the end marker */
    struct seen s = {0}, b = {0};
    ASSERT_EQ(parse(buf, sizeof(buf), 0, &s), TAR_OK);
    ASSERT_EQ(parse(buf, sizeof(buf), 1, &b), TAR_OK);
    same_members(&s, &b);
    ASSERT_UEQ(s.n, 2);
    ASSERT_STR_EQ(s.m[0].name, "big.bin");
    ASSERT_UEQ(s.m[0].offset, TAR_BLOCK);
    ASSERT_UEQ(s.m[0].size, 700);
    ASSERT_EQ(s.m[0].mtime_s, 014000000000);
    ASSERT_UEQ(s.m[0].mode, 0644);
    ASSERT_STR_EQ(s.m[1].name, "small.bin");
    ASSERT_UEQ(s.m[1].offset, 6 * TAR_BLOCK);
    ASSERT_UEQ(s.m[1].size, 100);
    seen_free(&s);
    seen_free(&b);
    /* Without an end marker but ending after padded data: whole. */
    ASSERT_EQ(parse(buf, 7 * TAR_BLOCK, 0, &s), TAR_OK);
    seen_free(&s);
    /* A malformed pax record fails. */
    memcpy(buf + 4 * TAR_BLOCK, "99 size=100\n", 12);
    ASSERT_EQ(parse(buf, sizeof(buf), 0, &s), TAR_ERROR);
    failed_for("bad pax extended header", 3 * TAR_BLOCK);
    seen_free(&s);
    memcpy(buf + 4 * TAR_BLOCK, rec, strlen(rec));
    /* Cut after the pax header's data: its member never came. */
    ASSERT_EQ(parse(buf, 5 * TAR_BLOCK, 0, &s), TAR_ERROR);
    failed_for("truncated after an extended header", 5 * TAR_BLOCK);
    seen_free(&s);
    /* The member after a pax header starts at the pax header. */
    ASSERT_EQ(parse(buf, sizeof(buf), 0, &s), TAR_OK);
    ASSERT_UEQ(s.m[1].header_offset, 3 * TAR_BLOCK);
    ASSERT_UEQ(s.m[0].header_offset, 0);
    seen_free(&s);
    /* A negative base-256 size fails. */
    tar_fixture_header(buf, "neg.bin", 0, '0', false);
    memset(buf + 124, 0xff, 12); /* -1 */
    unsigned sum = 0;
    memset(buf + 148, ' ', 8);
    for (int i = 0; i < TAR_BLOCK; i++)
        sum += buf[i];
    snprintf((char *)buf + 148, 8, "%06o", sum);
    ASSERT_EQ(parse(buf, sizeof(buf), 0, &s), TAR_ERROR);
    failed_for("negative size", 0);
    seen_free(&s);
    /* GNU sparse files are not readable members. */
    tar_fixture_header(buf, "sparse", 0, 'S', false);
    ASSERT_EQ(parse(buf, sizeof(buf), 0, &s), TAR_ERROR);
    failed_for("GNU sparse file", 0);
    seen_free(&s);
}

static void
test_garbage(void)
{
    uint8_t buf[4096];
    struct seen s = {0};
    uint32_t x = 12345;
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof(buf); i++) {
            x = x * 1103515245 + 12345;
            buf[i] = (uint8_t)(x >> 16);
        }
        ASSERT_EQ(parse(buf, sizeof(buf), 0, &s), TAR_ERROR);
        ASSERT_UEQ(s.n, 0);
    }
    /* Empty input and a text file are not archives. */
    ASSERT_EQ(parse(buf, 0, 0, &s), TAR_ERROR);
    failed_for("empty archive", 0);
    const char *text = "hello, this is not a tar\n";
    ASSERT_EQ(parse((const uint8_t *)text, strlen(text), 0, &s), TAR_ERROR);
}

int
main(void)
{
    test_base256_and_pax_size();
    test_garbage();
    const char *src = getenv("SHARD_SRCDIR");
    char cmd[8192];
    char *dir = test_tmpdir_create("tar");
    snprintf(cmd, sizeof(cmd), "python3 '%s/tests/unit/common/tar_fixtures.py' '%s'",
             src ? src : ".", dir);
    if (system(cmd) != 0) {
        test_tmpdir_remove(dir);
        TEST_SKIP("python3 with tarfile is needed for the fixtures");
    }
    const char *names[] = {"ustar", "pax", "gnu", "gnu_too_long", "pax_too_long"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        check_fixture(dir, names[i]);
    test_tmpdir_remove(dir);
    return 0;
}
