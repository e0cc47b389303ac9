/*
 * replay.c: a main() for libFuzzer targets built without libFuzzer. Runs
 * LLVMFuzzerTestOneInput over every file of a corpus directory (argv[1],
 * or FUZZ_CORPUS_DIR compiled in) or over the files named on the command
 * line, so `make check` replays the checked-in corpora under gcc. Each
 * input is copied into a buffer of exactly its size so that ASan sees any
 * read past the end. Exits 0, or 1 when nothing could be run.
 */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target over the file 'path'. Returns 0, or -1 when unreadable. */
static int
replay_file(const char *path)
{
    int rc = -1;
    uint8_t *data = NULL;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (f == NULL || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
        goto fail;
    size_t len = (size_t)st.st_size;
    data = malloc(len ? len : 1);
    if (data == NULL || fread(data, 1, len, f) != len)
        goto fail;
    LLVMFuzzerTestOneInput(data, len);
    rc = 0;
fail:
    free(data);
    if (f != NULL)
        fclose(f);
    return rc;
}

/* Runs every regular file of 'dir'. Returns how many ran, or -1. */
static int
replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (replay_file(path) == 0)
            n++;
    }
    closedir(d);
    return n;
}

int
main(int argc, char **argv)
{
    int n = 0;
#ifdef FUZZ_CORPUS_DIR
    const char *dflt = FUZZ_CORPUS_DIR;
#else
    const char *dflt = NULL;
#endif
    if (argc < 2) {
        if (dflt == NULL) {
            fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
            return 1;
        }
        n = replay_dir(dflt);
    } else {
        for (int i = 1; i < argc; i++) {
            struct stat st;
            if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
                int k = replay_dir(argv[i]);
                n += k > 0 ? k : 0;
            } else if (replay_file(argv[i]) == 0) {
                n++;
            }
        }
    }
    if (n <= 0) {
        fprintf(stderr, "%s: no input replayed\n", argv[0]);
        return 1;
    }
    printf("%s: %d inputs replayed\n", argv[0], n);
    return 0;
}
