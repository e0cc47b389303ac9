/*
 * tar.h: a streaming, resumable parser of tar headers (tar.c).
 *
 * It is fed an archive in chunks of any size and reports each regular
 * file ("member") with the offset and size of its data in the archive; the
 * data itself is skipped, never copied. Formats: ustar (name prefix), pax
 * extended headers ('x': path, size and mtime override the next header;
 * 'g' is ignored), GNU long names ('L'; 'K' long link names are skipped),
 * GNU base-256 numbers, v7 headers with a valid checksum. Directories,
 * links, devices and FIFOs are not members (their headers are skipped);
 * unknown types are skipped with their data, as Python's tarfile does; GNU
 * sparse files ('S') and multi-volume entries make the archive unreadable.
 * The parser is pure: no allocation, no I/O; its whole state is the
 * caller-owned struct tar_parser. Safe from any thread, one parser per
 * archive. Users: the server's member indexes (server/op_put.c,
 * server/op_member.c) and libshard's tar member reader (client/tar.c).
 */
#ifndef SHARD_COMMON_TAR_H
#define SHARD_COMMON_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TAR_BLOCK 512
/* Longest member name accepted; a longer one makes the archive unreadable. */
#define TAR_NAME_MAX 4096
/* Largest pax extended header or GNU long name kept; larger: unreadable. */
#define TAR_EXT_MAX (32 * 1024)

enum tar_status {
    TAR_OK,    /* consistent so far: feed more, or finish */
    TAR_ERROR, /* not a readable tar archive; sticky */
};

/* One regular file of the archive, as reported to the callback. */
struct tar_member {
    const char *name; /* 'name_len' bytes, NUL-terminated; borrowed for the call */
    size_t name_len;  /* 1..TAR_NAME_MAX */
    uint64_t offset;  /* of the first data byte in the archive */
    /* Of its first header in the archive: the pax 'x', GNU 'L' or 'K' entry
     * that applies to it when there is one, else its own (tarfile's
     * TarInfo.offset). Parsing again from there gives the member again. */
    uint64_t header_offset;
    uint64_t size;   /* data bytes */
    uint32_t mode;   /* permission bits (07777) */
    int64_t mtime_s; /* seconds since the epoch */
};

/* Called once per member, in archive order, as soon as its header is
 * parsed (its data may still be to come, and may turn out truncated: only
 * a TAR_OK from tar_parser_finish makes the list final). Returns 0 to go
 * on; anything else stops the parser with TAR_ERROR (a cap was reached). */
typedef int (*tar_member_fn)(void *ctx, const struct tar_member *m);

enum tar_state {
    TAR_STATE_HEADER, /* collecting a 512-byte header block */
    TAR_STATE_EXT,    /* collecting the data of an 'x' or 'L' entry */
    TAR_STATE_SKIP,   /* skipping data and padding */
    TAR_STATE_END,    /* after the end-of-archive block: input is ignored */
    TAR_STATE_ERROR,
};

/* Caller-owned state; initialize with tar_parser_init. Fields are private. */
struct tar_parser {
    enum tar_state state;
    tar_member_fn fn;
    void *ctx;
    uint64_t pos;  /* archive bytes consumed */
    uint64_t left; /* TAR_STATE_SKIP / _EXT: bytes to the next header */
    uint8_t block[TAR_BLOCK];
    size_t block_len;
    char ext_type;  /* 'x' or 'L' while in TAR_STATE_EXT */
    bool has_entry; /* 'entry_offset' is set: an 'x', 'L' or 'K' entry came first */
    uint64_t entry_offset;
    const char *why;       /* TAR_STATE_ERROR: a static description */
    uint64_t error_offset; /* TAR_STATE_ERROR: of the header (or end of input) at fault */
    uint64_t ext_size;     /* data bytes of that entry */
    size_t ext_len;
    /* Overrides for the next header, from 'x' and 'L' entries. */
    bool has_name;
    bool has_size;
    bool has_mtime;
    uint64_t next_size;
    int64_t next_mtime_s;
    size_t name_len;
    char name[TAR_NAME_MAX + 1];
    uint8_t ext[TAR_EXT_MAX];
};

/* Starts parsing an archive; 'fn' (with 'ctx') receives the members. */
void tar_parser_init(struct tar_parser *p, tar_member_fn fn, void *ctx);
/* Feeds the next 'len' bytes of the archive (any split is fine). Returns
 * TAR_OK or TAR_ERROR (then and ever after: not a readable archive). */
enum tar_status tar_parser_feed(struct tar_parser *p, const void *data, size_t len);
/* Bytes the parser will skip unread next (the rest of a member's data and
 * its padding; 0 when it needs the bytes). A reader with random access may
 * pass them to tar_parser_skip instead of reading them. */
uint64_t tar_parser_skippable(const struct tar_parser *p);
/* Consumes 'len' (<= tar_parser_skippable) bytes without their content. */
void tar_parser_skip(struct tar_parser *p, uint64_t len);
/* After TAR_ERROR: what was wrong (a static string, "bad header checksum")
 * and, in '*offset', where in the archive: the header at fault, or the end
 * of the input when it was truncated. NULL before any error. */
const char *tar_parser_error(const struct tar_parser *p, uint64_t *offset);
/* True once the end-of-archive block was read: later bytes are ignored. */
bool tar_parser_is_end(const struct tar_parser *p);
/* Ends the input. TAR_OK when the archive is whole: it ended with an
 * end-of-archive (zero) block, or exactly after an entry's padded data.
 * TAR_ERROR when it is truncated inside a header or an entry's data, or an
 * earlier feed failed. */
enum tar_status tar_parser_finish(struct tar_parser *p);

#endif
