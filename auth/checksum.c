/*
 * checksum.c: the payload checksums S3 knows (CRC32, CRC32C, CRC64NVME,
 * SHA1, SHA256, MD5) behind one incremental interface, plus CRC combination
 * for FULL_OBJECT multipart checksums.
 *
 * All three CRCs are reflected with init and xorout all ones. CRC32 and
 * CRC32C are ISA-L's (crc32_gzip_refl, crc32_iscsi: PCLMULQDQ folding,
 * chosen by ISA-L at run time). CRC64NVME is ISA-L's crc64_rocksoft_refl
 * where the library has it (2.31 on); otherwise our own PCLMULQDQ folding
 * when the CPU has it, and slice-by-8 tables for short inputs and other
 * CPUs (tables and constants built once, pthread_once, read-only after). 'crc' in struct
 * auth_checksum is always the finished CRC of the bytes so far (0 at the
 * start), which is what ISA-L's refl functions take and return. Digests of
 * CRCs are big-endian bytes, as S3 base64-encodes them.
 */
#include "config.h"

#include "auth/auth_int.h"

#include <openssl/evp.h>

#include <isa-l/crc.h>
#include <isa-l/crc64.h>
#include <limits.h>
#include <pthread.h>

#define POLY_CRC32 0xedb88320u
#define POLY_CRC32C 0x82f63b78u
#define POLY_CRC64NVME 0x9a6c9329ac4bc9b5ull

#ifndef HAVE_CRC64_ROCKSOFT_REFL
static uint64_t crc64_table[8][256];
/* Folding constants of the PCLMULQDQ path: fold_k[i] moves a 128-bit
 * block forward by 128 * (i + 1) bits, {x^(D+63) mod P, x^(D-1) mod P}. */
static uint64_t crc64_fold_k[4][2];
static bool has_pclmul;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC64_PCLMUL 1
#include <immintrin.h>
#endif
#endif

/* ------------------------------------------------------------------------ */
/* GF(2) arithmetic: x^n mod P (the method of zlib 1.2.12+)                  */
/* ------------------------------------------------------------------------ */

/* a * b mod P for reflected 'width'-bit polynomials 'poly'. */
static uint64_t
multmodp(uint64_t a, uint64_t b, uint64_t poly, int width)
{
    uint64_t m = 1ull << (width - 1), p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ poly : b >> 1;
    }
    return p;
}

/* x^n mod P. */
static uint64_t
xbitsmodp(uint64_t n, uint64_t poly, int width)
{
    uint64_t p = 1ull << (width - 1);  /* x^0 */
    uint64_t sq = 1ull << (width - 2); /* x^1 */
    while (n) {
        if (n & 1)
            p = multmodp(sq, p, poly, width);
        n >>= 1;
        if (n)
            sq = multmodp(sq, sq, poly, width);
    }
    return p;
}

/* x^(8n) mod P: the operator that appends 'n' zero bytes to a register. */
static uint64_t
xbytesmodp(uint64_t n, uint64_t poly, int width)
{
    return xbitsmodp(8 * n, poly, width);
}

/* 'crc' is a finished CRC32C; returns the finished CRC32C with 'len' more
 * bytes (crc32_iscsi takes an int length and a raw register). */
static uint32_t
crc32c_update(uint32_t crc, const unsigned char *p, size_t len)
{
    uint32_t reg = ~crc;
    while (len > 0) {
        size_t n = MIN(len, (size_t)INT_MAX & ~(size_t)63);
        /* ISA-L's prototype lacks const; it does not write the buffer. */
        reg = crc32_iscsi((unsigned char *)(uintptr_t)p, (int)n, reg);
        p += n;
        len -= n;
    }
    return ~reg;
}

#ifdef HAVE_CRC64_ROCKSOFT_REFL
static uint64_t
crc64nvme_update(uint64_t crc, const unsigned char *p, size_t len)
{
    return crc64_rocksoft_refl(crc, p, len);
}
#else
static void
tables_build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint64_t d = i;
        for (int k = 0; k < 8; k++)
            d = (d & 1) ? (d >> 1) ^ POLY_CRC64NVME : d >> 1;
        crc64_table[0][i] = d;
    }
    for (int k = 1; k < 8; k++) {
        for (int i = 0; i < 256; i++) {
            uint64_t d = crc64_table[k - 1][i];
            crc64_table[k][i] = (d >> 8) ^ crc64_table[0][d & 0xff];
        }
    }
    for (int i = 0; i < 4; i++) {
        uint64_t dist = 128 * (uint64_t)(i + 1);
        crc64_fold_k[i][0] = xbitsmodp(dist + 63, POLY_CRC64NVME, 64);
        crc64_fold_k[i][1] = xbitsmodp(dist - 1, POLY_CRC64NVME, 64);
    }
