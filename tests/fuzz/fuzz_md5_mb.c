/*
 * fuzz_md5_mb.c: libFuzzer target for auth/md5_mb.c, differential against
 * OpenSSL's MD5.
 *
 * Input: byte 0 gives the number of lanes (1 + byte0 % 8) and seeds the
 * schedule; the next 'lanes' bytes give each lane's length (byte * 13,
 * capped by what is left; the last lane takes the rest); the remainder is
 * the data, cut into consecutive, unaligned streams. Each stream is fed in
 * whole blocks of schedule-chosen counts (lanes sit idle in some runs and
 * finish at different times, the tail going to final), with the scalar,
 * the AVX2 (when the CPU has it) and the automatic implementation. The
 * property: every digest equals OpenSSL's MD5 of the stream's bytes.
 */
#include "auth/auth.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reports a broken property and aborts, so libFuzzer keeps the input. */
static void
fuzz_md5_mb_fail(int impl, unsigned lane, size_t len)
{
    fprintf(stderr, "fuzz_md5_mb: impl %d lane %u (%zu bytes) differs from OpenSSL\n", impl, lane,
            len);
    abort();
}

/* Hashes the 'lanes' streams with 'impl' on a schedule drawn from 'seed'. */
static void
run_impl(enum auth_md5_mb_impl impl, unsigned lanes, const uint8_t *const start[],
         const size_t len[], uint32_t seed)
{
    struct auth_md5_mb ctx;
    size_t pos[AUTH_MD5_MB_LANES] = {0};
    bool open[AUTH_MD5_MB_LANES] = {false};
    unsigned left = lanes;
    auth_md5_mb_init(&ctx);
    if (auth_md5_mb_set_impl(&ctx, impl) != 0)
        return;
    for (unsigned i = 0; i < lanes; i++)
        open[i] = true;
    while (left > 0) {
        for (unsigned i = 0; i < lanes; i++) {
            seed = seed * 1103515245u + 12345u;
            size_t whole = (len[i] - pos[i]) / 64;
            if (!open[i] || whole == 0 || (seed >> 16) % 4 == 0)
                continue;
            size_t n = 1 + (size_t)((seed >> 20) % whole);
            if (auth_md5_mb_submit(&ctx, i, start[i] + pos[i], 64 * n) != 0)
                abort();
            pos[i] += 64 * n;
        }
        auth_md5_mb_run(&ctx);
        for (unsigned i = 0; i < lanes; i++) {
            seed = seed * 1103515245u + 12345u;
            if (!open[i] || (len[i] - pos[i] >= 64 && (seed >> 16) % 3 != 0))
                continue;
            uint8_t got[16], want[16];
            unsigned int n = 0;
            auth_md5_mb_final(&ctx, i, start[i] + pos[i], len[i] - pos[i], got);
            if (EVP_Digest(start[i], len[i], want, &n, EVP_md5(), NULL) != 1 || n != 16)
                abort();
            if (memcmp(got, want, 16) != 0)
                fuzz_md5_mb_fail((int)impl, i, len[i]);
            open[i] = false;
            left--;
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum auth_md5_mb_impl impls[] = {AUTH_MD5_MB_SCALAR, AUTH_MD5_MB_AVX2,
                                                  AUTH_MD5_MB_AUTO};
    const uint8_t *start[AUTH_MD5_MB_LANES];
    size_t len[AUTH_MD5_MB_LANES];
    if (size < 1)
        return 0;
    unsigned lanes = 1 + data[0] % AUTH_MD5_MB_LANES;
    if (size < 1 + (size_t)lanes)
        return 0;
    const uint8_t *p = data + 1 + lanes, *end = data + size;
    for (unsigned i = 0; i < lanes; i++) {
        size_t avail = (size_t)(end - p);
        len[i] = i + 1 == lanes ? avail : MIN(avail, (size_t)data[1 + i] * 13);
        start[i] = p;
        p += len[i];
    }
    for (size_t k = 0; k < ARRAY_LEN(impls); k++)
        run_impl(impls[k], lanes, start, len, (uint32_t)size * 2654435761u ^ data[0]);
    return 0;
}
