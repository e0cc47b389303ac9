/*
 * md5_mb.c: multi-buffer MD5. Up to AUTH_MD5_MB_LANES independent streams
 * are hashed together: MD5 is sequential within a stream but not across
 * streams, so the AVX2 kernel runs the 64 MD5 steps once for 8 lanes, each
 * lane one stream's 64-byte block (8 x 32-bit words per register). Lanes
 * without pending blocks read a zero block and keep their state (blend).
 * The scalar code (portable C) serves CPUs without AVX2, runs with too few
 * busy lanes to pay for the vector kernel, and the final padding blocks.
 * Invariant: st[][lane] is the MD5 state after len[lane] - 64 * nblocks[lane]
 * bytes; the AVX2 code is compiled with target("avx2") only, so the rest
 * of the build needs no -mavx2, and it runs only when cpuid says AVX2.
 */
#include "config.h"

#include "auth/auth.h"

#include <errno.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MD5_MB_X86 1
#include <immintrin.h>
#endif

/* With AUTO, the vector kernel runs while at least this many lanes have
 * blocks pending; below, scalar code is faster per stream. */
#define MD5_MB_MIN_VECTOR_LANES 2

static const uint32_t md5_iv[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};

/*
 * The 64 steps of MD5 (RFC 1321): STEP(round function, registers in
 * rotation, message word, constant, rotation). One list for both kernels.
 */
/* clang-format off */
#define MD5_STEPS                                                                                   \
    STEP(F, a, b, c, d,  0, 0xd76aa478,  7) STEP(F, d, a, b, c,  1, 0xe8c7b756, 12)                 \
    STEP(F, c, d, a, b,  2, 0x242070db, 17) STEP(F, b, c, d, a,  3, 0xc1bdceee, 22)                 \
    STEP(F, a, b, c, d,  4, 0xf57c0faf,  7) STEP(F, d, a, b, c,  5, 0x4787c62a, 12)                 \
    STEP(F, c, d, a, b,  6, 0xa8304613, 17) STEP(F, b, c, d, a,  7, 0xfd469501, 22)                 \
    STEP(F, a, b, c, d,  8, 0x698098d8,  7) STEP(F, d, a, b, c,  9, 0x8b44f7af, 12)                 \
    STEP(F, c, d, a, b, 10, 0xffff5bb1, 17) STEP(F, b, c, d, a, 11, 0x895cd7be, 22)                 \
    STEP(F, a, b, c, d, 12, 0x6b901122,  7) STEP(F, d, a, b, c, 13, 0xfd987193, 12)                 \
    STEP(F, c, d, a, b, 14, 0xa679438e, 17) STEP(F, b, c, d, a, 15, 0x49b40821, 22)                 \
    STEP(G, a, b, c, d,  1, 0xf61e2562,  5) STEP(G, d, a, b, c,  6, 0xc040b340,  9)                 \
    STEP(G, c, d, a, b, 11, 0x265e5a51, 14) STEP(G, b, c, d, a,  0, 0xe9b6c7aa, 20)                 \
    STEP(G, a, b, c, d,  5, 0xd62f105d,  5) STEP(G, d, a, b, c, 10, 0x02441453,  9)                 \
    STEP(G, c, d, a, b, 15, 0xd8a1e681, 14) STEP(G, b, c, d, a,  4, 0xe7d3fbc8, 20)                 \
    STEP(G, a, b, c, d,  9, 0x21e1cde6,  5) STEP(G, d, a, b, c, 14, 0xc33707d6,  9)                 \
    STEP(G, c, d, a, b,  3, 0xf4d50d87, 14) STEP(G, b, c, d, a,  8, 0x455a14ed, 20)                 \
    STEP(G, a, b, c, d, 13, 0xa9e3e905,  5) STEP(G, d, a, b, c,  2, 0xfcefa3f8,  9)                 \
    STEP(G, c, d, a, b,  7, 0x676f02d9, 14) STEP(G, b, c, d, a, 12, 0x8d2a4c8a, 20)                 \
    STEP(H, a, b, c, d,  5, 0xfffa3942,  4) STEP(H, d, a, b, c,  8, 0x8771f681, 11)                 \
    STEP(H, c, d, a, b, 11, 0x6d9d6122, 16) STEP(H, b, c, d, a, 14, 0xfde5380c, 23)                 \
    STEP(H, a, b, c, d,  1, 0xa4beea44,  4) STEP(H, d, a, b, c,  4, 0x4bdecfa9, 11)                 \
    STEP(H, c, d, a, b,  7, 0xf6bb4b60, 16) STEP(H, b, c, d, a, 10, 0xbebfbc70, 23)                 \
    STEP(H, a, b, c, d, 13, 0x289b7ec6,  4) STEP(H, d, a, b, c,  0, 0xeaa127fa, 11)                 \
    STEP(H, c, d, a, b,  3, 0xd4ef3085, 16) STEP(H, b, c, d, a,  6, 0x04881d05, 23)                 \
    STEP(H, a, b, c, d,  9, 0xd9d4d039,  4) STEP(H, d, a, b, c, 12, 0xe6db99e5, 11)                 \
    STEP(H, c, d, a, b, 15, 0x1fa27cf8, 16) STEP(H, b, c, d, a,  2, 0xc4ac5665, 23)                 \
    STEP(I, a, b, c, d,  0, 0xf4292244,  6) STEP(I, d, a, b, c,  7, 0x432aff97, 10)                 \
    STEP(I, c, d, a, b, 14, 0xab9423a7, 15) STEP(I, b, c, d, a,  5, 0xfc93a039, 21)                 \
    STEP(I, a, b, c, d, 12, 0x655b59c3,  6) STEP(I, d, a, b, c,  3, 0x8f0ccc92, 10)                 \
    STEP(I, c, d, a, b, 10, 0xffeff47d, 15) STEP(I, b, c, d, a,  1, 0x85845dd1, 21)                 \
    STEP(I, a, b, c, d,  8, 0x6fa87e4f,  6) STEP(I, d, a, b, c, 15, 0xfe2ce6e0, 10)                 \
    STEP(I, c, d, a, b,  6, 0xa3014314, 15) STEP(I, b, c, d, a, 13, 0x4e0811a1, 21)                 \
    STEP(I, a, b, c, d,  4, 0xf7537e82,  6) STEP(I, d, a, b, c, 11, 0xbd3af235, 10)                 \
    STEP(I, c, d, a, b,  2, 0x2ad7d2bb, 15) STEP(I, b, c, d, a,  9, 0xeb86d391, 21)
