/*
 * form.c: streaming multipart/form-data (RFC 7578) for POST Object.
 *
 * The body is a preamble, then parts separated by "\r\n--BOUNDARY"; after
 * each delimiter "--" ends the body and "\r\n" starts a part's headers,
 * which end at an empty line. Part content is scanned for the delimiter
 * with a partial-match counter that survives across feeds: bytes that
 * might begin a delimiter are held back (only as a count: they equal the
 * delimiter's prefix) and given to on_data once a mismatch shows they were
 * content. So content reaches on_data exactly once, in order, whatever
 * the feed sizes, and nothing but one part's header block is buffered.
 */
#include "server/form.h"

#include <strings.h>

enum { S_PREAMBLE, S_AFTER_DELIM, S_HEADERS, S_DATA, S_DONE, S_ERROR, S_STOPPED };

bool
form_boundary_parse(struct slice ct, char out[FORM_BOUNDARY_MAX + 1])
{
    struct slice item;
    bool is_form = false, has_boundary = false;
    bool is_first = true;
    while (slice_split_next(&ct, ';', &item)) {
        item = slice_trim(item);
        if (is_first) {
            is_form = slice_eq_nocase(item, "multipart/form-data");
            is_first = false;
            continue;
        }
        if (item.len > 9 && slice_eq_nocase((struct slice){item.ptr, 9}, "boundary=")) {
            struct slice v = {item.ptr + 9, item.len - 9};
            if (v.len >= 2 && v.ptr[0] == '"' && v.ptr[v.len - 1] == '"') {
                v.ptr++;
                v.len -= 2;
            }
            if (v.len == 0 || v.len > FORM_BOUNDARY_MAX)
                return false;
            memcpy(out, v.ptr, v.len);
            out[v.len] = '\0';
            has_boundary = true;
        }
    }
    return is_form && has_boundary;
}

void
form_parser_init(struct form_parser *p, const char *boundary)
{
    size_t n = strlen(boundary);
    memset(p, 0, sizeof(*p));
    if (n == 0 || n > FORM_BOUNDARY_MAX) {
        p->state = S_ERROR;
        return;
    }
    memcpy(p->delim, "\r\n--", 4);
    memcpy(p->delim + 4, boundary, n);
    p->delim_len = n + 4;
    /* The first delimiter may open the body, without the CRLF before it. */
    p->state = S_PREAMBLE;
    p->matched = 2;
}

/* Copies a parameter value (quoted or a token) into 'out'. */
static bool
param_copy(struct slice v, char *out, size_t cap)
{
    v = slice_trim(v);
    if (v.len >= 2 && v.ptr[0] == '"' && v.ptr[v.len - 1] == '"') {
        v.ptr++;
        v.len -= 2;
    }
    size_t n = 0;
    for (size_t i = 0; i < v.len; i++) {
        char c = v.ptr[i];
        /* Only \" and \\ are escapes: browsers send Windows paths as is. */
        if (c == '\\' && i + 1 < v.len && (v.ptr[i + 1] == '"' || v.ptr[i + 1] == '\\'))
            c = v.ptr[++i];
        if (n + 1 >= cap)
            return false;
        out[n++] = c;
    }
    out[n] = '\0';
    return true;
}

/* Parses a Content-Disposition value into 'part'. */
static bool
disposition_parse(struct slice v, struct form_part *part)
{
    struct slice item;
    bool is_first = true, has_name = false;
    /* Quoted values may hold ';': split by hand, honouring quotes. */
    while (v.len) {
        size_t i = 0;
        bool in_quote = false;
        for (; i < v.len; i++) {
            if (v.ptr[i] == '"')
                in_quote = !in_quote;
            else if (v.ptr[i] == '\\' && in_quote && i + 1 < v.len)
                i++;
            else if (v.ptr[i] == ';' && !in_quote)
                break;
        }
        item = slice_trim((struct slice){v.ptr, i});
        v = i < v.len ? (struct slice){v.ptr + i + 1, v.len - i - 1} : SLICE_NULL;
        if (is_first) {
            if (!slice_eq_nocase(item, "form-data"))
                return false;
            is_first = false;
            continue;
        }
        const char *eq = memchr(item.ptr, '=', item.len);
        if (!eq)
            continue;
        struct slice pname = slice_trim((struct slice){item.ptr, (size_t)(eq - item.ptr)});
        struct slice pval = {eq + 1, item.len - (size_t)(eq + 1 - item.ptr)};
        if (slice_eq_nocase(pname, "name")) {
            if (!param_copy(pval, part->name, sizeof(part->name)))
                return false;
            has_name = true;
        } else if (slice_eq_nocase(pname, "filename")) {
            if (!param_copy(pval, part->filename, sizeof(part->filename)))
                return false;
            part->has_filename = true;
        }
    }
    return has_name && part->name[0];
}

