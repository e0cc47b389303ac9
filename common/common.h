/*
 * common.h: the small helpers every module uses (docs/DESIGN.md, "common/").
 *
 * Slices for network bytes (never assumed NUL-terminated), an arena for
 * request-scoped memory, aborting allocators for small bookkeeping, a
 * leveled logger, base64/hex codecs, HTTP and SigV4 dates and URI
 * percent-coding: one copy of each, for every module. Depends on libc only.
 */
#ifndef SHARD_COMMON_H
#define SHARD_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A borrowed run of bytes. 'ptr' may be NULL when 'len' is 0. */
struct slice {
    const char *ptr;
    size_t len;
};

#define SLICE_LIT(s) ((struct slice){(s), sizeof(s) - 1})
#define SLICE_NULL ((struct slice){NULL, 0})

/* Makes a slice of the NUL-terminated string 's' (NULL gives an empty slice). */
struct slice slice_from_cstr(const char *s);
/* Returns true when 'a' and 'b' hold the same bytes. */
bool slice_eq(struct slice a, struct slice b);
/* Returns true when 'a' equals the C string 'lit', ignoring ASCII case. */
bool slice_eq_nocase(struct slice a, const char *lit);
/* ASCII case-insensitive order: the bytes compared lower-cased, a proper
 * prefix first. Returns <0, 0 (equal ignoring case) or >0. */
int slice_casecmp(struct slice a, struct slice b);
/* 'c' lower-cased when it is an ASCII capital letter, else 'c' itself. */
int ascii_lower(int c);
/* memcmp order; a proper prefix sorts first. Returns <0, 0 or >0. */
int slice_cmp(struct slice a, struct slice b);
/* Returns true when 's' begins with 'prefix'. */
bool slice_has_prefix(struct slice s, struct slice prefix);
/* 's' without leading and trailing spaces and tabs (HTTP's OWS). */
struct slice slice_trim(struct slice s);
/* Splits '*s' at the first 'sep': '*head' gets the part before it and '*s'
 * the rest after it (empty when 'sep' is absent). Returns false, leaving
 * '*head' unset, when '*s' was already empty; so "a&&b" gives "a", "", "b"
 * and a trailing separator gives no empty last part. */
bool slice_split_next(struct slice *s, char sep, struct slice *head);

/* Allocators that abort the process when memory is exhausted; only for
 * small bookkeeping (payload buffers come from bounded pools). */
void *xmalloc(size_t len);
void *xcalloc(size_t n, size_t len);
void *xrealloc(void *p, size_t len);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t len);

/*
 * Arena: many small allocations freed at once. Not thread-safe; one owner.
 * arena_create() never fails (aborts on OOM); arena_destroy(NULL) is a no-op.
 */
struct arena;
struct arena *arena_create(size_t first_block_len);
void arena_destroy(struct arena *a);
/* Frees everything allocated so far but keeps the first block for reuse. */
void arena_clear(struct arena *a);
/* Returns 'len' bytes aligned to 16, valid until the arena is cleared/destroyed. */
void *arena_alloc(struct arena *a, size_t len);
void *arena_calloc(struct arena *a, size_t n, size_t len);
void *arena_memdup(struct arena *a, const void *p, size_t len);
/* Copies 'len' bytes and appends a NUL. */
char *arena_strndup(struct arena *a, const char *s, size_t len);
char *arena_sprintf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Growable byte buffer on the heap; 'buf_cleanup' frees it. */
struct buf {
    char *ptr;
    size_t len;
    size_t cap;
};
void buf_init(struct buf *b);
void buf_cleanup(struct buf *b);
void buf_reserve(struct buf *b, size_t extra);
void buf_append(struct buf *b, const void *p, size_t len);
void buf_append_str(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logging. Messages go to stderr with a timestamp and level. Never pass a
 * secret to these. */
enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };
void log_set_level(enum log_level lvl);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/* Corruption found in storage or index: logs file:line (one breakpoint
 * catches every case) and evaluates to -EIO. */
