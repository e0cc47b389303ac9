/*
 * tar.c: the tar member reader (shard_tar_*): whole members of a streamed
 * tar archive, many per call, parsed by common/tar.c.
 *
 * Input comes in pieces, from the caller (shard_tar_input) or from a
 * shard_reader's window (shard_tar_read). Each piece is fed to the parser a
 * header block at a time and member data is skipped by arithmetic, so the
 * parser sees headers only. A member is handed out when its data is all
 * there: as a pointer into the piece when the piece holds it whole (no
 * copy), else copied piece by piece into 'stage' (one copy; the member is
 * handed out with the piece that completes it).
 *
 *   piece:   |hdr|data....|pad|hdr|data.........       (next piece) ....|pad|hdr|
 *             out[0] = piece+512  \__ stage <- the head here, the rest there __/
 *
 * Invariants: the parser has consumed exactly 'in_base + in_pos' bytes
 * (every byte of a piece is fed or skipped once, in order); at most one
 * member is pending (its header parsed, its data not all in hand); what a
 * call hands out stays valid until the next call on the reader, which is
 * also when a shard_reader's window moves.
 */
#include "config.h"

#include "client/shard_int.h"
#include "common/tar.h"

#include <assert.h>
#include <limits.h>
#include <stdlib.h>

struct shard_tar {
    struct tar_parser parser;
    uint64_t base; /* archive offset of the first byte given */
    /* The piece being parsed: parser offset 'in_base' is in[0]. */
    const uint8_t *in;
    size_t in_len, in_pos;
    uint64_t in_base;
    bool is_input_ended;
    bool is_done; /* the archive ended whole: nothing more to hand out */
    int error;    /* sticky, reported once the members before it are out */
    struct shard_error err;
    /* Set by on_member for the header just parsed. */
    bool has_found;
    struct tar_member found;
    /* The pending member: its name, and its data copied so far into
     * 'stage[cur]' (grown as the bytes arrive, so a header that lies about
     * its size costs no more memory than the bytes that came). Two buffers
     * taken in turn: a call may hand out a member completed in one while
     * the next member's data starts in the other. */
    bool is_staging;
    uint64_t staged;
    unsigned cur;
    uint8_t *stage[2];
    size_t stage_cap[2];
    char name[TAR_NAME_MAX + 1];
    size_t name_len;
    /* Names handed out by the current call, NUL-separated. */
    char *names;
    size_t names_len, names_cap;
};

static const char empty_data[1];

/* Parser callback: keeps the member whose header was just parsed. One
 * header block at most is fed at a time, so at most one comes per feed. */
static int
on_member(void *ctx, const struct tar_member *m)
{
    struct shard_tar *t = ctx;
    assert(!t->has_found);
    t->has_found = true;
    t->found = *m;
    memcpy(t->name, m->name, m->name_len + 1);
    t->name_len = m->name_len;
    return 0;
}

struct shard_tar *
shard_tar_create(uint64_t base)
{
    struct shard_tar *t = xcalloc(1, sizeof(*t));
    tar_parser_init(&t->parser, on_member, t);
    t->base = base;
    return t;
}

void
shard_tar_destroy(struct shard_tar *t)
{
    if (t == NULL)
        return;
    free(t->stage[0]);
    free(t->stage[1]);
    free(t->names);
    free(t);
}

/* Records the parser's verdict that the archive is unreadable. */
static void
fail_format(struct shard_tar *t)
{
    uint64_t at = 0;
    const char *why = tar_parser_error(&t->parser, &at);
    client__err(&t->err, SHARD_ERR_FORMAT, 0, "MalformedTar", "malformed tar at byte %llu: %s",
                (unsigned long long)(t->base + at), why ? why : "unreadable");
    t->error = SHARD_ERR_FORMAT;
}

/* Fills 'o' with the pending member, its data at 'data', and appends its
 * name to 'names' (the pointer is set once the call's names stop moving:
 * finish_names). */