/* clang-format on */

/* ------------------------------------------------------------------------ */
/* Scalar kernel                                                             */
/* ------------------------------------------------------------------------ */

static inline uint32_t
load_le32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

#define S_F(b, c, d) ((d) ^ ((b) & ((c) ^ (d))))
#define S_G(b, c, d) ((c) ^ ((d) & ((b) ^ (c))))
#define S_H(b, c, d) ((b) ^ (c) ^ (d))
#define S_I(b, c, d) ((c) ^ ((b) | ~(d)))

/* Hashes 'n' blocks at 'p' into the state s[0..3] (A, B, C, D). */
static void
md5_blocks_scalar(uint32_t s[4], const unsigned char *p, size_t n)
{
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3];
    while (n--) {
        uint32_t m[16];
        uint32_t a0 = a, b0 = b, c0 = c, d0 = d;
        for (int i = 0; i < 16; i++)
            m[i] = load_le32(p + 4 * i);
#define STEP(f, a, b, c, d, i, k, r)                                                               \
    a += S_##f(b, c, d) + m[i] + k##u;                                                             \
    a = ((a << r) | (a >> (32 - r))) + b;
        MD5_STEPS
#undef STEP
        a += a0;
        b += b0;
        c += c0;
        d += d0;
        p += 64;
    }
    s[0] = a;
    s[1] = b;
    s[2] = c;
    s[3] = d;
}

/* Hashes 'n' blocks of 'lane' with the scalar kernel. */
static void
lane_blocks_scalar(struct auth_md5_mb *ctx, unsigned lane, const unsigned char *p, size_t n)
{
    uint32_t s[4];
    for (int i = 0; i < 4; i++)
        s[i] = ctx->st[i][lane];
    md5_blocks_scalar(s, p, n);
    for (int i = 0; i < 4; i++)
        ctx->st[i][lane] = s[i];
}

/* ------------------------------------------------------------------------ */
/* AVX2 kernel: 8 lanes                                                      */
/* ------------------------------------------------------------------------ */

#ifdef MD5_MB_X86
/* Read by lanes that have nothing pending (their result is discarded). */
static const unsigned char zero_block[64];

