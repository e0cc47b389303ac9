/*
 * tar.c: the streaming tar header parser (tar.h).
 *
 * The archive is a sequence of 512-byte header blocks, each followed by
 * its data padded to 512 bytes. The parser collects a header, validates
 * its checksum and numbers, and either reports a member and skips its
 * data, or collects the data of a pax 'x' / GNU 'L' entry into 'ext' to
 * override the next header. Invariants: 'pos' counts every byte consumed,
 * so a member's offset is the position right after its header; every
 * reported member's data starts after the previous member's ends; the
 * state only moves to TAR_STATE_ERROR or TAR_STATE_END for good.
 */
#include "config.h"

#include "common/tar.h"

#include <string.h>

/* Header fields (POSIX ustar; GNU uses the same offsets for these). */
#define F_NAME 0
#define F_NAME_LEN 100
#define F_MODE 100
#define F_MTIME 136
#define F_SIZE 124
#define F_CHKSUM 148
#define F_TYPE 156
#define F_MAGIC 257
#define F_PREFIX 345
#define F_PREFIX_LEN 155

void
tar_parser_init(struct tar_parser *p, tar_member_fn fn, void *ctx)
{
    p->state = TAR_STATE_HEADER;
    p->fn = fn;
    p->ctx = ctx;
    p->pos = 0;
    p->left = 0;
    p->block_len = 0;
    p->ext_type = 0;
    p->ext_size = 0;
    p->ext_len = 0;
    p->has_name = p->has_size = p->has_mtime = false;
    p->next_size = 0;
    p->next_mtime_s = 0;
    p->name_len = 0;
    p->name[0] = '\0';
    p->has_entry = false;
    p->entry_offset = 0;
    p->why = NULL;
    p->error_offset = 0;
}

/* Records why the archive is unreadable ('why', at archive offset 'at')
 * unless an earlier failure was recorded. Returns false, for the callers'
 * 'return fail(...)'. */
static bool
fail(struct tar_parser *p, uint64_t at, const char *why)
{
    if (p->why == NULL) {
        p->why = why;
        p->error_offset = at;
    }
    return false;
}

/* Parses the numeric field 'f' of 'len' bytes: octal digits with optional
 * leading spaces, ended by a space, a NUL or the field's end (empty is 0),
 * or GNU base-256 (first byte 0x80 positive, 0xff negative, big-endian).
 * Returns false when malformed or out of int64_t's range. */
static bool
parse_number(const uint8_t *f, size_t len, int64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    if (f[0] == 0x80 || f[0] == 0xff) {
        bool is_negative = f[0] == 0xff;
        for (i = 1; i < len; i++) {
            uint8_t b = is_negative ? (uint8_t)~f[i] : f[i];
            if (v > (UINT64_MAX >> 8))
                return false;
            v = (v << 8) | b;
        }
        if (v > (uint64_t)INT64_MAX)
            return false;
        *out = is_negative ? -(int64_t)v - 1 : (int64_t)v;
        return true;
    }
    while (i < len && f[i] == ' ')
        i++;
    for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
        if (v > ((uint64_t)INT64_MAX >> 3))
            return false;
        v = (v << 3) | (uint64_t)(f[i] - '0');
    }
    for (; i < len; i++)
        if (f[i] != ' ' && f[i] != '\0')
            return false;
    *out = (int64_t)v;
    return true;
}

/* Whether the header's checksum field matches the sum of its bytes with
 * that field read as spaces (unsigned, or signed as some old tars wrote). */
static bool
checksum_is_valid(const uint8_t *h)
{
    int64_t want;
    if (!parse_number(h + F_CHKSUM, 8, &want))
        return false;
    int64_t sum_u = 0, sum_s = 0;
    for (size_t i = 0; i < TAR_BLOCK; i++) {
        uint8_t b = (i >= F_CHKSUM && i < F_CHKSUM + 8) ? ' ' : h[i];
        sum_u += b;
        sum_s += (int8_t)b;
    }
    return want == sum_u || want == sum_s;
}

