/*
 * test_volume.c: new volumes are durable before they are published. The
 * fsync fault hook fails the volume file's fsync or its directory's: the
 * creation fails, nothing is published and no file is left. (A real
 * crash-consistency check needs a filesystem that drops unsynced directory
 * entries, e.g. dm-log-writes or a FUSE layer, which needs privileges the
 * test suite does not have; the hook proves the order instead.)
 */
#include "storage/storage_int.h"
#include "tests/unit/storage/storage_test.h"

#include <sys/stat.h>

#define VOL (16 * MIB)

static bool
volume_exists(const char *dir, unsigned id)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/" STORAGE_VOLUME_NAME_FMT, dir, id);
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Adds a volume as the allocator does (white box: storage_int.h). */
static int
volume_add(struct storage *st)
{
    pthread_mutex_lock(&st->alloc_lock);
    int err = storage__volume_add(st);
    pthread_mutex_unlock(&st->alloc_lock);
    return err;
}

/* A new volume is fsynced, then its directory, before it is published: a
 * failure of either fails the creation and leaves no volume behind. */
static void
test_volume_durable(const char *dir)
{
    char vdir[4200];
    snprintf(vdir, sizeof(vdir), "%s/volumes", dir);
    struct storage *st = test_storage_open(vdir, VOL, 2, 4 * MIB);
    ASSERT_EQ(storage_ready(st), 0);
    ASSERT(volume_exists(vdir, 0));
    struct storage_stats s;
    for (uint64_t nth = 1; nth <= 2; nth++) { /* the file's fsync, the directory's */
        storage_fault_inject(st, "fsync", nth);
        ASSERT_EQ(volume_add(st), -EIO);
        storage_stats_get(st, &s);
        ASSERT_EQ(s.n_volumes, 1);
        ASSERT(!volume_exists(vdir, 1));
    }
    storage_fault_inject(st, "fsync", 3);
    ASSERT_EQ(volume_add(st), 0);
    /* Exactly two fsyncs: the third is still armed. */
    ASSERT_UEQ(atomic_load(&st->fault_left[STORAGE_FAULT_FSYNC]), 1);
    storage_fault_inject(st, "fsync", 0);
    storage_stats_get(st, &s);
    ASSERT_EQ(s.n_volumes, 2);
    ASSERT(volume_exists(vdir, 1));
    storage_close(st);
}

int
main(void)
{
    log_set_level(LOG_ERROR);
    char *dir = test_tmpdir_create("storage-volume");
    test_volume_durable(dir);
    test_tmpdir_remove(dir);
    fprintf(stderr, "ok volume_durable\n");
    return 0;
}