#define V_ADD(x, y) _mm256_add_epi32(x, y)
#define V_XOR(x, y) _mm256_xor_si256(x, y)
#define V_F(b, c, d) V_XOR(d, _mm256_and_si256(b, V_XOR(c, d)))
#define V_G(b, c, d) V_XOR(c, _mm256_and_si256(d, V_XOR(b, c)))
#define V_H(b, c, d) V_XOR(V_XOR(b, c), d)
#define V_I(b, c, d) V_XOR(c, _mm256_or_si256(b, V_XOR(d, ones)))

/*
 * Transposes 8 rows (one per lane, 8 words each) into 8 columns: out[j]
 * holds word j of lanes 0..7.
 */
#define TRANSPOSE8(r, out)                                                                         \
    do {                                                                                           \
        __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);    \
        __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);    \
        __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);    \
        __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);    \
        __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);            \
        __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);            \
        __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);            \
        __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);            \
        out[0] = _mm256_permute2x128_si256(u0, u4, 0x20);                                          \
        out[1] = _mm256_permute2x128_si256(u1, u5, 0x20);                                          \
        out[2] = _mm256_permute2x128_si256(u2, u6, 0x20);                                          \
        out[3] = _mm256_permute2x128_si256(u3, u7, 0x20);                                          \
        out[4] = _mm256_permute2x128_si256(u0, u4, 0x31);                                          \
        out[5] = _mm256_permute2x128_si256(u1, u5, 0x31);                                          \
        out[6] = _mm256_permute2x128_si256(u2, u6, 0x31);                                          \
        out[7] = _mm256_permute2x128_si256(u3, u7, 0x31);                                          \
    } while (0)

/*
 * Hashes 'n' blocks of every lane whose bit is set in 'active' (lane i
 * reads p[i], p[i] + 64, ...); the other lanes keep their state.
 */
