/*
 * checksum_speed.c: single-core throughput of every auth/ payload checksum
 * and of OpenSSL's MD5 against auth/md5_mb.c with 1, 2, 4 and 8 streams
 * (aggregate over the streams), in GiB/s per core: 2^30 bytes per second
 * of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID, so that other load
 * on a shared machine slows the run down but not the figures much). Each
 * figure is the median of REPEATS timings of about SECONDS of CPU each,
 * hashing 1 MiB buffers (one per stream) over and over.
 * Usage: bench/checksum_speed [SECONDS [REPEATS]]   (defaults 0.3 and 5)
 */
#include "config.h"

#include "auth/auth.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BUF_LEN ((size_t)1 << 20)
#define MAX_REPEATS 31

static double secs = 0.3;
static int repeats = 5;
static unsigned char *bufs[AUTH_MD5_MB_LANES];

/* What one timing hashes: 'streams' buffers once. */
struct job {
    enum auth_checksum_algo algo; /* auth_checksum, or */
    bool evp_md5;                 /* OpenSSL's MD5 straight through EVP, or */
    int mb_impl;                  /* auth_md5_mb with this impl when >= 0 */
    unsigned streams;
};

/* This thread's CPU time in ns. */
static int64_t
cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One timing of 'j': bytes per second. */
static double
time_once(const struct job *j)
{
    uint64_t bytes = 0;
    uint8_t out[AUTH_CK_MAX_DIGEST];
    int64_t start = cpu_ns(), now;
    if (j->mb_impl >= 0) {
        struct auth_md5_mb mb;
        auth_md5_mb_init(&mb);
        if (auth_md5_mb_set_impl(&mb, (enum auth_md5_mb_impl)j->mb_impl) != 0)
            return 0;
        do {
            for (unsigned i = 0; i < j->streams; i++)
                auth_md5_mb_submit(&mb, i, bufs[i], BUF_LEN);
            auth_md5_mb_run(&mb);
            bytes += (uint64_t)j->streams * BUF_LEN;
            now = cpu_ns();
        } while (now - start < (int64_t)(secs * 1e9));
        for (unsigned i = 0; i < j->streams; i++)
            auth_md5_mb_final(&mb, i, NULL, 0, out);
    } else if (j->evp_md5) {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        unsigned int n = 0;
        if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1)
            abort();
        do {
            EVP_DigestUpdate(ctx, bufs[0], BUF_LEN);
            bytes += BUF_LEN;
            now = cpu_ns();
        } while (now - start < (int64_t)(secs * 1e9));
        EVP_DigestFinal_ex(ctx, out, &n);
        EVP_MD_CTX_free(ctx);
    } else {
        struct auth_checksum ck;
        auth_checksum_init(&ck, j->algo);
        do {
            auth_checksum_update(&ck, bufs[0], BUF_LEN);
            bytes += BUF_LEN;
            now = cpu_ns();
        } while (now - start < (int64_t)(secs * 1e9));
        auth_checksum_final(&ck, out);
    }
    return (double)bytes / ((double)(now - start) / 1e9);
}

static void
report(const char *name, const struct job *j)
{
    double t[MAX_REPEATS] = {0};
    for (int r = 0; r < repeats; r++)
        t[r] = time_once(j);
    qsort(t, (size_t)repeats, sizeof(t[0]), cmp_double);
    if (t[repeats / 2] == 0) {
        printf("%-28s      n/a\n", name);
        return;
    }
    printf("%-28s %8.2f GiB/s  (min %.2f, max %.2f)\n", name, t[repeats / 2] / (1 << 30),
           t[0] / (1 << 30), t[repeats - 1] / (1 << 30));
    fflush(stdout);
}

int
main(int argc, char **argv)
{
    static const enum auth_checksum_algo algos[] = {AUTH_CK_CRC32,     AUTH_CK_CRC32C,
                                                    AUTH_CK_CRC64NVME, AUTH_CK_SHA1,
                                                    AUTH_CK_SHA256,    AUTH_CK_MD5};
    static const struct {
        const char *name;
        int impl;
    } mb[] = {
        {"scalar", AUTH_MD5_MB_SCALAR}, {"avx2", AUTH_MD5_MB_AVX2}, {"auto", AUTH_MD5_MB_AUTO}};
    char name[64];
    if (argc > 1)
        secs = atof(argv[1]);
    if (argc > 2)
        repeats = MAX(1, MIN(MAX_REPEATS, atoi(argv[2])));
    for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++) {
        bufs[i] = xmalloc(BUF_LEN);
        for (size_t k = 0; k < BUF_LEN; k++)
            bufs[i][k] = (unsigned char)((k + i * BUF_LEN) * 2654435761u >> 13);
    }
    printf("GiB/s per core: median of %d x %.2f CPU-s, one thread; AVX2: %s\n", repeats, secs,
           auth_md5_mb_have_avx2() ? "yes" : "no");

    for (size_t a = 0; a < ARRAY_LEN(algos); a++) {
        struct job j = {.algo = algos[a], .mb_impl = -1, .streams = 1};
        snprintf(name, sizeof(name), "%s (auth_checksum)", auth_checksum_name(algos[a]));
        report(name, &j);
    }
    struct job evp = {.evp_md5 = true, .mb_impl = -1, .streams = 1};
    report("MD5 (OpenSSL EVP)", &evp);
    for (size_t m = 0; m < ARRAY_LEN(mb); m++) {
        for (unsigned s = 1; s <= AUTH_MD5_MB_LANES; s *= 2) {
            struct job j = {.mb_impl = mb[m].impl, .streams = s};
            snprintf(name, sizeof(name), "MD5 mb %s, %u stream%s", mb[m].name, s, s > 1 ? "s" : "");
            report(name, &j);
        }
    }
    for (unsigned i = 0; i < AUTH_MD5_MB_LANES; i++)
        free(bufs[i]);
    return 0;
}