#ifdef CRC64_PCLMUL
    __builtin_cpu_init();
    has_pclmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}

static inline uint64_t
load_le64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Slice-by-8 on the raw register 'crc'; returns the new raw register. */
static uint64_t
crc64_sw(uint64_t crc, const unsigned char *p, size_t len)
{
    const uint64_t(*t)[256] = crc64_table;
    while (len >= 8) {
        uint64_t v = load_le64(p) ^ crc;
        crc = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^ t[5][(v >> 16) & 0xff] ^
              t[4][(v >> 24) & 0xff] ^ t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff] ^
              t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
    return crc;
}

#ifdef CRC64_PCLMUL
/*
 * Carry-less folding (Intel's "Fast CRC computation for generic polynomials
 * using PCLMULQDQ", reflected form). A 16-byte block loaded little-endian
 * stands for L(x) x^64 + H(x); moving it D bits forward is L * x^(D+64) +
 * H * x^D, and as PCLMULQDQ of reflected operands yields the product times
 * x, the constants are x^(D+63) and x^(D-1) mod P. Four accumulators fold
 * by 512 bits to hide the multiplier's latency; the last block left is a
 * message whose CRC from a zero register is the answer, which slice-by-8
 * finishes with the tail bytes. 'crc' is the raw register, len >= 64.
 */
__attribute__((target("pclmul,sse4.1"))) static uint64_t
crc64_pclmul(uint64_t crc, const unsigned char *p, size_t len)
{
#define FOLD(x, k) _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11))
#define LOAD(q) _mm_loadu_si128((const __m128i *)(const void *)(q))
    const __m128i k1 = LOAD(crc64_fold_k[0]), k2 = LOAD(crc64_fold_k[1]);
    const __m128i k3 = LOAD(crc64_fold_k[2]), k4 = LOAD(crc64_fold_k[3]);
    __m128i x0 = _mm_xor_si128(LOAD(p), _mm_cvtsi64_si128((long long)crc));
    __m128i x1 = LOAD(p + 16), x2 = LOAD(p + 32), x3 = LOAD(p + 48);
    unsigned char last[16];
    p += 64;
    len -= 64;
    while (len >= 64) {
        x0 = _mm_xor_si128(FOLD(x0, k4), LOAD(p));
        x1 = _mm_xor_si128(FOLD(x1, k4), LOAD(p + 16));
        x2 = _mm_xor_si128(FOLD(x2, k4), LOAD(p + 32));
        x3 = _mm_xor_si128(FOLD(x3, k4), LOAD(p + 48));
        p += 64;
        len -= 64;
    }
    x0 = _mm_xor_si128(_mm_xor_si128(FOLD(x0, k3), FOLD(x1, k2)), _mm_xor_si128(FOLD(x2, k1), x3));
    while (len >= 16) {
        x0 = _mm_xor_si128(FOLD(x0, k1), LOAD(p));
        p += 16;
        len -= 16;
    }
#undef FOLD
#undef LOAD
    _mm_storeu_si128((__m128i *)(void *)last, x0);
    return crc64_sw(crc64_sw(0, last, 16), p, len);
}
#endif

/* On a finished CRC; returns the finished CRC. */
static uint64_t
crc64nvme_update(uint64_t crc, const unsigned char *p, size_t len)
{
    pthread_once(&tables_once, tables_build);
#ifdef CRC64_PCLMUL
    if (has_pclmul && len >= 64)
        return ~crc64_pclmul(~crc, p, len);
#endif
    return ~crc64_sw(~crc, p, len);
}
#endif

uint64_t
auth_checksum_crc_combine(enum auth_checksum_algo algo, uint64_t crc_a, uint64_t crc_b,
                          uint64_t len_b)
{
    uint64_t poly;
    int width;
    switch (algo) {
    case AUTH_CK_CRC32:
        poly = POLY_CRC32;
        width = 32;
        break;
    case AUTH_CK_CRC32C:
        poly = POLY_CRC32C;
        width = 32;
        break;
    case AUTH_CK_CRC64NVME:
        poly = POLY_CRC64NVME;
        width = 64;
        break;
    default:
        return 0;
    }
    if (width == 32) {
        crc_a &= 0xffffffffu;
        crc_b &= 0xffffffffu;
    }
    /* With init = xorout = all ones, the inversions cancel exactly as in
     * zlib's crc32_combine. */
    return multmodp(xbytesmodp(len_b, poly, width), crc_a, poly, width) ^ crc_b;
}

