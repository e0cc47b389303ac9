/*
 * test_checksum.c: auth/checksum.c against check values (those of AWS's
 * SDKs for CRC64NVME), a bitwise reference CRC at every length up to 700
 * bytes and beyond, split-versus-whole updates, and CRC combination.
 */
#include "config.h"

#include "auth/auth.h"
#include "tests/lib/test.h"

static uint64_t
digest_u64(const uint8_t *d, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | d[i];
    return v;
}

static uint64_t
crc_of(enum auth_checksum_algo algo, const void *p, size_t len)
{
    struct auth_checksum c;
    uint8_t out[AUTH_CK_MAX_DIGEST] = {0};
    auth_checksum_init(&c, algo);
    auth_checksum_update(&c, p, len);
    size_t n = auth_checksum_final(&c, out);
    ASSERT_EQ(n, auth_checksum_len(algo));
    return digest_u64(out, n);
}

/* Bit-at-a-time reflected CRC: the slow, obviously right reference. */
static uint64_t
crc_ref(uint64_t poly, int width, const unsigned char *p, size_t len)
{
    uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
    uint64_t c = mask;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
    }
    return ~c & mask;
}

static void
check_hex(enum auth_checksum_algo algo, const char *in, const char *want)
{
    struct auth_checksum c;
    uint8_t out[AUTH_CK_MAX_DIGEST] = {0};
    char hex[2 * AUTH_CK_MAX_DIGEST + 1];
    auth_checksum_init(&c, algo);
    auth_checksum_update(&c, in, strlen(in));
    size_t n = auth_checksum_final(&c, out);
    hex_encode(out, n, hex);
    ASSERT_STR_EQ(hex, want);
    auth_checksum_cleanup(&c); /* after final: a no-op */
    auth_checksum_cleanup(&c);
}

