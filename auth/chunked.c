/*
 * chunked.c: resumable decoder for Content-Encoding: aws-chunked bodies,
 * with chunk-signature and trailer-signature verification.
 *
 *   hex-size[;chunk-signature=<64 hex>]\r\n <size bytes> \r\n   (repeated)
 *   0[;chunk-signature=<64 hex>]\r\n
 *   [name:value\r\n ...] [x-amz-trailer-signature:<64 hex>\r\n] \r\n
 *
 * The decoder never allocates and holds at most one header or trailer line
 * (bounded by 'line'); chunk data is handed out in place. Its only state is
 * the caller-owned struct, so input may be split anywhere. Decoded bytes
 * reach the callback before their chunk's signature is checked: a
 * BAD_SIGNATURE result means the caller must discard everything.
 */
#include "config.h"

/* The one-shot SHA256_CTX API keeps the in-progress hash inside the
 * caller's struct (EVP contexts would need an allocation per upload). */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include "auth/auth_int.h"

#include <openssl/sha.h>

#include <stdio.h>

enum {
    ST_SIZE,           /* reading a chunk header line */
    ST_DATA,           /* inside chunk data */
    ST_DATA_CR,        /* the CR after chunk data */
    ST_DATA_LF,        /* the LF after chunk data */
    ST_TRAILER,        /* after the last chunk: trailer lines or the final empty line */
    ST_TRAILER_SIGNED, /* the trailer signature verified: only the final empty line */
    ST_DONE,
    ST_ERROR,
    ST_BAD_SIGNATURE,
};

_Static_assert(sizeof(SHA256_CTX) + 8 <= sizeof(((struct auth_chunked *)0)->sha_space),
               "sha_space too small for SHA256_CTX");

/* The SHA-256 context lives in 'sha_space', aligned to 8. The struct itself
 * is 8-aligned (it holds uint64_t), so the offset is the same in a copy. */
static SHA256_CTX *
sha_ctx(struct auth_chunked *c)
{
    uintptr_t p = (uintptr_t)c->sha_space;
    return (SHA256_CTX *)(void *)(c->sha_space + ((8 - (p & 7)) & 7));
}

void
auth_chunked_init(struct auth_chunked *c, const struct auth_verdict *v)
{
    memset(c, 0, sizeof(*c));
    c->state = ST_SIZE;
    c->is_signed = v->payload == AUTH_PAYLOAD_STREAMING_SIGNED ||
                   v->payload == AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER;
    c->has_trailer = v->payload == AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER ||
                     v->payload == AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    c->trailer_signed = v->payload == AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER;
    c->sha = NULL;
    if (c->is_signed) {
        memcpy(c->signing_key, v->signing_key, sizeof(c->signing_key));
        memcpy(c->prev_signature, v->seed_signature, sizeof(c->prev_signature));
        c->prev_signature[64] = '\0';
        memcpy(c->amz_date, v->amz_date, sizeof(c->amz_date));
        c->amz_date[16] = '\0';
        memcpy(c->scope, v->scope, sizeof(c->scope));
        c->scope[sizeof(c->scope) - 1] = '\0';
    }
}

/* Checks 'c->chunk_signature' against the chunk whose data hashed to the
 * hex digest 'data_hash'. Returns true when it matches and moves the chain
 * on to it. */
static bool
verify_chunk(struct auth_chunked *c, const char *data_hash)
{
    char sts[512], want[65];
    int n = snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n%s\n%s", c->amz_date,
                     c->scope, c->prev_signature, AUTH__EMPTY_SHA256, data_hash);
    if (n < 0 || (size_t)n >= sizeof(sts))
        return false;
    auth__hmac_hex(c->signing_key, sts, (size_t)n, want);
    if (!auth_equal_ct(want, c->chunk_signature, 64))
        return false;
    memcpy(c->prev_signature, c->chunk_signature, 65);
    return true;
}

static bool
verify_trailer(struct auth_chunked *c, const char sig[65])
{
    char sts[512], want[65], hash_hex[65];
    uint8_t hash[32];
    auth_sha256(c->trailer_block, c->trailer_block_len, hash);
    hex_encode(hash, 32, hash_hex);
    int n = snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s", c->amz_date,
                     c->scope, c->prev_signature, hash_hex);
    if (n < 0 || (size_t)n >= sizeof(sts))
        return false;
    auth__hmac_hex(c->signing_key, sts, (size_t)n, want);
    if (!auth_equal_ct(want, sig, 64))
        return false;
    memcpy(c->prev_signature, sig, 65);
    return true;
}