static bool
block_is_zero(const uint8_t *h)
{
    for (size_t i = 0; i < TAR_BLOCK; i++)
        if (h[i])
            return false;
    return true;
}

/* Length of the NUL-terminated string in field 'f' of at most 'len' bytes. */
static size_t
field_len(const uint8_t *f, size_t len)
{
    const uint8_t *nul = memchr(f, 0, len);
    return nul ? (size_t)(nul - f) : len;
}

/* Sets the pending name override from 'len' bytes at 'src'. */
static bool
set_name(struct tar_parser *p, const void *src, size_t len)
{
    if (len == 0 || len > TAR_NAME_MAX)
        return false;
    memcpy(p->name, src, len);
    p->name[len] = '\0';
    p->name_len = len;
    p->has_name = true;
    return true;
}

/* Parses a decimal with an optional sign and fraction (pax mtime); keeps
 * the integer part. Returns false when malformed or too large. */
static bool
parse_pax_time(const uint8_t *s, size_t len, int64_t *out)
{
    size_t i = 0;
    bool is_negative = false;
    uint64_t v = 0;
    if (i < len && s[i] == '-') {
        is_negative = true;
        i++;
    }
    size_t digits = 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        if (v > ((uint64_t)INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (digits == 0)
        return false;
    if (i < len && s[i] == '.')
        for (i++; i < len; i++)
            if (s[i] < '0' || s[i] > '9')
                return false;
    if (i != len)
        return false;
    *out = is_negative ? -(int64_t)v : (int64_t)v;
    return true;
}

/* Applies the records "LEN KEY=VALUE\n" of the pax header in 'ext': path,
 * size and mtime override the next header; other keys are ignored.
 * Returns false when a record is malformed. */
static bool
apply_pax(struct tar_parser *p)
{
    const uint8_t *s = p->ext;
    size_t n = p->ext_len, i = 0;
    while (i < n) {
        size_t rec_len = 0, j = i;
        for (; j < n && s[j] >= '0' && s[j] <= '9'; j++) {
            if (rec_len > n)
                return false;
            rec_len = rec_len * 10 + (size_t)(s[j] - '0');
        }
        if (j == i || j >= n || s[j] != ' ' || rec_len <= j - i + 1 || rec_len > n - i ||
            s[i + rec_len - 1] != '\n')
            return false;
        const uint8_t *kv = s + j + 1;
        size_t kv_len = i + rec_len - 1 - (j + 1);
        const uint8_t *eq = memchr(kv, '=', kv_len);
        if (!eq)
            return false;
        size_t key_len = (size_t)(eq - kv);
        const uint8_t *val = eq + 1;
        size_t val_len = kv_len - key_len - 1;
        if (key_len == 4 && memcmp(kv, "path", 4) == 0) {
            if (!set_name(p, val, val_len))
                return false;
        } else if (key_len == 4 && memcmp(kv, "size", 4) == 0) {
            int64_t v;
            if (!parse_pax_time(val, val_len, &v) || v < 0 || memchr(val, '.', val_len))
                return false;
            p->next_size = (uint64_t)v;
            p->has_size = true;
        } else if (key_len == 5 && memcmp(kv, "mtime", 5) == 0) {
            if (!parse_pax_time(val, val_len, &p->next_mtime_s))
                return false;
            p->has_mtime = true;
        }
        i += rec_len;
    }
    return true;
}

/* Enters TAR_STATE_SKIP for 'size' data bytes plus their padding. */
static void
skip_data(struct tar_parser *p, uint64_t size)
{
    p->left = size + ((TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK);
    p->state = p->left ? TAR_STATE_SKIP : TAR_STATE_HEADER;
}

static void
clear_overrides(struct tar_parser *p)
{
    p->has_name = p->has_size = p->has_mtime = false;
}

/* Handles the complete header in 'block' ('pos' is just past it). Returns
 * false when the archive is unreadable. */
static bool
on_header(struct tar_parser *p)
{
    const uint8_t *h = p->block;
    uint64_t at = p->pos - TAR_BLOCK;
    if (!p->has_entry) {
        p->entry_offset = at;
        p->has_entry = true;
    }
    if (block_is_zero(h)) {
        /* End of archive (tar writes two; one is accepted, as GNU tar and
         * Python do). */
        p->state = TAR_STATE_END;
        if (p->has_name || p->has_size || p->has_mtime)
            return fail(p, at, "end of archive right after an extended header");
        return true;
    }
    int64_t mode, size, mtime;
    if (!checksum_is_valid(h))
        return fail(p, at, "bad header checksum");
    if (!parse_number(h + F_MODE, 8, &mode) || !parse_number(h + F_SIZE, 12, &size) ||
        !parse_number(h + F_MTIME, 12, &mtime))
        return fail(p, at, "bad number in a header");
    if (size < 0)
        return fail(p, at, "negative size");
    uint64_t usize = p->has_size ? p->next_size : (uint64_t)size;
    if (usize > UINT64_MAX - 2 * TAR_BLOCK - p->pos)
        return fail(p, at, "size past the largest archive");
    char type = (char)h[F_TYPE];
    switch (type) {
    case 'x': /* pax extended header for the next entry */
    case 'L': /* GNU long name of the next entry */
        if (p->has_size)
            return fail(p, at, "pax size on an extended header");
        if ((uint64_t)size > TAR_EXT_MAX)
            return fail(p, at, "extended header too large");
        p->ext_type = type;
        p->ext_size = (uint64_t)size;
        p->ext_len = 0;
        skip_data(p, (uint64_t)size);
        if (p->state == TAR_STATE_SKIP)
            p->state = TAR_STATE_EXT;
        else if (type == 'L')
            return fail(p, at, "empty GNU long name"); /* an empty pax header is harmless */
        return true;
    case 'K': /* GNU long link name: links are not members */
        skip_data(p, (uint64_t)size);
        return true;
    case 'g': /* pax global header: nothing of it is used */
        p->has_entry = false;
        skip_data(p, (uint64_t)size);
        return true;
    case 'S': /* GNU sparse: the data is not stored as is */
        return fail(p, at, "GNU sparse file");
    case 'M': /* GNU multi-volume continuation */
        return fail(p, at, "GNU multi-volume entry");
    default:
        break;
    }
    p->has_entry = false;
    const char *name = p->name;
    size_t name_len = p->name_len;
    char buf[F_PREFIX_LEN + 1 + F_NAME_LEN + 1];
    if (!p->has_name) {
        size_t nl = field_len(h + F_NAME, F_NAME_LEN);
        size_t pl = 0;
        /* POSIX ustar ("ustar\0") has a name prefix; GNU ("ustar  ") keeps
         * other fields there. */
        if (memcmp(h + F_MAGIC, "ustar\0", 6) == 0)
            pl = field_len(h + F_PREFIX, F_PREFIX_LEN);
        name_len = 0;
        if (pl) {
            memcpy(buf, h + F_PREFIX, pl);
            buf[pl] = '/';
            name_len = pl + 1;
        }
        memcpy(buf + name_len, h + F_NAME, nl);
        name_len += nl;
        buf[name_len] = '\0';
        name = buf;
    }
    bool is_regular = type == '0' || type == '\0' || type == '7';
    if (type == '\0' && name_len && name[name_len - 1] == '/')
        is_regular = false; /* old tars mark directories by the slash */
    if (type >= '1' && type <= '6') {
        /* Links, devices, directories, FIFOs: no data follows. */
        clear_overrides(p);
        p->state = TAR_STATE_HEADER;
        return true;
    }
    if (is_regular) {
        if (name_len == 0)
            return fail(p, at, "empty member name");
        struct tar_member m = {
            .name = name,
            .name_len = name_len,
            .offset = p->pos,
            .header_offset = p->entry_offset,
            .size = usize,
            .mode = (uint32_t)((uint64_t)mode & 07777),
            .mtime_s = p->has_mtime ? p->next_mtime_s : mtime,
        };
        if (p->fn && p->fn(p->ctx, &m) != 0)
            return fail(p, at, "stopped by the member callback");
    }
    clear_overrides(p);
    skip_data(p, usize);
    return true;
}

/* The data of an 'x' or 'L' entry is complete in 'ext'. */
static bool
on_ext(struct tar_parser *p)
{
    if (p->ext_type == 'x')
        return apply_pax(p) || fail(p, p->entry_offset, "bad pax extended header");
    /* 'L': the name, NUL-terminated (trailing NULs are not part of it). */
    size_t len = field_len(p->ext, p->ext_len);
    return set_name(p, p->ext, len) || fail(p, p->entry_offset, "bad GNU long name");
}

enum tar_status
tar_parser_feed(struct tar_parser *p, const void *data, size_t len)
{
    const uint8_t *s = data;
    while (len && p->state != TAR_STATE_ERROR) {
        size_t n;
        switch (p->state) {
        case TAR_STATE_HEADER:
            n = TAR_BLOCK - p->block_len;
            if (n > len)
                n = len;
            memcpy(p->block + p->block_len, s, n);
            p->block_len += n;
            p->pos += n;
            if (p->block_len == TAR_BLOCK) {
                p->block_len = 0;
                if (!on_header(p))
                    p->state = TAR_STATE_ERROR;
            }
            break;
        case TAR_STATE_EXT:
            n = len < p->left ? len : (size_t)p->left;
            if (p->ext_len < p->ext_size) {
                size_t k = (size_t)(p->ext_size - p->ext_len);
                if (k > n)
                    k = n;
                memcpy(p->ext + p->ext_len, s, k);
                p->ext_len += k;
            }
            p->left -= n;
            p->pos += n;
            if (p->left == 0) {
                p->state = TAR_STATE_HEADER;
                if (!on_ext(p))
                    p->state = TAR_STATE_ERROR;
            }
            break;
        case TAR_STATE_SKIP:
            n = len < p->left ? len : (size_t)p->left;
            p->left -= n;
            p->pos += n;
            if (p->left == 0)
                p->state = TAR_STATE_HEADER;
            break;
        case TAR_STATE_END:
            n = len;
            p->pos += n;
            break;
        case TAR_STATE_ERROR:
        default:
            n = len;
            break;
        }
        s += n;
        len -= n;
    }
    return p->state == TAR_STATE_ERROR ? TAR_ERROR : TAR_OK;
}

enum tar_status
tar_parser_finish(struct tar_parser *p)
{
    bool is_whole =
        p->state == TAR_STATE_END || (p->state == TAR_STATE_HEADER && p->block_len == 0 &&
                                      p->pos > 0 && !p->has_name && !p->has_size && !p->has_mtime);
    if (!is_whole) {
        if (p->state == TAR_STATE_HEADER && p->pos == 0)
            fail(p, 0, "empty archive");
        else if (p->state == TAR_STATE_HEADER && p->block_len > 0)
            fail(p, p->pos - p->block_len, "truncated header");
        else if (p->state == TAR_STATE_HEADER)
            fail(p, p->pos, "truncated after an extended header");
        else
            fail(p, p->pos, "truncated in an entry's data");
        p->state = TAR_STATE_ERROR;
    }
    return is_whole ? TAR_OK : TAR_ERROR;
}

const char *
tar_parser_error(const struct tar_parser *p, uint64_t *offset)
{
    if (offset != NULL)
        *offset = p->error_offset;
    return p->why;
}

uint64_t
tar_parser_skippable(const struct tar_parser *p)
{
    return p->state == TAR_STATE_SKIP ? p->left : 0;
}

void
tar_parser_skip(struct tar_parser *p, uint64_t len)
{
    if (p->state != TAR_STATE_SKIP || len > p->left)
        return;
    p->left -= len;
    p->pos += len;
    if (p->left == 0)
        p->state = TAR_STATE_HEADER;
}

bool
tar_parser_is_end(const struct tar_parser *p)
{
    return p->state == TAR_STATE_END;
}
