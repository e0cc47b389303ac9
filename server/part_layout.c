/*
 * part_layout.c: the runs of multipart uploads (see part_layout.h).
 *
 * A fixed table of PART_LAYOUT_RUNS runs keyed by upload id; when full the
 * least recently used run is replaced, so an old upload's later parts just
 * get no hint. A run is only a layout preference: nothing is reserved for
 * it, space is taken and charged per part as bytes arrive (storage.h), and
 * losing the table (a restart) loses nothing but adjacency. Invariant: the
 * table is only touched under 'lock'.
 */
#include "config.h"

#include "common/common.h"
#include "server/part_layout.h"
#include "storage/storage.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PART_LAYOUT_RUNS 256
#define PART_LAYOUT_ID_MAX 64

struct part_run {
    char upload_id[PART_LAYOUT_ID_MAX + 1]; /* "" when unused */
    uint32_t volume;
    uint64_t base;
    uint64_t room; /* free bytes from base when the run was opened */
    uint64_t part_len;
    uint64_t last_use;
};

struct part_layout {
    pthread_mutex_t lock;
    uint64_t clock;
    struct part_run runs[PART_LAYOUT_RUNS];
};

struct part_layout *
part_layout_create(void)
{
    struct part_layout *pl = xcalloc(1, sizeof(*pl));
    pthread_mutex_init(&pl->lock, NULL);
    return pl;
}

void
part_layout_destroy(struct part_layout *pl)
{
    if (!pl)
        return;
    pthread_mutex_destroy(&pl->lock);
    free(pl);
}

/* The run of 'upload_id', or NULL and '*victim' the slot to reuse. */
static struct part_run *
run_find(struct part_layout *pl, const char *upload_id, struct part_run **victim)
{
    *victim = &pl->runs[0];
    for (size_t i = 0; i < PART_LAYOUT_RUNS; i++) {
        struct part_run *r = &pl->runs[i];
        if (strcmp(r->upload_id, upload_id) == 0)
            return r;
        if (r->last_use < (*victim)->last_use)
            *victim = r;
    }
    return NULL;
}

void
part_layout_place(struct part_layout *pl, struct storage *st, const char *upload_id,
                  uint32_t part_number, uint64_t len, struct storage_writer *w)
{
    if (!pl || part_number == 0 || len == 0 || upload_id[0] == '\0' ||
        strlen(upload_id) > PART_LAYOUT_ID_MAX)
        return;
    pthread_mutex_lock(&pl->lock);
    struct part_run *victim;
    struct part_run *r = run_find(pl, upload_id, &victim);
    if (!r) {
        uint32_t vol;
        uint64_t off, room;
        if (len % STORAGE_ALIGN != 0 || storage_free_largest(st, &vol, &off, &room) < 0)
            goto done;
        /* Uploads in flight together split the range: a new run starts
         * half way through what the latest run there may still use. */
        uint64_t end = off + room, latest = UINT64_MAX;
        for (size_t i = 0; i < PART_LAYOUT_RUNS; i++) {
            const struct part_run *o = &pl->runs[i];
            if (o->upload_id[0] && o->volume == vol && o->base >= off && o->base < end &&
                (latest == UINT64_MAX || o->base > latest))
                latest = o->base;
        }
        if (latest != UINT64_MAX)
            off = ALIGN_UP(latest + (end - latest) / 2, STORAGE_ALIGN);
        if (off >= end)
            goto done;
        room = end - off;
        r = victim;
        memset(r, 0, sizeof(*r));
        strcpy(r->upload_id, upload_id);
        r->volume = vol;
        r->base = off;
        r->room = room;
        r->part_len = len;
    }
    if (!r)
        goto done;
    r->last_use = ++pl->clock;
    uint64_t slot = (uint64_t)(part_number - 1) * r->part_len;
    if (len <= r->part_len && slot < r->room && len <= r->room - slot)
        storage_writer_place(w, r->volume, r->base + slot);
done:
    pthread_mutex_unlock(&pl->lock);
}
