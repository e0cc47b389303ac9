/*
 * fuzz_tar_reader.c: libFuzzer target for client/tar.c, libshard's tar
 * member reader (shard_tar_input / shard_tar_next), which Python's
 * ShardDataset feeds with untrusted shards.
 *
 * Input: one byte choosing how to cut the rest, then the archive. The
 * archive is read in pieces (sizes from a generator seeded by that byte,
 * 1..4096 bytes, or every size 1 when it is 0) a few members per call,
 * and parsed whole by common/tar.c. Properties beyond "no crash": the same
 * verdict, reason and offset; the same members (name, size, header
 * offset) in order, every one whose data came and no other; each member's
 * data equals the archive's bytes at its offset; the members of a call but
 * the first lie in the piece in hand (shard.h's one-run promise), and a
 * reader never reads outside the pieces it was given (ASan).
 */
#include "client/shard.h"
#include "common/tar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_TR_MAX 512

struct fuzz_tr_ref {
    size_t n;
    uint64_t offset[FUZZ_TR_MAX], size[FUZZ_TR_MAX], header_offset[FUZZ_TR_MAX];
    uint64_t name_hash[FUZZ_TR_MAX];
};

static void
fuzz_tr_fail(const char *what)
{
    fprintf(stderr, "fuzz_tar_reader: %s\n", what);
    abort();
}

static uint64_t
fuzz_tr_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static int
fuzz_tr_collect(void *ctx, const struct tar_member *m)
{
    struct fuzz_tr_ref *r = ctx;
    if (r->n == FUZZ_TR_MAX)
        return 0; /* compared up to the cap */
    r->offset[r->n] = m->offset;
    r->size[r->n] = m->size;
    r->header_offset[r->n] = m->header_offset;
    r->name_hash[r->n] = fuzz_tr_hash(m->name, m->name_len);
    r->n++;
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint32_t seed = data[0];
    const uint8_t *tar = data + 1;
    size_t len = size - 1;

    static struct tar_parser p;
    static struct fuzz_tr_ref ref;
    memset(&ref, 0, sizeof(ref));
    tar_parser_init(&p, fuzz_tr_collect, &ref);
    tar_parser_feed(&p, tar, len);
    int want_rc = tar_parser_finish(&p) == TAR_OK ? 0 : SHARD_ERR_FORMAT;
    uint64_t want_at = 0;
    const char *want_why = tar_parser_error(&p, &want_at);
    size_t whole = 0;
    for (size_t i = 0; i < ref.n; i++)
        whole += ref.offset[i] + ref.size[i] <= len;

    struct shard_tar *t = shard_tar_create(0);
    struct shard_tar_member out[5];
    struct shard_error err;
    size_t off = 0, got = 0;
    const uint8_t *piece = NULL;
    size_t plen = 0;
    int rc = 0;
    int is_ended = 0;
    uint32_t x = seed * 2654435761u + 1;
    for (;;) {
        int n = shard_tar_next(t, out, 1 + seed % 5, &err);
        if (n < 0) {
            rc = n;
            break;
        }
        if (n == 0) {
            if (is_ended)
                break;
            if (off == len) {
                shard_tar_input(t, NULL, 0, &err);
                is_ended = 1;
                continue;
            }
            x = x * 1103515245u + 12345u;
            plen = seed == 0 ? 1 : 1 + (x >> 8) % 4096;
            if (plen > len - off)
                plen = len - off;
            piece = tar + off;
            if (shard_tar_input(t, piece, plen, &err) != 0)
                fuzz_tr_fail("a used-up piece was refused");
            off += plen;
            continue;
        }
        for (int i = 0; i < n; i++) {
            const uint8_t *d = out[i].data;
            if (got >= FUZZ_TR_MAX)
                continue;
            if (out[i].name[out[i].name_len] != '\0' ||
                fuzz_tr_hash(out[i].name, out[i].name_len) != ref.name_hash[got] ||
                out[i].size != ref.size[got] || out[i].header_offset != ref.header_offset[got])
                fuzz_tr_fail("a member differs from the parser's");
            if (ref.offset[got] + ref.size[got] > len ||
                memcmp(d, tar + ref.offset[got], out[i].size) != 0)
                fuzz_tr_fail("member data differs from the archive's");
            if (i > 0 && out[i].size > 0 && (d < piece || d + out[i].size > piece + plen))
                fuzz_tr_fail("a member after the first is not in the piece");
            got++;
        }
    }
    if (rc != want_rc)
        fuzz_tr_fail("verdict differs from the parser's");
    if (got != (whole < FUZZ_TR_MAX ? whole : FUZZ_TR_MAX))
        fuzz_tr_fail("not every whole member was handed out");
    uint64_t at = 0;
    const char *why = shard_tar_error(t, &at);
    if (rc == SHARD_ERR_FORMAT && (why == NULL || strcmp(why, want_why) != 0 || at != want_at))
        fuzz_tr_fail("error reason or offset differs from the parser's");
    shard_tar_destroy(t);
    return 0;
}
