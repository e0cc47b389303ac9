/*
 * test_md5_mb.c: auth/md5_mb.c against the RFC 1321 test suite and against
 * OpenSSL's MD5 (EVP) on streams of random length (0 to 4 MiB) and
 * alignment, fed in random multiples of 64 bytes, in lanes of unequal
 * length that join and leave (a finished lane restarts with a new stream
 * while the others go on, and some lanes sit idle in a run). Each of the
 * scalar, AVX2 (when the CPU has it) and automatic paths is forced in turn.
 */
#include "config.h"

#include "auth/auth.h"
#include "tests/lib/test.h"

#include <errno.h>
#include <openssl/evp.h>

#define BUF_LEN ((size_t)8 << 20)
#define MAX_STREAM ((size_t)4 << 20)

static uint64_t rng = 88172645463325252ull;

static uint64_t
next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void
md5_ref(const void *p, size_t len, uint8_t out[16])
{
    unsigned int n = 0;
    ASSERT(EVP_Digest(p, len, out, &n, EVP_md5(), NULL) == 1);
    ASSERT_EQ(n, 16);
}

/* RFC 1321, appendix A.5, in every lane at once and in lane 3 alone. */
static void
check_rfc1321(enum auth_md5_mb_impl impl)
{
    static const struct {
        const char *in, *hex;
    } v[] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"12345678901234567890123456789012345678901234567890"
         "123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    struct auth_md5_mb ctx;
    uint8_t out[16];
    char hex[33];
    auth_md5_mb_init(&ctx);
    ASSERT_EQ(auth_md5_mb_set_impl(&ctx, impl), 0);
    for (size_t i = 0; i < ARRAY_LEN(v); i++) {
        size_t len = strlen(v[i].in), whole = len / 64 * 64;
        for (unsigned lane = 0; lane < AUTH_MD5_MB_LANES; lane++)
            ASSERT_EQ(auth_md5_mb_submit(&ctx, lane, v[i].in, whole), 0);
        auth_md5_mb_run(&ctx);
        for (unsigned lane = 0; lane < AUTH_MD5_MB_LANES; lane++) {
            auth_md5_mb_final(&ctx, lane, v[i].in + whole, len - whole, out);
            hex_encode(out, 16, hex);
            ASSERT_STR_EQ(hex, v[i].hex);
        }
        /* Whole message as the tail, nothing submitted. */
        auth_md5_mb_final(&ctx, 3, v[i].in, len, out);
        hex_encode(out, 16, hex);
        ASSERT_STR_EQ(hex, v[i].hex);
    }
}

struct stream {
    size_t off, len, pos; /* bytes of buf: [off, off + len), hashed up to pos */
    bool on;
};

static void
stream_start(struct stream *s)
{
    /* Mostly short streams, a quarter up to MAX_STREAM; any alignment. */
    size_t cap = next_rand() % 4 == 0 ? MAX_STREAM : 70000;
    s->len = (size_t)(next_rand() % (cap + 1));
    s->off = (size_t)(next_rand() % (BUF_LEN - s->len + 1));
    s->pos = 0;
    s->on = true;
}

/* 'streams' streams through the 8 lanes with 'impl'; returns the bytes hashed. */
static uint64_t
check_random(enum auth_md5_mb_impl impl, const unsigned char *buf, int streams)
{
    struct auth_md5_mb ctx;
    struct stream s[AUTH_MD5_MB_LANES];
    int started = 0, done = 0;
    uint64_t bytes = 0;
    auth_md5_mb_init(&ctx);
    ASSERT_EQ(auth_md5_mb_set_impl(&ctx, impl), 0);
    /* Lanes join one by one: lane i starts at round i. */
    for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++)
        s[i].on = false;
    for (int round = 0; done < streams; round++) {
        for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++) {
            if (!s[i].on && (int)i <= round && started < streams) {
                stream_start(&s[i]);
                started++;
            }
            if (!s[i].on || next_rand() % 5 == 0) /* idle this run */
                continue;
            size_t whole = (s[i].len - s[i].pos) / 64;
            size_t blocks = whole ? (size_t)(next_rand() % (MIN(whole, 4096) + 1)) : 0;
            ASSERT_EQ(auth_md5_mb_submit(&ctx, i, buf + s[i].off + s[i].pos, 64 * blocks), 0);
            s[i].pos += 64 * blocks;
        }
        auth_md5_mb_run(&ctx);
        for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++) {
            /* Leave when less than a block is left, or now and then with a
             * tail of any length. */
            if (!s[i].on || (s[i].len - s[i].pos >= 64 && next_rand() % 8 != 0))
                continue;
            uint8_t got[16], want[16];
            const unsigned char *p = buf + s[i].off;
            auth_md5_mb_final(&ctx, i, p + s[i].pos, s[i].len - s[i].pos, got);
            md5_ref(p, s[i].len, want);
            ASSERT_MEM_EQ(got, want, 16);
            bytes += s[i].len;
            s[i].on = false;
            done++;
        }
    }
    return bytes;
}

/* Submitting while blocks are pending, bad lanes and lengths. */
static void
check_errors(void)
{
    static const unsigned char blk[128];
    struct auth_md5_mb ctx;
    uint8_t got[16], want[16];
    auth_md5_mb_init(&ctx);
    ASSERT_EQ(auth_md5_mb_submit(&ctx, 0, blk, 63), -EINVAL);
    ASSERT_EQ(auth_md5_mb_submit(&ctx, AUTH_MD5_MB_LANES, blk, 64), -EINVAL);
    ASSERT_EQ(auth_md5_mb_submit(&ctx, 0, blk, 64), 0);
    ASSERT_EQ(auth_md5_mb_submit(&ctx, 0, blk, 64), -EBUSY);
    /* final runs the pending block first. */
    auth_md5_mb_final(&ctx, 0, blk + 64, 64, got);
    md5_ref(blk, 128, want);
    ASSERT_MEM_EQ(got, want, 16);
    /* reset drops what was submitted. */
    ASSERT_EQ(auth_md5_mb_submit(&ctx, 5, blk, 128), 0);
    auth_md5_mb_reset(&ctx, 5);
    auth_md5_mb_final(&ctx, 5, NULL, 0, got);
    md5_ref(blk, 0, want);
    ASSERT_MEM_EQ(got, want, 16);
}

int
main(void)
{
    unsigned char *buf = xmalloc(BUF_LEN);
    for (size_t i = 0; i < BUF_LEN; i++)
        buf[i] = (unsigned char)next_rand();
    enum auth_md5_mb_impl impls[] = {AUTH_MD5_MB_SCALAR, AUTH_MD5_MB_AVX2, AUTH_MD5_MB_AUTO};
    bool avx2 = auth_md5_mb_have_avx2();
    check_errors();
    for (size_t k = 0; k < ARRAY_LEN(impls); k++) {
        if (impls[k] == AUTH_MD5_MB_AVX2 && !avx2) {
            struct auth_md5_mb ctx;
            auth_md5_mb_init(&ctx);
            ASSERT_EQ(auth_md5_mb_set_impl(&ctx, impls[k]), -ENOTSUP);
            continue;
        }
        check_rfc1321(impls[k]);
        uint64_t bytes = check_random(impls[k], buf, 48);
        printf("impl %d: %llu bytes in 48 streams\n", (int)impls[k], (unsigned long long)bytes);
    }
    if (!avx2)
        printf("no AVX2 on this CPU: only the scalar path was tested\n");
    free(buf);
    return 0;
}