/*
 * Handles the chunk header 'line' (CR stripped): "hex-size[;ext=value...]".
 * Returns the next state (ST_DATA, ST_TRAILER, or an error state).
 */
static int
on_size_line(struct auth_chunked *c, struct slice line)
{
    uint64_t size = 0;
    size_t i = 0;
    bool has_sig = false;
    int d;
    for (; i < line.len && (d = hex_digit_value((unsigned char)line.ptr[i])) >= 0; i++) {
        if (size > (UINT64_MAX >> 4))
            return ST_ERROR;
        size = size << 4 | (uint64_t)d;
    }
    if (i == 0 || size > UINT64_MAX - c->decoded_total)
        return ST_ERROR;
    struct slice rest = slice_trim((struct slice){line.ptr + i, line.len - i});
    while (rest.len > 0) {
        if (rest.ptr[0] != ';')
            return ST_ERROR;
        rest.ptr++;
        rest.len--;
        const char *semi = memchr(rest.ptr, ';', rest.len);
        size_t elen = semi ? (size_t)(semi - rest.ptr) : rest.len;
        struct slice ext = slice_trim((struct slice){rest.ptr, elen});
        rest.ptr += elen;
        rest.len -= elen;
        const char *eq = memchr(ext.ptr, '=', ext.len);
        if (eq == NULL)
            continue; /* a bare extension name: ignored */
        struct slice name = slice_trim((struct slice){ext.ptr, (size_t)(eq - ext.ptr)});
        struct slice value =
            slice_trim((struct slice){eq + 1, ext.len - (size_t)(eq + 1 - ext.ptr)});
        /* Unsigned modes ignore signatures like any other extension. */
        if (c->is_signed && slice_eq(name, SLICE_LIT("chunk-signature"))) {
            if (has_sig || !auth__parse_sig(value, c->chunk_signature))
                return ST_ERROR;
            has_sig = true;
        }
    }
    if (c->is_signed && !has_sig)
        return ST_ERROR;
    if (size == 0) {
        if (c->is_signed && !verify_chunk(c, AUTH__EMPTY_SHA256))
            return ST_BAD_SIGNATURE;
        return ST_TRAILER;
    }
    c->chunk_left = size;
    if (c->is_signed)
        SHA256_Init(sha_ctx(c));
    return ST_DATA;
}

/* Handles one line after the last chunk. Returns the next state. */
static int
on_trailer_line(struct auth_chunked *c, struct slice line)
{
    if (line.len == 0) {
        /* Some clients put an empty line between the checksum and the
         * signature; in signed-trailer mode only the signature ends it. */
        if (c->trailer_signed && c->state == ST_TRAILER)
            return ST_TRAILER;
        return ST_DONE;
    }
    if (!c->has_trailer || c->state != ST_TRAILER)
        return ST_ERROR;
    const char *colon = memchr(line.ptr, ':', line.len);
    if (colon == NULL)
        return ST_ERROR;
    struct slice name = slice_trim((struct slice){line.ptr, (size_t)(colon - line.ptr)});
    struct slice value =
        slice_trim((struct slice){colon + 1, line.len - (size_t)(colon + 1 - line.ptr)});
    if (name.len == 0)
        return ST_ERROR;
    if (slice_eq_nocase(name, "x-amz-trailer-signature")) {
        char sig[65];
        if (!c->trailer_signed || !auth__parse_sig(value, sig))
            return ST_ERROR;
        return verify_trailer(c, sig) ? ST_TRAILER_SIGNED : ST_BAD_SIGNATURE;
    }
    size_t k = c->n_trailers;
    if (k >= AUTH_CHUNKED_MAX_TRAILERS || name.len >= sizeof(c->trailer_name[0]) ||
        value.len >= sizeof(c->trailer_value[0]) ||
        c->trailer_block_len + line.len + 1 > sizeof(c->trailer_block))
        return ST_ERROR;
    memcpy(c->trailer_name[k], name.ptr, name.len);
    c->trailer_name[k][name.len] = '\0';
    memcpy(c->trailer_value[k], value.ptr, value.len);
    c->trailer_value[k][value.len] = '\0';
    c->n_trailers++;
    /* The trailer signature covers each line as sent, "name:value\n". */
    memcpy(c->trailer_block + c->trailer_block_len, line.ptr, line.len);
    c->trailer_block_len += line.len;
    c->trailer_block[c->trailer_block_len++] = '\n';
    return c->state;
}