int common_corrupt(const char *file, int line, const char *what);
#define CORRUPT_BKPT(what) common_corrupt(__FILE__, __LINE__, (what))

/* Base64 (standard alphabet, padded). encode writes base64_encoded_len(n)
 * bytes plus a NUL. decode returns the decoded length, or -1 on bad input;
 * 'out' needs base64_decoded_cap(len) bytes. */
size_t base64_encoded_len(size_t n);
size_t base64_encode(const void *in, size_t n, char *out);
size_t base64_decoded_cap(size_t len);
long base64_decode(const char *in, size_t len, void *out);

/* Lower-case hex; 'out' gets 2n chars plus a NUL. */
void hex_encode(const void *in, size_t n, char *out);
/* Writes 'v' in decimal (no NUL) into 'out' (>= 20 bytes); returns the length. */
size_t u64_format(uint64_t v, char *out);
/* Writes code point 'cp' (at most 0x10ffff) as UTF-8 into 'out' (room for 4
 * bytes, no NUL); returns the byte count. */
size_t utf8_encode(char *out, unsigned cp);
/* Returns 0 and fills 'out' with len/2 bytes, or -1 when not even-length hex
 * (either case). */
int hex_decode(const char *in, size_t len, void *out);
/* The value (0-15) of hex digit 'c' in either case, or -1. */
int hex_digit_value(int c);
/* "0123456789abcdef" and "0123456789ABCDEF", for formatters that write
 * digits one at a time (%XX escapes, XML character references, ids). */
extern const char hex_digits_lower[16];
extern const char hex_digits_upper[16];

/* ---- dates (date.c): UTC, years 0 to 9999, no locale, thread-safe ------ */

/* Days since 1970-01-01 of the proleptic Gregorian date 'y'-'m'-'d' (month
 * 1-12, day 1-31; not range-checked: the caller validates). Negative before
 * 1970. H. Hinnant's days_from_civil; exact for any int64 date it can hold. */
int64_t days_from_civil(int64_t y, int64_t m, int64_t d);
/* The proleptic Gregorian date of 'days' since 1970-01-01 (negative before)
 * into '*y', '*m' (1-12) and '*d' (1-31); the inverse of days_from_civil. */
void civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

/* Writes the IMF-fixdate of 's' seconds since the epoch (RFC 9110, e.g.
 * "Sun, 06 Nov 1994 08:49:37 GMT", 29 bytes) and a NUL into 'out' (>= 30
 * bytes), as strftime("%a, %d %b %Y %H:%M:%S GMT") of gmtime would, for
 * years 0 to 9999, without the time-zone lock gmtime takes. Returns 29. */
size_t http_date_format(int64_t s, char *out);
/*
 * Parses an HTTP date in each form RFC 9110 has recipients accept:
 * IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT" (the weekday, when present,
 * must be a weekday name but is not checked against the date; it may be
 * left out with its comma; the day may have one digit), RFC 850
 * "Sunday, 06-Nov-94 08:49:37 GMT" (two-digit years as POSIX %y: 69-99 are
 * 19xx) and asctime "Sun Nov  6 08:49:37 1994"; also ISO 8601
 * "1994-11-06T08:49:37Z" and "1994-11-06T08:49:37.000Z", which some S3
 * clients send in conditional headers. Names in any case; surrounding
 * spaces ignored; the date must exist (no Feb 30). Returns 0 and the
 * seconds since the epoch in '*out_s', or -1.
 */
int http_date_parse(struct slice s, int64_t *out_s);
/* Parses SigV4's "YYYYMMDDTHHMMSSZ" (exactly 16 bytes). Returns 0 or -1. */
int amz_date_parse(struct slice s, int64_t *out_s);
/* Writes "YYYYMMDDTHHMMSSZ" and a NUL for 's' (clamped to 1970..9999). */
void amz_date_format(int64_t s, char out[17]);
/* Parses an ISO 8601 date ("2024-05-01", "2024-05-01T12:00:00Z", optional
 * fractional seconds) or a count of epoch seconds into Unix seconds
 * (bucket policy Date conditions, POST policy expirations). Returns false
 * when malformed. */
