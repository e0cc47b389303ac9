/*
 * reader.c: reads, read-ahead and scrubbing of extents.
 *
 * Reads use pread(2) on the volume's buffered read-only fd, bounded by the
 * extent's logical length (padding is never returned). Scrubbing re-reads
 * every STORAGE_BLOCK_LEN block and compares its XXH64 with the sums the
 * index kept (layout in extent_format.h), counting every mismatch.
 */
#define _GNU_SOURCE
#include "storage/storage_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

/* Reads exactly 'len' bytes at 'off' of 'v' (a short file is corruption).
 * Returns 0 or -errno. */
static int
volume_pread(struct storage *st, struct storage__volume *v, uint64_t off, void *buf, size_t len)
{
    uint8_t *p = buf;
    if (storage__fault_hit(st, STORAGE_FAULT_READ))
        return -EIO;
    while (len > 0) {
        ssize_t n = pread(v->rfd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return CORRUPT_BKPT("volume shorter than an extent");
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

ssize_t
storage_read(struct storage *st, const struct storage_extent *e, uint64_t off, void *buf,
             size_t len)
{
    int err = storage__extent_check(st, e);
    if (err < 0)
        return err;
    if (off >= e->len)
        return 0;
    size_t n = (size_t)MIN((uint64_t)len, e->len - off);
    if (n > SSIZE_MAX)
        n = SSIZE_MAX;
    err = volume_pread(st, storage__volume_get(st, e->volume), e->offset + off, buf, n);
    return err < 0 ? err : (ssize_t)n;
}

void
storage_readahead(struct storage *st, const struct storage_extent *e, uint64_t off, uint64_t len)
{
    struct storage__volume *v = storage__volume_get(st, e->volume);
    if (!v || off >= e->len)
        return;
    len = MIN(len, e->len - off);
    posix_fadvise(v->rfd, (off_t)(e->offset + off), (off_t)len, POSIX_FADV_WILLNEED);
}

size_t
storage_sums_len(const struct storage_extent *e, size_t n)
{
    size_t blocks = 0;
    for (size_t i = 0; i < n; i++)
        blocks += (size_t)((e[i].len + STORAGE_BLOCK_LEN - 1) / STORAGE_BLOCK_LEN);
    return blocks * STORAGE_SUM_LEN;
}

long
storage_verify(struct storage *st, const struct storage_extent *e, size_t n, const uint8_t *sums,
               size_t sums_len)
{
    long bad = 0;
    uint8_t *block = NULL;
    if (sums_len != storage_sums_len(e, n))
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (storage__extent_check(st, &e[i]) < 0)
            return -EIO;
    }
    block = xmalloc(STORAGE_BLOCK_LEN);
    for (size_t i = 0; i < n; i++) {
        struct storage__volume *v = storage__volume_get(st, e[i].volume);
        for (uint64_t pos = 0; pos < e[i].len; pos += STORAGE_BLOCK_LEN) {
            size_t len = (size_t)MIN((uint64_t)STORAGE_BLOCK_LEN, e[i].len - pos);
            int err = volume_pread(st, v, e[i].offset + pos, block, len);
            if (err < 0) {
                bad = err;
                goto done;
            }
            uint64_t want = 0;
            for (int k = 0; k < STORAGE_SUM_LEN; k++)
                want |= (uint64_t)sums[k] << (8 * k);
            sums += STORAGE_SUM_LEN;
            if (XXH64(block, len, STORAGE_SUM_SEED) != want) {
                CORRUPT_BKPT("block checksum mismatch");
                bad++;
            }
        }
    }
done:
    free(block);
    return bad;
}