static void
emit(struct shard_tar *t, struct shard_tar_member *o, const void *data)
{
    if (t->names_len + t->name_len + 1 > t->names_cap) {
        t->names_cap = (t->names_len + t->name_len + 1) * 2;
        t->names = xrealloc(t->names, t->names_cap);
    }
    memcpy(t->names + t->names_len, t->name, t->name_len + 1);
    o->name = (const char *)(uintptr_t)t->names_len; /* an offset until finish_names */
    o->name_len = t->name_len;
    o->data = t->found.size ? data : empty_data;
    o->size = t->found.size;
    o->header_offset = t->base + t->found.header_offset;
    t->names_len += t->name_len + 1;
}

static void
finish_names(struct shard_tar *t, struct shard_tar_member *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i].name = t->names + (uintptr_t)out[i].name;
}

/* Copies 'len' bytes at 'p' to the end of the pending member's data in
 * 'stage'. Returns 0, or SHARD_ERR_IO (recorded) when memory runs out. */
static int
stage_append(struct shard_tar *t, const uint8_t *p, size_t len)
{
    if (len == 0)
        return 0;
    unsigned c = t->cur;
    if (t->staged + len > t->stage_cap[c]) {
        uint64_t want = (uint64_t)t->stage_cap[c] * 2;
        if (want < t->staged + len)
            want = t->staged + len;
        if (want > t->found.size)
            want = t->found.size;
        uint8_t *grown = want <= SIZE_MAX ? realloc(t->stage[c], (size_t)want) : NULL;
        if (grown == NULL) {
            t->error = client__err(&t->err, SHARD_ERR_IO, 0, "OutOfMemory",
                                   "no memory for a tar member of %llu bytes",
                                   (unsigned long long)t->found.size);
            return t->error;
        }
        t->stage[c] = grown;
        t->stage_cap[c] = (size_t)want;
    }
    memcpy(t->stage[c] + t->staged, p, len);
    t->staged += len;
    return 0;
}

/* The header just parsed was a member's: hands it out when the piece holds
 * its data whole, else starts copying the data into 'stage' and consumes
 * the rest of the piece. Returns 1 when 'o' was filled, else 0. */
static int
take_found(struct shard_tar *t, struct shard_tar_member *o)
{
    uint64_t d = t->found.offset, size = t->found.size;
    uint64_t in_end = t->in_base + t->in_len;
    t->has_found = false;
    if (size <= in_end - d) {
        emit(t, o, t->in + (d - t->in_base));
        return 1;
    }
    t->staged = 0;
    t->is_staging = true;
    t->cur ^= 1;
    if (stage_append(t, t->in + (d - t->in_base), (size_t)(in_end - d)) != 0)
        return 0;
    tar_parser_skip(&t->parser, in_end - (t->in_base + t->in_pos));
    t->in_pos = t->in_len;
    return 0;
}

/*
 * Parses the piece in hand from 'in_pos' until it is used up, 'cap'
 * members are in 'out' (from '*n' on), or the archive ends or fails.
 */
static void
scan(struct shard_tar *t, struct shard_tar_member *out, size_t cap, size_t *n)
{
    while (t->in_pos < t->in_len && *n < cap && t->error == 0 && !t->is_done) {
        const uint8_t *p = t->in + t->in_pos;
        size_t left = t->in_len - t->in_pos;
        if (t->is_staging) {
            uint64_t want = t->found.size - t->staged;
            size_t k = left < want ? left : (size_t)want;
            if (stage_append(t, p, k) != 0)
                break;
            tar_parser_skip(&t->parser, k);
            t->in_pos += k;
            if (t->staged == t->found.size) {
                t->is_staging = false;
                emit(t, &out[(*n)++], t->stage[t->cur]);
            }
            continue;
        }
        uint64_t skip = tar_parser_skippable(&t->parser);
        if (skip > 0) {
            size_t k = left < skip ? left : (size_t)skip;
            tar_parser_skip(&t->parser, k);
            t->in_pos += k;
            continue;
        }
        if (tar_parser_is_end(&t->parser)) {
            t->is_done = true; /* what follows the end block is not read */
            break;
        }
        size_t k = left < TAR_BLOCK ? left : TAR_BLOCK;
        if (tar_parser_feed(&t->parser, p, k) == TAR_ERROR) {
            fail_format(t);
            break;
        }
        t->in_pos += k;
        if (t->has_found)
            *n += (size_t)take_found(t, &out[*n]);
    }
    if (t->error == 0 && !t->is_done && tar_parser_is_end(&t->parser) && !t->is_staging &&
        tar_parser_skippable(&t->parser) == 0)
        t->is_done = true;
    if (t->is_done)
        t->in_pos = t->in_len; /* the rest of the piece follows the end block: unread */
}