bool iso_date_parse(struct slice s, int64_t *out);

/* ---- URI percent-coding (uri.c) ------------------------------------------- */

/* Writes 'in' percent-encoded into 'out' (room for 3 * 'len' bytes; no
 * NUL): RFC 3986 unreserved bytes (A-Z a-z 0-9 - _ . ~), and '/' when
 * 'keep_slash', as they are; every other byte as %XX, upper-case hex (the
 * SigV4 and S3 encoding-type=url form). Returns the end of the output. */
char *uri_encode_to(char *out, const char *in, size_t len, bool keep_slash);
/* uri_encode_to appended to 'b', which stays NUL-terminated. */
void uri_encode(struct buf *b, const char *in, size_t len, bool keep_slash);
/* Percent-decodes 'in' into 'out' (room for 'len' bytes: decoding never
 * grows; 'out' may be 'in'). '+' stays '+'. Returns the decoded length, or
 * -1 when a '%' is not followed by two hex digits (nothing is guessed). */
long uri_decode(const char *in, size_t len, char *out);

/* Parses a decimal uint64 of the whole slice with overflow checks.
 * Returns 0, or -1 when empty, not all digits, or larger than 'max'. */
int parse_u64(struct slice s, uint64_t max, uint64_t *out);

/* Parses a size: decimal digits, then optionally a unit K, M, G or T (either
 * case; powers of 1024) which may be followed by "B" or "iB" ("64K", "64KB",
 * "64KiB" are 65536). Nothing else: no sign, space, fraction, bare "B" or
 * second suffix ("64KBB"). The one rule of the server's config and the shard
 * tool. Returns 0, or -1 (empty, junk, overflow). */
int parse_size(const char *s, uint64_t *out);

/* Wall clock in nanoseconds since the epoch, and monotonic nanoseconds. */
int64_t clock_now_ns(void);
int64_t clock_mono_ns(void);

/* ---- durable directory entries (file.c) ---- */

/* fsyncs directory 'dir', so that entries created in it (new files and
 * directories) survive a power loss. Returns 0 or -errno. */
int dir_sync(const char *dir);
/* dir_sync of the directory that holds 'path' ("." for a bare name). */
int dir_sync_parent(const char *path);

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ALIGN_UP(x, a) (((x) + ((a)-1)) & ~((uint64_t)(a)-1))

/*
 * JSON (json.c): a strict parser for small documents (bucket policies, POST
 * policy documents). The tree lives in the caller's arena; nesting is at
 * most JSON_MAX_DEPTH. Strings are decoded UTF-8, NUL-terminated; numbers
 * keep their source text in 'str'. Arrays and objects chain their members
 * through 'first'/'next' in document order ('name' set for object members).
 */
#define JSON_MAX_DEPTH 16
enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };
struct json_value {
    enum json_type type;
    struct slice name;        /* member name inside an object */
    struct slice str;         /* JSON_STRING (decoded), JSON_NUMBER (text) */
    bool boolean;             /* JSON_BOOL */
    struct json_value *first; /* JSON_ARRAY, JSON_OBJECT: the members */
    struct json_value *next;  /* the next member of the parent */
    size_t n;                 /* number of members */
};
/* Parses 'len' bytes at 'in' into 'out' (allocating in 'a'). Returns 0,
 * or -1 when the text is not one well-formed JSON value or nests deeper
 * than JSON_MAX_DEPTH. */
int json_parse(const char *in, size_t len, struct arena *a, struct json_value *out);
/* The first member named 'name' of object 'obj' (case-sensitive), or NULL
 * (also when 'obj' is NULL or not an object). */
const struct json_value *json_member(const struct json_value *obj, const char *name);

#endif
