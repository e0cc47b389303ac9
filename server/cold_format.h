/*
 * cold_format.h: the on-disk format of an object in the cold tier
 * (cold_format.c). This comment is the format's one authoritative
 * description.
 *
 * A cold object is one blob, written front to back into extents of the
 * cold volume set (storage/ writes it like any object, so storage's own
 * per-1 MiB xxh64 sums cover every stored byte too). Its logical layout:
 *
 *   [block 0][block 1]...[block n-1][entry 0]...[entry n-1][footer]
 *
 * The object's bytes are cut into blocks of 'block_len' plain bytes (the
 * last one shorter). Each is stored as one zstd frame, or raw when zstd
 * would not make it smaller. Entries (COLD_ENTRY_LEN bytes each, little
 * endian) say where each block is:
 *
 *   0  u64 stored_off   offset of the stored block in the blob
 *   8  u32 stored_len   its stored length
 *   12 u32 kind         COLD_BLOCK_RAW or COLD_BLOCK_ZSTD
 *   16 u64 plain_sum    xxh64 (seed 0) of the block's plain bytes
 *   24 u64 entry_sum    xxh64 of bytes 0..24 with the block index as seed
 *
 * so a Range read loads only the entries and blocks it touches and checks
 * each. The footer (COLD_FOOTER_LEN bytes) ends the blob:
 *
 *   0  "SSCOLD01"       magic
 *   8  u32 block_len    plain bytes per block (4 KiB..16 MiB, power of 2)
 *   12 u32 n_blocks     ceil(size / block_len)
 *   16 u64 size         the object's plain size
 *   24 u64 table_off    offset of entry 0; table_off + n_blocks *
 *                       COLD_ENTRY_LEN + COLD_FOOTER_LEN = blob length
 *   32 u64 reserved     0
 *   40 u64 footer_sum   xxh64 (seed 0) of bytes 0..40
 *
 * Everything read from disk is untrusted: parsing checks every field
 * against the blob length (fuzzed by tests/fuzz/fuzz_cold_format.c).
 */
#ifndef SHARD_SERVER_COLD_FORMAT_H
#define SHARD_SERVER_COLD_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define COLD_FOOTER_LEN 48
#define COLD_ENTRY_LEN 32
#define COLD_BLOCK_LEN_MIN 4096u
#define COLD_BLOCK_LEN_MAX (16u << 20)
#define COLD_BLOCK_RAW 0u
#define COLD_BLOCK_ZSTD 1u

struct cold_footer {
    uint32_t block_len;
    uint32_t n_blocks;
    uint64_t size;
    uint64_t table_off;
};

struct cold_entry {
    uint64_t stored_off;
    uint32_t stored_len;
    uint32_t kind;
    uint64_t plain_sum;
};

/* Formats 'f' into 'out'. */
void cold_footer_format(const struct cold_footer *f, uint8_t out[COLD_FOOTER_LEN]);
/* Parses the footer of a blob of 'blob_len' bytes. Returns 0 and fills
 * '*out', or -EILSEQ (bad magic, sum or an inconsistent field). */
int cold_footer_parse(const uint8_t in[COLD_FOOTER_LEN], uint64_t blob_len,
                      struct cold_footer *out);
/* Formats entry 'e' of block 'index'. */
void cold_entry_format(const struct cold_entry *e, uint32_t index, uint8_t out[COLD_ENTRY_LEN]);
/* Parses entry 'index' of the blob described by 'f'. Returns 0 and fills
 * '*out', or -EILSEQ (bad sum, kind, or a block outside the data area or
 * larger than its plain length allows). */
int cold_entry_parse(const uint8_t in[COLD_ENTRY_LEN], uint32_t index, const struct cold_footer *f,
                     struct cold_entry *out);
/* The plain length of block 'index' of 'f' (0 past the end). */
uint32_t cold_block_plain_len(const struct cold_footer *f, uint32_t index);
/* The largest stored block for 'block_len' plain bytes. */
size_t cold_block_bound(uint32_t block_len);

/* A compressor or decompressor (zstd contexts, kept out of this header).
 * One per thread at a time. */
struct cold_codec;
/* Creates a codec compressing at zstd 'level' (1..19). Never NULL. */
struct cold_codec *cold_codec_create(int level);
/* Frees it; NULL is a no-op. */
void cold_codec_destroy(struct cold_codec *c);
/*
 * Encodes 'len' plain bytes (len <= block_len) into 'out' of 'cap' >=
 * cold_block_bound(len) bytes and fills '*e' (stored_len, kind,
 * plain_sum; stored_off is the caller's). Incompressible data is stored
 * raw. Returns 0 or -EIO (zstd failed).
 */
int cold_block_encode(struct cold_codec *c, const void *plain, size_t len, void *out, size_t cap,
                      struct cold_entry *e);
/*
 * Decodes stored block 'e' ('stored', e->stored_len bytes) into 'out',
 * which must hold 'plain_len' bytes (cold_block_plain_len), and checks
 * the plain sum. Returns 0 or -EILSEQ (corrupt: wrong length or sum).
 */
int cold_block_decode(struct cold_codec *c, const struct cold_entry *e, const void *stored,
                      void *out, size_t plain_len);

#endif