/* The input ended: the archive must be whole. */
static void
end_input(struct shard_tar *t)
{
    t->is_input_ended = true;
    if (t->error == 0 && !t->is_done) {
        if (tar_parser_finish(&t->parser) == TAR_OK)
            t->is_done = true;
        else
            fail_format(t);
    }
}

/* What a call returns after 'n' members: them, else the error, else 0. */
static int
result(struct shard_tar *t, struct shard_tar_member *out, size_t n, struct shard_error *err)
{
    if (n > 0) {
        finish_names(t, out, n);
        return (int)n;
    }
    if (t->error != 0) {
        if (err != NULL)
            *err = t->err;
        return t->error;
    }
    return 0;
}

int
shard_tar_input(struct shard_tar *t, const void *data, size_t len, struct shard_error *err)
{
    if ((t->in_pos < t->in_len && t->error == 0) || t->is_input_ended)
        return client__err(err, SHARD_ERR_ARG, 0, "InvalidArgument",
                           t->is_input_ended ? "input after its end"
                                             : "input before the last piece was used up");
    if (len == 0) {
        t->is_input_ended = true;
        return 0;
    }
    t->in_base += t->in_len;
    t->in = data;
    t->in_len = len;
    t->in_pos = 0;
    return 0;
}

static int
cap_ok(size_t cap, struct shard_error *err)
{
    if (cap > 0 && cap <= INT_MAX)
        return 1;
    client__err(err, SHARD_ERR_ARG, 0, "InvalidArgument", "room for 1 to INT_MAX members");
    return 0;
}

int
shard_tar_next(struct shard_tar *t, struct shard_tar_member *out, size_t cap,
               struct shard_error *err)
{
    if (!cap_ok(cap, err))
        return SHARD_ERR_ARG;
    size_t n = 0;
    t->names_len = 0;
    scan(t, out, cap, &n);
    if (t->in_pos == t->in_len && t->is_input_ended)
        end_input(t);
    return result(t, out, n, err);
}

int
shard_tar_read(struct shard_tar *t, struct shard_reader *r, struct shard_tar_member *out,
               size_t cap, struct shard_error *err)
{
    if (!cap_ok(cap, err))
        return SHARD_ERR_ARG;
    size_t n = 0;
    t->names_len = 0;
    for (;;) {
        scan(t, out, cap, &n);
        if (n == cap || t->error != 0 || t->is_done)
            break;
        /* The piece is used up. Members of it in 'out' point into the
         * reader's window, which the next piece would move: they go first. */
        if (n > 0)
            break;
        const void *ptr;
        size_t len;
        int rc = shard_reader_next(r, &ptr, &len, &t->err);
        if (rc < 0) {
            t->error = rc;
            break;
        }
        if (rc == 0) {
            end_input(t);
            break;
        }
        t->in_base += t->in_len;
        t->in = ptr;
        t->in_len = len;
        t->in_pos = 0;
    }
    return result(t, out, n, err);
}

const char *
shard_tar_error(const struct shard_tar *t, uint64_t *offset)
{
    if (t->error != SHARD_ERR_FORMAT)
        return NULL;
    uint64_t at = 0;
    const char *why = tar_parser_error(&t->parser, &at);
    if (offset != NULL)
        *offset = t->base + at;
    return why;
}