int
main(void)
{
    static const struct {
        enum auth_checksum_algo algo;
        uint64_t poly;
        int width;
    } crcs[] = {
        {AUTH_CK_CRC32, 0xedb88320u, 32},
        {AUTH_CK_CRC32C, 0x82f63b78u, 32},
        {AUTH_CK_CRC64NVME, 0x9a6c9329ac4bc9b5ull, 64},
    };

    /* Check values. */
    ASSERT_UEQ(crc_of(AUTH_CK_CRC32, "123456789", 9), 0xcbf43926u);
    ASSERT_UEQ(crc_of(AUTH_CK_CRC32C, "123456789", 9), 0xe3069283u);
    ASSERT_UEQ(crc_of(AUTH_CK_CRC64NVME, "123456789", 9), 0xae8b14860a799888ull);
    ASSERT_UEQ(crc_of(AUTH_CK_CRC32, "", 0), 0);
    ASSERT_UEQ(crc_of(AUTH_CK_CRC64NVME, "", 0), 0);
    /* CRC64NVME as AWS's SDKs (aws-c-s3, aws-checksums) and the NVMe
     * command set specification give it. */
    ASSERT_UEQ(crc_of(AUTH_CK_CRC64NVME, "aaaaaaaaaa", 10), 0x0c1a80036d65c555ull);
    ASSERT_UEQ(crc_of(AUTH_CK_CRC64NVME, "hello world!", 12), 0xd9160d1fa8e418e3ull);
    {
        static unsigned char z[4096];
        ASSERT_UEQ(crc_of(AUTH_CK_CRC64NVME, z, 32), 0xcf3473434d4ecf3bull);
        ASSERT_UEQ(crc_of(AUTH_CK_CRC64NVME, z, 4096), 0x6482d367eb22b64eull);
        memset(z, 0xff, sizeof(z));
        ASSERT_UEQ(crc_of(AUTH_CK_CRC64NVME, z, 4096), 0xc0ddba7302eca3acull);
    }
    {
        struct auth_checksum c;
        uint8_t out[AUTH_CK_MAX_DIGEST] = {0};
        char b64[16];
        auth_checksum_init(&c, AUTH_CK_CRC64NVME);
        base64_encode(out, auth_checksum_final(&c, out), b64);
        ASSERT_STR_EQ(b64, "AAAAAAAAAAA=");
    }
    check_hex(AUTH_CK_SHA256, "abc",
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_hex(AUTH_CK_SHA1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d");
    check_hex(AUTH_CK_MD5, "abc", "900150983cd24fb0d6963f7d28e17f72");
    check_hex(AUTH_CK_CRC32C, "", "00000000");
    /* S3's base64 form: CRC32C of the AWS trailer example ("a" x 66560). */
    {
        static char a[66560];
        memset(a, 'a', sizeof(a));
        struct auth_checksum c;
        uint8_t out[AUTH_CK_MAX_DIGEST] = {0};
        char b64[16];
        auth_checksum_init(&c, AUTH_CK_CRC32C);
        auth_checksum_update(&c, a, sizeof(a));
        base64_encode(out, auth_checksum_final(&c, out), b64);
        ASSERT_STR_EQ(b64, "sOO8/Q==");
    }

    /* Pseudo-random data, long enough for the interleaved CRC32C path. */
    size_t len = 200003;
    unsigned char *data = xmalloc(len);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data[i] = (unsigned char)x;
    }

    for (size_t a = 0; a < ARRAY_LEN(crcs); a++) {
        enum auth_checksum_algo algo = crcs[a].algo;
        /* Against the reference at many lengths and misalignments. */
        for (size_t off = 0; off < 9; off++) {
            for (size_t n = 0; n < 40; n++)
                ASSERT_UEQ(crc_of(algo, data + off, n),
                           crc_ref(crcs[a].poly, crcs[a].width, data + off, n));
            ASSERT_UEQ(crc_of(algo, data + off, len - off),
                       crc_ref(crcs[a].poly, crcs[a].width, data + off, len - off));
        }
        /* Around the folding paths' thresholds (64 bytes, 16-byte steps,
         * 64-byte rounds) and their tails. */
        for (size_t n = 40; n < 700; n++)
            ASSERT_UEQ(crc_of(algo, data + n % 7, n),
                       crc_ref(crcs[a].poly, crcs[a].width, data + n % 7, n));
        uint64_t whole = crc_of(algo, data, len);

        /* Split updates give the whole result. */
        struct auth_checksum c;
        uint8_t out[AUTH_CK_MAX_DIGEST] = {0};
        auth_checksum_init(&c, algo);
        size_t pos = 0, step = 1;
        while (pos < len) {
            size_t n = MIN(step, len - pos);
            auth_checksum_update(&c, data + pos, n);
            pos += n;
            step = step * 3 + 1;
            if (step > 10000)
                step = 1;
        }
        ASSERT_UEQ(digest_u64(out, auth_checksum_final(&c, out)), whole);

        /* Combination: crc(A||B) from crc(A), crc(B), len(B). */
        static const size_t cuts[] = {0, 1, 7, 8, 1000, 3072, 65536, 199999, 200003};
        for (size_t k = 0; k < ARRAY_LEN(cuts); k++) {
            size_t cut = cuts[k];
            uint64_t ca = crc_of(algo, data, cut);
            uint64_t cb = crc_of(algo, data + cut, len - cut);
            ASSERT_UEQ(auth_checksum_crc_combine(algo, ca, cb, len - cut), whole);
        }
        /* Three parts, as a FULL_OBJECT multipart checksum folds them. */
        uint64_t acc = crc_of(algo, data, 5000);
        acc = auth_checksum_crc_combine(algo, acc, crc_of(algo, data + 5000, 100000), 100000);
        acc = auth_checksum_crc_combine(algo, acc, crc_of(algo, data + 105000, len - 105000),
                                        len - 105000);
        ASSERT_UEQ(acc, whole);
    }
    ASSERT_UEQ(auth_checksum_crc_combine(AUTH_CK_SHA256, 1, 2, 3), 0);

    /* SHA-256 incremental equals one-shot. */
    {
        uint8_t one[32], inc[AUTH_CK_MAX_DIGEST];
        struct auth_checksum c;
        auth_sha256(data, len, one);
        auth_checksum_init(&c, AUTH_CK_SHA256);
        auth_checksum_update(&c, data, 1000);
        auth_checksum_update(&c, data + 1000, len - 1000);
        ASSERT_EQ(auth_checksum_final(&c, inc), 32);
        ASSERT_MEM_EQ(one, inc, 32);
    }
    /* cleanup without final releases the context (ASan checks the leak). */
    {
        struct auth_checksum c;
        auth_checksum_init(&c, AUTH_CK_MD5);
        auth_checksum_update(&c, "x", 1);
        auth_checksum_cleanup(&c);
        auth_checksum_cleanup(&c);
        auth_checksum_cleanup(NULL);
    }

    /* Names. */
    ASSERT_EQ(auth_checksum_from_name(SLICE_LIT("crc64nvme")), AUTH_CK_CRC64NVME);
    ASSERT_EQ(auth_checksum_from_name(SLICE_LIT("CRC32C")), AUTH_CK_CRC32C);
    ASSERT_EQ(auth_checksum_from_name(SLICE_LIT("Sha256")), AUTH_CK_SHA256);
    ASSERT_EQ(auth_checksum_from_name(SLICE_LIT("crc")), AUTH_CK_NONE);
    ASSERT_EQ(auth_checksum_from_name(SLICE_NULL), AUTH_CK_NONE);
    ASSERT_STR_EQ(auth_checksum_name(AUTH_CK_CRC32), "CRC32");
    ASSERT_STR_EQ(auth_checksum_header(AUTH_CK_SHA1), "x-amz-checksum-sha1");
    ASSERT(auth_checksum_header(AUTH_CK_MD5) == NULL);
    ASSERT(auth_checksum_header(AUTH_CK_NONE) == NULL);
    ASSERT_EQ(auth_checksum_len(AUTH_CK_CRC64NVME), 8);
    ASSERT_EQ(auth_checksum_len(AUTH_CK_SHA1), 20);
    ASSERT_EQ(auth_checksum_len(AUTH_CK_NONE), 0);

    free(data);
    return 0;
}
