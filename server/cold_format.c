/*
 * cold_format.c: the cold tier's blob format (described in cold_format.h):
 * footer and block-entry codecs, and the per-block zstd codec. Pure: no
 * I/O. Every parse checks each field against the blob it came from, so a
 * damaged or hostile blob gives -EILSEQ, never an out-of-range read, and
 * every decoded block is checked against its plain xxh64.
 */
#include "config.h"

#include "server/cold_format.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

static const char cold_magic[8] = {'S', 'S', 'C', 'O', 'L', 'D', '0', '1'};

struct cold_codec {
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    int level;
};

static void
put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void
put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t
get_le64(const uint8_t *p)
{
    return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

void
cold_footer_format(const struct cold_footer *f, uint8_t out[COLD_FOOTER_LEN])
{
    memcpy(out, cold_magic, 8);
    put_le32(out + 8, f->block_len);
    put_le32(out + 12, f->n_blocks);
    put_le64(out + 16, f->size);
    put_le64(out + 24, f->table_off);
    put_le64(out + 32, 0);
    put_le64(out + 40, XXH64(out, 40, 0));
}

int
cold_footer_parse(const uint8_t in[COLD_FOOTER_LEN], uint64_t blob_len, struct cold_footer *out)
{
    if (memcmp(in, cold_magic, 8) != 0 || get_le64(in + 40) != XXH64(in, 40, 0) ||
        get_le64(in + 32) != 0)
        return -EILSEQ;
    struct cold_footer f = {
        .block_len = get_le32(in + 8),
        .n_blocks = get_le32(in + 12),
        .size = get_le64(in + 16),
        .table_off = get_le64(in + 24),
    };
    if (f.block_len < COLD_BLOCK_LEN_MIN || f.block_len > COLD_BLOCK_LEN_MAX ||
        (f.block_len & (f.block_len - 1)) != 0)
        return -EILSEQ;
    uint64_t want_blocks = f.size / f.block_len + (f.size % f.block_len != 0);
    if (want_blocks != f.n_blocks)
        return -EILSEQ;
    /* n_blocks < 2^32, so the table length cannot overflow. */
    uint64_t tail = (uint64_t)f.n_blocks * COLD_ENTRY_LEN + COLD_FOOTER_LEN;
    if (blob_len < tail || f.table_off != blob_len - tail)
        return -EILSEQ;
    *out = f;
    return 0;
}

void
cold_entry_format(const struct cold_entry *e, uint32_t index, uint8_t out[COLD_ENTRY_LEN])
{
    put_le64(out, e->stored_off);
    put_le32(out + 8, e->stored_len);
    put_le32(out + 12, e->kind);
    put_le64(out + 16, e->plain_sum);
    put_le64(out + 24, XXH64(out, 24, index));
}

uint32_t
cold_block_plain_len(const struct cold_footer *f, uint32_t index)
{
    if (index >= f->n_blocks)
        return 0;
    uint64_t start = (uint64_t)index * f->block_len;
    return (uint32_t)MIN((uint64_t)f->block_len, f->size - start);
}

size_t
cold_block_bound(uint32_t block_len)
{
    return ZSTD_compressBound(block_len);
}

int
cold_entry_parse(const uint8_t in[COLD_ENTRY_LEN], uint32_t index, const struct cold_footer *f,
                 struct cold_entry *out)
{
    if (index >= f->n_blocks || get_le64(in + 24) != XXH64(in, 24, index))
        return -EILSEQ;
    struct cold_entry e = {
        .stored_off = get_le64(in),
        .stored_len = get_le32(in + 8),
        .kind = get_le32(in + 12),
        .plain_sum = get_le64(in + 16),
    };
    uint32_t plain = cold_block_plain_len(f, index);
    if (e.kind != COLD_BLOCK_RAW && e.kind != COLD_BLOCK_ZSTD)
        return -EILSEQ;
    if (e.kind == COLD_BLOCK_RAW ? e.stored_len != plain
                                 : (e.stored_len == 0 || e.stored_len > cold_block_bound(plain)))
        return -EILSEQ;
    if (e.stored_off > f->table_off || e.stored_len > f->table_off - e.stored_off)
        return -EILSEQ;
    *out = e;
    return 0;
}

struct cold_codec *
cold_codec_create(int level)
{
    struct cold_codec *c = xcalloc(1, sizeof(*c));
    c->level = level;
    return c;
}

void
cold_codec_destroy(struct cold_codec *c)
{
    if (!c)
        return;
    ZSTD_freeCCtx(c->cctx);
    ZSTD_freeDCtx(c->dctx);
    free(c);
}

int
cold_block_encode(struct cold_codec *c, const void *plain, size_t len, void *out, size_t cap,
                  struct cold_entry *e)
{
    if (!c->cctx && !(c->cctx = ZSTD_createCCtx()))
        return -ENOMEM;
    e->plain_sum = XXH64(plain, len, 0);
    size_t n = ZSTD_compressCCtx(c->cctx, out, cap, plain, len, c->level);
    if (ZSTD_isError(n))
        return -EIO;
    if (n >= len) {
        /* Incompressible: stored as it is, read without a decompression. */
        memcpy(out, plain, len);
        e->kind = COLD_BLOCK_RAW;
        e->stored_len = (uint32_t)len;
        return 0;
    }
    e->kind = COLD_BLOCK_ZSTD;
    e->stored_len = (uint32_t)n;
    return 0;
}

int
cold_block_decode(struct cold_codec *c, const struct cold_entry *e, const void *stored, void *out,
                  size_t plain_len)
{
    if (e->kind == COLD_BLOCK_RAW) {
        if (e->stored_len != plain_len)
            return -EILSEQ;
        memcpy(out, stored, plain_len);
    } else {
        if (!c->dctx && !(c->dctx = ZSTD_createDCtx()))
            return -ENOMEM;
        size_t n = ZSTD_decompressDCtx(c->dctx, out, plain_len, stored, e->stored_len);
        if (ZSTD_isError(n) || n != plain_len)
            return -EILSEQ;
    }
    return XXH64(out, plain_len, 0) == e->plain_sum ? 0 : -EILSEQ;
}
