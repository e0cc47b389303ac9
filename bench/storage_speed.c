/*
 * storage_speed.c: writer throughput against the machine's own limit.
 *
 * Writes N MiB (default 1024) through one storage writer and storage_sync,
 * then the same bytes with plain buffered write() + fdatasync into a file in
 * the same temp dir (same filesystem as $TMPDIR or /tmp), and prints MB/s
 * for both; then the cost of a storage_reader_pin/unpin pair, single-threaded
 * and with 2 threads. Usage: storage_speed [MiB]
 */
#include "storage/storage.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PIECE_LEN (256u << 10) /* what an HTTP upload hands us at a time */
#define PIN_ROUNDS 5000000

static double
mb_per_s(uint64_t len, int64_t ns)
{
    return (double)len / 1e6 / ((double)ns / 1e9);
}

static int
bench_writer(struct storage *st, const uint8_t *data, uint64_t total, uint64_t size_hint)
{
    int err;
    struct storage_writer *w = NULL;
    int64_t t0 = clock_mono_ns();
    err = storage_writer_create(st, size_hint, &w);
    if (err < 0)
        goto fail;
    for (uint64_t done = 0; done < total; done += PIECE_LEN) {
        err = storage_writer_write(w, data + done % (64u << 20), PIECE_LEN);
        if (err < 0)
            goto fail;
    }
    err = storage_writer_finish(w);
    if (err < 0)
        goto fail;
    err = storage_sync(st);
    if (err < 0)
        goto fail;
    int64_t ns = clock_mono_ns() - t0;
    const struct storage_extent *e;
    size_t n = storage_writer_extents(w, &e);
    printf("storage writer (%s size, %s): %8.1f MB/s  (%zu extent%s)\n",
           size_hint == UINT64_MAX ? "unknown" : "known",
           storage_is_direct(st) ? "O_DIRECT" : "buffered", mb_per_s(total, ns), n,
           n == 1 ? "" : "s");
    storage_writer_destroy(w, false);
    return 0;

fail:
    fprintf(stderr, "storage writer: %s\n", strerror(-err));
    storage_writer_destroy(w, false);
    return err;
}

static int
bench_plain(const char *dir, const uint8_t *data, uint64_t total)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/plain.dat", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -errno;
    int64_t t0 = clock_mono_ns();
    for (uint64_t done = 0; done < total; done += PIECE_LEN) {
        if (write(fd, data + done % (64u << 20), PIECE_LEN) != PIECE_LEN) {
            close(fd);
            return -EIO;
        }
    }
    fdatasync(fd);
    int64_t ns = clock_mono_ns() - t0;
    close(fd);
    unlink(path);
    printf("plain write()+fdatasync:         %8.1f MB/s\n", mb_per_s(total, ns));
    return 0;
}

static void *
pin_loop(void *arg)
{
    struct storage *st = arg;
    uint64_t pin;
    for (int i = 0; i < PIN_ROUNDS; i++) {
        if (storage_reader_pin(st, &pin) == 0)
            storage_reader_unpin(st, pin);
    }
    return NULL;
}

static void
bench_pins(struct storage *st)
{
    int64_t t0 = clock_mono_ns();
    pin_loop(st);
    int64_t ns = clock_mono_ns() - t0;
    printf("pin+unpin, 1 thread:  %6.1f ns\n", (double)ns / PIN_ROUNDS);

    pthread_t th[2];
    t0 = clock_mono_ns();
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, pin_loop, st);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ns = clock_mono_ns() - t0;
    printf("pin+unpin, 2 threads: %6.1f ns per pair (wall / pairs per thread)\n",
           (double)ns / PIN_ROUNDS);
}

int
main(int argc, char **argv)
{
    int rc = 1;
    uint64_t total = (argc > 1 ? strtoull(argv[1], NULL, 10) : 1024) << 20;
    total = ALIGN_UP(total, PIECE_LEN);
    const char *base = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/shard-bench-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    uint8_t *data = malloc(64u << 20);
    for (size_t i = 0; i < (64u << 20); i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);

    struct storage_config cfg = {
        .dir = dir,
        .volume_size = ALIGN_UP(total, STORAGE_BLOCK_LEN) + (64u << 20),
        .max_volumes = 1,
        .write_buffer_total = 64u << 20,
        .is_direct = true,
    };
    struct storage *st = NULL;
    int err = storage_open(&st, &cfg);
    if (err < 0 || (err = storage_ready(st)) < 0) {
        fprintf(stderr, "storage_open: %s\n", strerror(-err));
        goto done;
    }
    printf("%" PRIu64 " MiB in %u KiB pieces, dir %s\n", total >> 20, PIECE_LEN >> 10, dir);
    if (bench_writer(st, data, total, total) < 0 || bench_writer(st, data, total, UINT64_MAX) < 0)
        goto done;
    if (bench_plain(dir, data, total) < 0)
        goto done;
    bench_pins(st);
    rc = 0;

done:
    storage_close(st);
    char path[4200];
    snprintf(path, sizeof(path), "%s/vol-0000.dat", dir);
    unlink(path);
    rmdir(dir);
    free(data);
    return rc;
}
