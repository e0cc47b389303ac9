/*
 * form.h: a streaming multipart/form-data parser (form.c), for POST Object
 * (browser form uploads). It is fed the body in pieces of any size and
 * reports parts through callbacks; a part's content is passed on as it
 * arrives, never buffered whole, so a file part of any size streams. The
 * only memory is the parser struct (headers of one part at most
 * FORM_HEADER_MAX bytes).
 */
#ifndef SHARD_SERVER_FORM_H
#define SHARD_SERVER_FORM_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>

#define FORM_BOUNDARY_MAX 70 /* RFC 2046 */
#define FORM_HEADER_MAX 4096 /* the header block of one part */
#define FORM_NAME_MAX 256

/* A part's headers, as parsed from its Content-Disposition and
 * Content-Type. Strings are NUL-terminated (a longer value is an error). */
struct form_part {
    char name[FORM_NAME_MAX + 1];
    char filename[FORM_NAME_MAX + 1];
    bool has_filename;
    char content_type[FORM_NAME_MAX + 1];
};

/* Callbacks; each returns 0 to go on, anything else to stop the parse
 * (form_parser_feed then returns FORM_STOPPED). */
struct form_callbacks {
    int (*on_part)(void *ctx, const struct form_part *part);
    int (*on_data)(void *ctx, const char *data, size_t len);
    int (*on_part_end)(void *ctx);
};

enum form_status {
    FORM_AGAIN,   /* consumed everything; more input expected */
    FORM_DONE,    /* the closing delimiter was seen (the epilogue is ignored) */
    FORM_ERROR,   /* malformed */
    FORM_STOPPED, /* a callback asked to stop */
};

struct form_parser {
    int state;
    char delim[FORM_BOUNDARY_MAX + 4]; /* "\r\n--" boundary */
    size_t delim_len;
    size_t matched; /* bytes of 'delim' matched so far */
    size_t after;   /* bytes seen after a full delimiter ("--" or "\r\n") */
    char after_buf[2];
    char header[FORM_HEADER_MAX];
    size_t header_len;
    struct form_part part;
    size_t n_parts;
};

/* Reads the boundary parameter of a Content-Type value
 * ("multipart/form-data; boundary=XYZ", quoted or not) into 'out'
 * (NUL-terminated). Returns false when the type is not
 * multipart/form-data or the boundary is missing or too long. */
bool form_boundary_parse(struct slice content_type, char out[FORM_BOUNDARY_MAX + 1]);
/* Initializes 'p' for 'boundary' (1..FORM_BOUNDARY_MAX bytes). */
void form_parser_init(struct form_parser *p, const char *boundary);
/* Feeds 'len' bytes; calls the callbacks (with 'ctx') as parts appear.
 * Returns FORM_AGAIN, FORM_DONE (further input is ignored), FORM_ERROR
 * or FORM_STOPPED; after DONE, ERROR or STOPPED it returns the same. */
enum form_status form_parser_feed(struct form_parser *p, const char *data, size_t len,
                                  const struct form_callbacks *cb, void *ctx);

#endif
