/*
 * xml_out.h: building S3 XML response documents (xml_out.c). Text is
 * escaped as it is appended; keys may be URL-encoded (encoding-type=url).
 */
#ifndef SHARD_SERVER_XML_OUT_H
#define SHARD_SERVER_XML_OUT_H

#include "common/common.h"

#include <stdbool.h>
#include <stdint.h>

void xml_begin(struct buf *b, const char *root);
void xml_end(struct buf *b, const char *root);
void xml_escape(struct buf *b, struct slice s);
void xml_elem(struct buf *b, const char *name, struct slice value);
/* An element whose text is URL-encoded when 'is_url' (encoding-type=url). */
void xml_elem_key(struct buf *b, const char *name, struct slice value, bool is_url);
void xml_elem_str(struct buf *b, const char *name, const char *value);
void xml_elem_u64(struct buf *b, const char *name, uint64_t v);
void xml_elem_bool(struct buf *b, const char *name, bool v);
/* Appends 's' as a JSON string: quoted, with '"', '\\' and control bytes
 * escaped; other bytes (UTF-8) as they are. */
void json_string(struct buf *b, struct slice s);
/* Builds a complete S3 error document. */
void xml_error(struct buf *b, const char *code, const char *message, struct slice resource,
               const char *request_id);

#endif
