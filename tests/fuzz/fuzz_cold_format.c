/*
 * fuzz_cold_format.c: libFuzzer target for server/cold_format.c, the cold
 * tier's blob format (read back from disk, so untrusted).
 *
 * Input: a whole blob. The footer is parsed from its last COLD_FOOTER_LEN
 * bytes; when it parses, every entry is parsed and every block that
 * parses is decoded. Properties checked beyond "no crash": a parsed
 * footer places the table exactly at the end of the blob; a parsed entry
 * lies inside the data area and a raw one is its block's plain length; a
 * block that decodes has the plain sum of its entry (checked by decode)
 * and its plain length.
 */
#include "server/cold_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_cold_fail(const char *what)
{
    fprintf(stderr, "fuzz_cold_format: %s\n", what);
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cold_footer f;
    if (size < COLD_FOOTER_LEN || cold_footer_parse(data + size - COLD_FOOTER_LEN, size, &f) != 0)
        return 0;
    if (f.table_off + (uint64_t)f.n_blocks * COLD_ENTRY_LEN + COLD_FOOTER_LEN != size)
        fuzz_cold_fail("table not at the end of the blob");
    struct cold_codec *c = cold_codec_create(1);
    uint8_t *out = malloc(f.block_len);
    for (uint32_t i = 0; i < f.n_blocks && i < 64; i++) {
        struct cold_entry e;
        if (cold_entry_parse(data + f.table_off + (uint64_t)i * COLD_ENTRY_LEN, i, &f, &e) != 0)
            continue;
        uint32_t plain = cold_block_plain_len(&f, i);
        if (e.stored_off + e.stored_len > f.table_off)
            fuzz_cold_fail("entry outside the data area");
        if (e.kind == COLD_BLOCK_RAW && e.stored_len != plain)
            fuzz_cold_fail("raw block of the wrong length");
        memset(out, 0, f.block_len);
        (void)cold_block_decode(c, &e, data + e.stored_off, out, plain);
    }
    free(out);
    cold_codec_destroy(c);
    return 0;
}