/* Parses the header block of a part (without its final empty line). */
static bool
headers_parse(struct form_parser *p)
{
    struct slice block = {p->header, p->header_len};
    struct slice line;
    bool has_disposition = false;
    memset(&p->part, 0, sizeof(p->part));
    while (block.len) {
        const char *crlf = NULL;
        for (size_t i = 0; i + 1 < block.len; i++)
            if (block.ptr[i] == '\r' && block.ptr[i + 1] == '\n') {
                crlf = block.ptr + i;
                break;
            }
        size_t n = crlf ? (size_t)(crlf - block.ptr) : block.len;
        line = (struct slice){block.ptr, n};
        block = crlf ? (struct slice){crlf + 2, block.len - n - 2} : SLICE_NULL;
        if (line.len == 0)
            continue;
        const char *colon = memchr(line.ptr, ':', line.len);
        if (!colon)
            return false;
        struct slice name = slice_trim((struct slice){line.ptr, (size_t)(colon - line.ptr)});
        struct slice value =
            slice_trim((struct slice){colon + 1, (size_t)(line.ptr + line.len - colon - 1)});
        if (slice_eq_nocase(name, "content-disposition")) {
            if (has_disposition || !disposition_parse(value, &p->part))
                return false;
            has_disposition = true;
        } else if (slice_eq_nocase(name, "content-type")) {
            if (!param_copy(value, p->part.content_type, sizeof(p->part.content_type)))
                return false;
        }
    }
    return has_disposition;
}

/* Passes the held-back delimiter prefix on as content (not in the
 * preamble). Returns false when a callback stopped. */
static bool
flush_matched(struct form_parser *p, const struct form_callbacks *cb, void *ctx)
{
    size_t n = p->matched;
    p->matched = 0;
    if (p->state == S_DATA && n && cb->on_data(ctx, p->delim, n) != 0)
        return false;
    return true;
}

enum form_status
form_parser_feed(struct form_parser *p, const char *data, size_t len,
                 const struct form_callbacks *cb, void *ctx)
{
    size_t i = 0;
    while (i < len) {
        switch (p->state) {
        case S_DONE:
            return FORM_DONE;
        case S_ERROR:
            return FORM_ERROR;
        case S_STOPPED:
            return FORM_STOPPED;
        case S_PREAMBLE:
        case S_DATA: {
            if (p->matched == 0) {
                /* Fast path: content up to the next CR. */
                const char *cr = memchr(data + i, '\r', len - i);
                size_t n = cr ? (size_t)(cr - (data + i)) : len - i;
                if (n && p->state == S_DATA && cb->on_data(ctx, data + i, n) != 0) {
                    p->state = S_STOPPED;
                    return FORM_STOPPED;
                }
                i += n;
                if (!cr)
                    break;
            }
            char c = data[i];
            if (c == p->delim[p->matched]) {
                i++;
                if (++p->matched < p->delim_len)
                    break;
                p->matched = 0;
                if (p->state == S_DATA && cb->on_part_end(ctx) != 0) {
                    p->state = S_STOPPED;
                    return FORM_STOPPED;
                }
                p->state = S_AFTER_DELIM;
                p->after = 0;
                break;
            }
            /* Mismatch: what was held back was content; look at 'c' again
             * (it may start a delimiter). */
            bool was_matching = p->matched > 0;
            if (!flush_matched(p, cb, ctx)) {
                p->state = S_STOPPED;
                return FORM_STOPPED;
            }
            if (!was_matching) {
                /* A CR that does not start the delimiter's CRLF: content. */
                if (p->state == S_DATA && cb->on_data(ctx, data + i, 1) != 0) {
                    p->state = S_STOPPED;
                    return FORM_STOPPED;
                }
                i++;
            }
            break;
        }
        case S_AFTER_DELIM: {
            char c = data[i++];
            if (p->after == 0 && (c == ' ' || c == '\t'))
                break; /* transport padding */
            p->after_buf[p->after++] = c;
            if (p->after < 2)
                break;
            if (p->after_buf[0] == '-' && p->after_buf[1] == '-') {
                p->state = S_DONE;
                return FORM_DONE;
            }
            if (p->after_buf[0] != '\r' || p->after_buf[1] != '\n') {
                p->state = S_ERROR;
                return FORM_ERROR;
            }
            p->state = S_HEADERS;
            p->header_len = 0;
            break;
        }
        case S_HEADERS: {
            if (p->header_len == sizeof(p->header)) {
                p->state = S_ERROR;
                return FORM_ERROR;
            }
            p->header[p->header_len++] = data[i++];
            size_t n = p->header_len;
            bool is_end = (n == 2 && memcmp(p->header, "\r\n", 2) == 0) ||
                          (n >= 4 && memcmp(p->header + n - 4, "\r\n\r\n", 4) == 0);
            if (!is_end)
                break;
            p->header_len = n == 2 ? 0 : n - 4;
            if (!headers_parse(p)) {
                p->state = S_ERROR;
                return FORM_ERROR;
            }
            p->n_parts++;
            p->state = S_DATA;
            p->matched = 0;
            if (cb->on_part(ctx, &p->part) != 0) {
                p->state = S_STOPPED;
                return FORM_STOPPED;
            }
            break;
        }
        }
    }
    switch (p->state) {
    case S_DONE:
        return FORM_DONE;
    case S_ERROR:
        return FORM_ERROR;
    case S_STOPPED:
        return FORM_STOPPED;
    default:
        return FORM_AGAIN;
    }
}
