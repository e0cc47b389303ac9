/*
 * checksum_speed.c: throughput of every auth/ payload checksum, in MB/s
 * (10^6 bytes per second), hashing a 1 MiB buffer repeatedly for about
 * 0.3 s each. Usage: bench/checksum_speed [seconds-per-algorithm]
 */
#include "config.h"

#include "auth/auth.h"

#include <stdio.h>
#include <stdlib.h>

int
main(int argc, char **argv)
{
    static const enum auth_checksum_algo algos[] = {AUTH_CK_CRC32,     AUTH_CK_CRC32C,
                                                    AUTH_CK_CRC64NVME, AUTH_CK_SHA1,
                                                    AUTH_CK_SHA256,    AUTH_CK_MD5};
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    size_t len = 1 << 20;
    unsigned char *data = xmalloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (unsigned char)(i * 2654435761u >> 13);

    for (size_t a = 0; a < ARRAY_LEN(algos); a++) {
        struct auth_checksum ck;
        uint8_t out[AUTH_CK_MAX_DIGEST];
        uint64_t bytes = 0;
        auth_checksum_init(&ck, algos[a]);
        int64_t start = clock_mono_ns(), now;
        do {
            auth_checksum_update(&ck, data, len);
            bytes += len;
            now = clock_mono_ns();
        } while (now - start < (int64_t)(secs * 1e9));
        auth_checksum_final(&ck, out);
        printf("%-10s %8.0f MB/s\n", auth_checksum_name(algos[a]),
               (double)bytes / ((double)(now - start) / 1e9) / 1e6);
    }
    free(data);
    return 0;
}
