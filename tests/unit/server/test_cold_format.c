/*
 * test_cold_format.c: unit tests of server/cold_format.c, the cold tier's
 * blob format: footer and entry round trips, every rejected field (magic,
 * sums, block length, block count, table offset, entry kind and bounds),
 * compressible blocks shrink and decode, incompressible ones stay raw,
 * and a flipped byte in a stored block is caught by its plain sum.
 */
#include "server/cold_format.h"
#include "tests/lib/test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (64u * 1024)

static void
test_footer(void)
{
    struct cold_footer f = {.block_len = BLOCK, .n_blocks = 3, .size = 2 * BLOCK + 5}, back;
    uint64_t blob_len = 1000 + 3 * COLD_ENTRY_LEN + COLD_FOOTER_LEN;
    f.table_off = 1000;
    uint8_t b[COLD_FOOTER_LEN];
    cold_footer_format(&f, b);
    ASSERT_EQ(cold_footer_parse(b, blob_len, &back), 0);
    ASSERT_UEQ(back.block_len, BLOCK);
    ASSERT_UEQ(back.n_blocks, 3);
    ASSERT_UEQ(back.size, 2 * BLOCK + 5);
    ASSERT_UEQ(back.table_off, 1000);
    /* The blob length must match the table's place exactly. */
    ASSERT_EQ(cold_footer_parse(b, blob_len + 1, &back), -EILSEQ);
    ASSERT_EQ(cold_footer_parse(b, 10, &back), -EILSEQ);
    /* Any flipped byte breaks the magic or the sum. */
    for (size_t i = 0; i < COLD_FOOTER_LEN; i++) {
        uint8_t c[COLD_FOOTER_LEN];
        memcpy(c, b, sizeof(c));
        c[i] ^= 0x10;
        ASSERT_EQ(cold_footer_parse(c, blob_len, &back), -EILSEQ);
    }
    /* Well-summed but inconsistent fields. */
    struct cold_footer bad = f;
    bad.n_blocks = 4;
    cold_footer_format(&bad, b);
    ASSERT_EQ(cold_footer_parse(b, blob_len + COLD_ENTRY_LEN, &back), -EILSEQ);
    bad = f;
    bad.block_len = BLOCK + 1;
    cold_footer_format(&bad, b);
    ASSERT_EQ(cold_footer_parse(b, blob_len, &back), -EILSEQ);
    bad = f;
    bad.block_len = COLD_BLOCK_LEN_MAX * 2;
    cold_footer_format(&bad, b);
    ASSERT_EQ(cold_footer_parse(b, blob_len, &back), -EILSEQ);
    /* An empty object: no blocks, no entries. */
    struct cold_footer empty = {.block_len = BLOCK, .n_blocks = 0, .size = 0, .table_off = 0};
    cold_footer_format(&empty, b);
    ASSERT_EQ(cold_footer_parse(b, COLD_FOOTER_LEN, &back), 0);
    ASSERT_UEQ(back.n_blocks, 0);
}

static void
test_entries(void)
{
    struct cold_footer f = {
        .block_len = BLOCK, .n_blocks = 2, .size = BLOCK + 100, .table_off = 5000};
    struct cold_entry e = {.stored_off = 4000,
                           .stored_len = 100,
                           .kind = COLD_BLOCK_RAW,
                           .plain_sum = 42},
                      back;
    uint8_t b[COLD_ENTRY_LEN];
    cold_entry_format(&e, 1, b);
    ASSERT_EQ(cold_entry_parse(b, 1, &f, &back), 0);
    ASSERT_UEQ(back.stored_off, 4000);
    ASSERT_UEQ(back.stored_len, 100);
    ASSERT_UEQ(back.plain_sum, 42);
    /* The index seeds the sum: an entry read at the wrong place fails. */
    ASSERT_EQ(cold_entry_parse(b, 0, &f, &back), -EILSEQ);
    ASSERT_EQ(cold_entry_parse(b, 2, &f, &back), -EILSEQ);
    /* A raw block must be exactly its plain length (block 1 is 100 bytes). */
    e.stored_len = 99;
    cold_entry_format(&e, 1, b);
    ASSERT_EQ(cold_entry_parse(b, 1, &f, &back), -EILSEQ);
    /* A block past the data area. */
    e.stored_len = 100;
    e.stored_off = 4950;
    cold_entry_format(&e, 1, b);
    ASSERT_EQ(cold_entry_parse(b, 1, &f, &back), -EILSEQ);
    e.stored_off = UINT64_MAX - 10;
    cold_entry_format(&e, 1, b);
    ASSERT_EQ(cold_entry_parse(b, 1, &f, &back), -EILSEQ);
    /* An unknown kind; a zstd block larger than the bound. */
    e.stored_off = 0;
    e.kind = 7;
    cold_entry_format(&e, 1, b);
    ASSERT_EQ(cold_entry_parse(b, 1, &f, &back), -EILSEQ);
    e.kind = COLD_BLOCK_ZSTD;
    e.stored_len = (uint32_t)cold_block_bound(BLOCK) + 1;
    cold_entry_format(&e, 0, b);
    ASSERT_EQ(cold_entry_parse(b, 0, &f, &back), -EILSEQ);
    ASSERT_UEQ(cold_block_plain_len(&f, 0), BLOCK);
    ASSERT_UEQ(cold_block_plain_len(&f, 1), 100);
    ASSERT_UEQ(cold_block_plain_len(&f, 2), 0);
}

static void
test_blocks(void)
{
    struct cold_codec *c = cold_codec_create(3);
    size_t cap = cold_block_bound(BLOCK);
    uint8_t *text = malloc(BLOCK), *rnd = malloc(BLOCK), *stored = malloc(cap),
            *out = malloc(BLOCK);
    for (size_t i = 0; i < BLOCK; i++)
        text[i] = (uint8_t)("checkpoint layer weight "[i % 24]);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < BLOCK; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        rnd[i] = (uint8_t)x;
    }
    struct cold_entry e;
    ASSERT_EQ(cold_block_encode(c, text, BLOCK, stored, cap, &e), 0);
    ASSERT_UEQ(e.kind, COLD_BLOCK_ZSTD);
    ASSERT(e.stored_len < BLOCK / 10);
    ASSERT_EQ(cold_block_decode(c, &e, stored, out, BLOCK), 0);
    ASSERT_MEM_EQ(out, text, BLOCK);
    /* A wrong plain length or a flipped stored byte is refused. */
    ASSERT_EQ(cold_block_decode(c, &e, stored, out, BLOCK - 1), -EILSEQ);
    stored[e.stored_len / 2] ^= 1;
    ASSERT_EQ(cold_block_decode(c, &e, stored, out, BLOCK), -EILSEQ);

    ASSERT_EQ(cold_block_encode(c, rnd, BLOCK, stored, cap, &e), 0);
    ASSERT_UEQ(e.kind, COLD_BLOCK_RAW);
    ASSERT_UEQ(e.stored_len, BLOCK);
    ASSERT_EQ(cold_block_decode(c, &e, stored, out, BLOCK), 0);
    ASSERT_MEM_EQ(out, rnd, BLOCK);
    stored[5] ^= 1;
    ASSERT_EQ(cold_block_decode(c, &e, stored, out, BLOCK), -EILSEQ);
    free(text);
    free(rnd);
    free(stored);
    free(out);
    cold_codec_destroy(c);
    cold_codec_destroy(NULL);
}

int
main(void)
{
    test_footer();
    test_entries();
    test_blocks();
    return 0;
}