/* ------------------------------------------------------------------------ */
/* The incremental interface                                                 */
/* ------------------------------------------------------------------------ */

static const EVP_MD *
evp_md(enum auth_checksum_algo algo)
{
    switch (algo) {
    case AUTH_CK_SHA1:
        return EVP_sha1();
    case AUTH_CK_SHA256:
        return EVP_sha256();
    case AUTH_CK_MD5:
        return EVP_md5();
    default:
        return NULL;
    }
}

void
auth_checksum_init(struct auth_checksum *c, enum auth_checksum_algo algo)
{
    c->algo = algo;
    c->crc = 0;
    c->evp = NULL;
    const EVP_MD *md = evp_md(algo);
    if (md != NULL) {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        if (ctx == NULL || EVP_DigestInit_ex(ctx, md, NULL) != 1) {
            log_error("auth: cannot initialize %s", auth_checksum_name(algo));
            abort();
        }
        c->evp = ctx;
    }
}

void
auth_checksum_update(struct auth_checksum *c, const void *data, size_t len)
{
    const unsigned char *p = data;
    if (len == 0)
        return;
    switch (c->algo) {
    case AUTH_CK_CRC32:
        c->crc = crc32_gzip_refl((uint32_t)c->crc, p, len);
        break;
    case AUTH_CK_CRC32C:
        c->crc = crc32c_update((uint32_t)c->crc, p, len);
        break;
    case AUTH_CK_CRC64NVME:
        c->crc = crc64nvme_update(c->crc, p, len);
        break;
    case AUTH_CK_SHA1:
    case AUTH_CK_SHA256:
    case AUTH_CK_MD5:
        if (c->evp)
            EVP_DigestUpdate(c->evp, p, len);
        break;
    case AUTH_CK_NONE:
        break;
    }
}

size_t
auth_checksum_final(struct auth_checksum *c, uint8_t out[AUTH_CK_MAX_DIGEST])
{
    size_t n = auth_checksum_len(c->algo);
    uint64_t v = 0;
    switch (c->algo) {
    case AUTH_CK_CRC32:
    case AUTH_CK_CRC32C:
    case AUTH_CK_CRC64NVME:
        v = c->crc;
        break;
    case AUTH_CK_SHA1:
    case AUTH_CK_SHA256:
    case AUTH_CK_MD5: {
        unsigned int len = 0;
        if (c->evp == NULL || EVP_DigestFinal_ex(c->evp, out, &len) != 1)
            n = 0;
        auth_checksum_cleanup(c);
        return n;
    }
    case AUTH_CK_NONE:
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    return n;
}

void
auth_checksum_cleanup(struct auth_checksum *c)
{
    if (c == NULL)
        return;
    EVP_MD_CTX_free(c->evp);
    c->evp = NULL;
}

size_t
auth_checksum_len(enum auth_checksum_algo algo)
{
    switch (algo) {
    case AUTH_CK_CRC32:
    case AUTH_CK_CRC32C:
        return 4;
    case AUTH_CK_CRC64NVME:
        return 8;
    case AUTH_CK_SHA1:
        return 20;
    case AUTH_CK_SHA256:
        return 32;
    case AUTH_CK_MD5:
        return 16;
    case AUTH_CK_NONE:
        break;
    }
    return 0;
}

static const struct {
    enum auth_checksum_algo algo;
    const char *name;
    const char *header;
} algos[] = {
    {AUTH_CK_CRC32, "CRC32", "x-amz-checksum-crc32"},
    {AUTH_CK_CRC32C, "CRC32C", "x-amz-checksum-crc32c"},
    {AUTH_CK_CRC64NVME, "CRC64NVME", "x-amz-checksum-crc64nvme"},
    {AUTH_CK_SHA1, "SHA1", "x-amz-checksum-sha1"},
    {AUTH_CK_SHA256, "SHA256", "x-amz-checksum-sha256"},
    {AUTH_CK_MD5, "MD5", NULL},
};

const char *
auth_checksum_name(enum auth_checksum_algo algo)
{
    for (size_t i = 0; i < ARRAY_LEN(algos); i++)
        if (algos[i].algo == algo)
            return algos[i].name;
    return "NONE";
}

const char *
auth_checksum_header(enum auth_checksum_algo algo)
{
    for (size_t i = 0; i < ARRAY_LEN(algos); i++)
        if (algos[i].algo == algo)
            return algos[i].header;
    return NULL;
}

enum auth_checksum_algo
auth_checksum_from_name(struct slice name)
{
    for (size_t i = 0; i < ARRAY_LEN(algos); i++)
        if (slice_eq_nocase(name, algos[i].name))
            return algos[i].algo;
    return AUTH_CK_NONE;
}