__attribute__((target("avx2"))) static void
md5_blocks_avx2(struct auth_md5_mb *ctx, const unsigned char *const p[AUTH_MD5_MB_LANES],
                unsigned active, size_t n)
{
    const unsigned char *q[AUTH_MD5_MB_LANES];
    size_t step[AUTH_MD5_MB_LANES];
    int32_t keep_bits[AUTH_MD5_MB_LANES];
    const __m256i ones = _mm256_set1_epi32(-1);
    for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++) {
        bool on = (active >> i) & 1;
        q[i] = on ? p[i] : zero_block;
        step[i] = on ? 64 : 0;
        keep_bits[i] = on ? -1 : 0;
    }
    const __m256i keep = _mm256_loadu_si256((const __m256i *)keep_bits);
    const __m256i a_in = _mm256_loadu_si256((const __m256i *)ctx->st[0]);
    const __m256i b_in = _mm256_loadu_si256((const __m256i *)ctx->st[1]);
    const __m256i c_in = _mm256_loadu_si256((const __m256i *)ctx->st[2]);
    const __m256i d_in = _mm256_loadu_si256((const __m256i *)ctx->st[3]);
    __m256i a = a_in, b = b_in, c = c_in, d = d_in;

    while (n--) {
        __m256i r[8], m[16];
        __m256i a0 = a, b0 = b, c0 = c, d0 = d;
        for (int i = 0; i < 8; i++)
            r[i] = _mm256_loadu_si256((const __m256i *)q[i]);
        TRANSPOSE8(r, m);
        for (int i = 0; i < 8; i++)
            r[i] = _mm256_loadu_si256((const __m256i *)(q[i] + 32));
        TRANSPOSE8(r, (m + 8));
#define STEP(f, a, b, c, d, i, k, r)                                                               \
    a = V_ADD(V_ADD(a, V_ADD(m[i], _mm256_set1_epi32((int)k##u))), V_##f(b, c, d));                \
    a = V_ADD(b, _mm256_or_si256(_mm256_slli_epi32(a, r), _mm256_srli_epi32(a, 32 - r)));
        MD5_STEPS
#undef STEP
        a = V_ADD(a, a0);
        b = V_ADD(b, b0);
        c = V_ADD(c, c0);
        d = V_ADD(d, d0);
        for (int i = 0; i < 8; i++)
            q[i] += step[i];
    }
    _mm256_storeu_si256((__m256i *)ctx->st[0], _mm256_blendv_epi8(a_in, a, keep));
    _mm256_storeu_si256((__m256i *)ctx->st[1], _mm256_blendv_epi8(b_in, b, keep));
    _mm256_storeu_si256((__m256i *)ctx->st[2], _mm256_blendv_epi8(c_in, c, keep));
    _mm256_storeu_si256((__m256i *)ctx->st[3], _mm256_blendv_epi8(d_in, d, keep));
}
#endif

/* ------------------------------------------------------------------------ */
/* The interface                                                             */
/* ------------------------------------------------------------------------ */

bool
auth_md5_mb_have_avx2(void)
{
#ifdef MD5_MB_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

void
auth_md5_mb_init(struct auth_md5_mb *ctx)
{
    for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++)
        auth_md5_mb_reset(ctx, i);
    ctx->impl = AUTH_MD5_MB_AUTO;
}

int
auth_md5_mb_set_impl(struct auth_md5_mb *ctx, enum auth_md5_mb_impl impl)
{
    if (impl == AUTH_MD5_MB_AVX2 && !auth_md5_mb_have_avx2())
        return -ENOTSUP;
    ctx->impl = impl;
    return 0;
}

void
auth_md5_mb_reset(struct auth_md5_mb *ctx, unsigned lane)
{
    if (lane >= AUTH_MD5_MB_LANES)
        return;
    for (int i = 0; i < 4; i++)
        ctx->st[i][lane] = md5_iv[i];
    ctx->ptr[lane] = NULL;
    ctx->nblocks[lane] = 0;
    ctx->len[lane] = 0;
}

int
auth_md5_mb_submit(struct auth_md5_mb *ctx, unsigned lane, const void *data, size_t len)
{
    if (lane >= AUTH_MD5_MB_LANES || len % 64 != 0)
        return -EINVAL;
    if (ctx->nblocks[lane] != 0)
        return -EBUSY;
    if (len == 0)
        return 0;
    ctx->ptr[lane] = data;
    ctx->nblocks[lane] = len / 64;
    ctx->len[lane] += len;
    return 0;
}

void
auth_md5_mb_run(struct auth_md5_mb *ctx)
{
#ifdef MD5_MB_X86
    unsigned min_lanes = AUTH_MD5_MB_LANES + 1; /* never */
    if (ctx->impl == AUTH_MD5_MB_AVX2)
        min_lanes = 1;
    else if (ctx->impl == AUTH_MD5_MB_AUTO && auth_md5_mb_have_avx2())
        min_lanes = MD5_MB_MIN_VECTOR_LANES;
    for (;;) {
        unsigned active = 0, count = 0;
        size_t n = SIZE_MAX;
        for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++) {
            if (ctx->nblocks[i] == 0)
                continue;
            active |= 1u << i;
            count++;
            n = MIN(n, ctx->nblocks[i]);
        }
        if (count == 0 || count < min_lanes)
            break;
        /* Every busy lane advances by the shortest one's blocks; then at
         * least that lane leaves and the rest go round again. */
        md5_blocks_avx2(ctx, ctx->ptr, active, n);
        for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++) {
            if (!((active >> i) & 1))
                continue;
            ctx->ptr[i] += 64 * n;
            ctx->nblocks[i] -= n;
        }
    }
#endif
    for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++) {
        if (ctx->nblocks[i] == 0)
            continue;
        lane_blocks_scalar(ctx, i, ctx->ptr[i], ctx->nblocks[i]);
        ctx->nblocks[i] = 0;
    }
    for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++)
        ctx->ptr[i] = NULL;
}

void
auth_md5_mb_final(struct auth_md5_mb *ctx, unsigned lane, const void *tail, size_t tail_len,
                  uint8_t out[16])
{
    const unsigned char *t = tail;
    unsigned char last[128];
    if (lane >= AUTH_MD5_MB_LANES)
        return;
    if (ctx->nblocks[lane] != 0)
        auth_md5_mb_run(ctx);
    uint64_t bits = (ctx->len[lane] + tail_len) * 8;
    size_t whole = tail_len / 64;
    if (whole > 0)
        lane_blocks_scalar(ctx, lane, t, whole);
    size_t rest = tail_len % 64;
    size_t padded = rest < 56 ? 64 : 128;
    memset(last, 0, sizeof(last));
    if (rest > 0)
        memcpy(last, t + 64 * whole, rest);
    last[rest] = 0x80;
    for (int i = 0; i < 8; i++)
        last[padded - 8 + i] = (unsigned char)(bits >> (8 * i));
    lane_blocks_scalar(ctx, lane, last, padded / 64);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            out[4 * i + k] = (unsigned char)(ctx->st[i][lane] >> (8 * k));
    auth_md5_mb_reset(ctx, lane);
}
