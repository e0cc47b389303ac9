/*
 * part_layout.h: where the parts of a multipart upload are written, so that
 * equal parts end up adjacent on disk and the completed object is read as
 * one span (sendfile) rather than streamed (part_layout.c).
 */
#ifndef SHARD_SERVER_PART_LAYOUT_H
#define SHARD_SERVER_PART_LAYOUT_H

#include <stdint.h>

struct part_layout;
struct storage;
struct storage_writer;

/* Creates the table of upload runs. Destroy with part_layout_destroy (NULL
 * is a no-op). */
struct part_layout *part_layout_create(void);
void part_layout_destroy(struct part_layout *pl);
/*
 * Before the first byte of part 'part_number' (1-based) of 'upload_id',
 * declared 'len' bytes long, is written by 'w': asks 'w' to start at the
 * part's slot, base + (part_number - 1) * part length, of the upload's run.
 * The first part seen of an upload opens its run at the start of the
 * largest free range, with its length as the part length; a part longer
 * than that, an unaligned part length, or a slot past the range gets no
 * hint. Only a hint (storage_writer_place): a slot already taken (a part
 * uploaded again, another writer) just places the part elsewhere. Runs are
 * kept in memory for the most recent uploads only. Thread-safe; a NULL
 * 'pl' does nothing.
 */
void part_layout_place(struct part_layout *pl, struct storage *st, const char *upload_id,
                       uint32_t part_number, uint64_t len, struct storage_writer *w);

#endif