static enum auth_chunked_status
status_of(int state)
{
    switch (state) {
    case ST_DONE:
        return AUTH_CHUNKED_DONE;
    case ST_ERROR:
        return AUTH_CHUNKED_ERROR;
    case ST_BAD_SIGNATURE:
        return AUTH_CHUNKED_BAD_SIGNATURE;
    default:
        return AUTH_CHUNKED_AGAIN;
    }
}

enum auth_chunked_status
auth_chunked_feed(struct auth_chunked *c, const char *in, size_t len, size_t *consumed,
                  auth_data_fn fn, void *ctx)
{
    size_t i = 0;
    while (i < len && c->state != ST_DONE && c->state != ST_ERROR && c->state != ST_BAD_SIGNATURE) {
        switch (c->state) {
        case ST_DATA: {
            size_t n = len - i;
            if (n > c->chunk_left)
                n = (size_t)c->chunk_left;
            if (fn != NULL && fn(ctx, in + i, n) != 0) {
                c->state = ST_ERROR;
                break;
            }
            if (c->is_signed)
                SHA256_Update(sha_ctx(c), in + i, n);
            i += n;
            c->chunk_left -= n;
            c->decoded_total += n;
            if (c->chunk_left == 0) {
                c->state = ST_DATA_CR;
                if (c->is_signed) {
                    uint8_t h[32];
                    char hex[65];
                    SHA256_Final(h, sha_ctx(c));
                    hex_encode(h, 32, hex);
                    if (!verify_chunk(c, hex))
                        c->state = ST_BAD_SIGNATURE;
                }
            }
            break;
        }
        case ST_DATA_CR:
            /* A bare LF is tolerated after chunk data. */
            c->state = in[i] == '\r' ? ST_DATA_LF : in[i] == '\n' ? ST_SIZE : ST_ERROR;
            i++;
            break;
        case ST_DATA_LF:
            c->state = in[i] == '\n' ? ST_SIZE : ST_ERROR;
            i++;
            break;
        default: {
            /* Line states: collect up to LF, bounded by 'line'. */
            char ch = in[i++];
            if (ch != '\n') {
                if (c->line_len >= sizeof(c->line))
                    c->state = ST_ERROR;
                else
                    c->line[c->line_len++] = ch;
                break;
            }
            struct slice line = {c->line, c->line_len};
            if (line.len > 0 && line.ptr[line.len - 1] == '\r')
                line.len--;
            c->line_len = 0;
            if (c->state == ST_SIZE)
                c->state = on_size_line(c, line);
            else
                c->state = on_trailer_line(c, line);
            break;
        }
        }
    }
    *consumed = i;
    return status_of(c->state);
}

bool
auth_chunked_is_complete_at_eof(const struct auth_chunked *c)
{
    if (c->state == ST_DONE)
        return true;
    bool is_line_empty = c->line_len == 0 || (c->line_len == 1 && c->line[0] == '\r');
    if (c->state == ST_TRAILER_SIGNED)
        return is_line_empty;
    if (c->state == ST_TRAILER && !c->trailer_signed)
        return is_line_empty;
    return false;
}

struct slice
auth_chunked_trailer(const struct auth_chunked *c, const char *name)
{
    struct slice n = slice_from_cstr(name);
    for (size_t i = 0; i < c->n_trailers && i < AUTH_CHUNKED_MAX_TRAILERS; i++)
        if (slice_casecmp(slice_from_cstr(c->trailer_name[i]), n) == 0)
            return slice_from_cstr(c->trailer_value[i]);
    return (struct slice){"", 0};
}

uint64_t
auth_chunked_decoded_len(const struct auth_chunked *c)
{
    return c->decoded_total;
}
