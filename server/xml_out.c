/*
 * xml_out.c: XML responses. S3 documents are small and flat, so they are
 * formatted straight into a growable buffer; every text goes through
 * xml_escape, whose rules (key.h: xml_text_put) keep the document
 * well-formed XML 1.0 whatever bytes a key or a message holds. JSON strings
 * for the JSON variants of listings are escaped here too.
 */
#include "config.h"

#include "common/common.h"
#include "server/key.h"
#include "server/util.h"
#include "server/xml_out.h"

#include <inttypes.h>
#include <stdio.h>

void
xml_begin(struct buf *b, const char *root)
{
    buf_printf(b,
               "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s "
               "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
               root);
}

void
xml_end(struct buf *b, const char *root)
{
    buf_printf(b, "</%s>", root);
}

void
xml_escape(struct buf *b, struct slice s)
{
    buf_reserve(b, s.len * XML_TEXT_EXPANSION);
    char *end = xml_text_put(b->ptr + b->len, s);
    b->len = (size_t)(end - b->ptr);
    b->ptr[b->len] = '\0';
}

/* "<name>" and "</name>" by plain appends: listings write a dozen
 * elements per entry, and buf_printf's format parsing showed in perf. */
static void
xml_open(struct buf *b, const char *name)
{
    buf_append(b, "<", 1);
    buf_append_str(b, name);
    buf_append(b, ">", 1);
}

static void
xml_close(struct buf *b, const char *name)
{
    buf_append(b, "</", 2);
    buf_append_str(b, name);
    buf_append(b, ">", 1);
}

void
xml_elem(struct buf *b, const char *name, struct slice value)
{
    xml_open(b, name);
    xml_escape(b, value);
    xml_close(b, name);
}

void
xml_elem_key(struct buf *b, const char *name, struct slice value, bool is_url)
{
    if (!is_url) {
        xml_elem(b, name, value);
        return;
    }
    /* A URI-encoded key is unreserved bytes, '/' and %XX: nothing to escape. */
    xml_open(b, name);
    uri_encode(b, value.ptr, value.len, true);
    xml_close(b, name);
}

void
xml_elem_str(struct buf *b, const char *name, const char *value)
{
    xml_elem(b, name, slice_from_cstr(value));
}

void
xml_elem_u64(struct buf *b, const char *name, uint64_t v)
{
    buf_printf(b, "<%s>%" PRIu64 "</%s>", name, v, name);
}

void
xml_elem_bool(struct buf *b, const char *name, bool v)
{
    buf_printf(b, "<%s>%s</%s>", name, v ? "true" : "false", name);
}

void
xml_error(struct buf *b, const char *code, const char *message, struct slice resource,
          const char *request_id)
{
    buf_append_str(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
    xml_elem_str(b, "Code", code);
    xml_elem_str(b, "Message", message);
    if (resource.len)
        xml_elem(b, "Resource", resource);
    xml_elem_str(b, "RequestId", request_id);
    xml_elem_str(b, "HostId", "shardstore");
    buf_append_str(b, "</Error>");
}

void
json_string(struct buf *b, struct slice s)
{
    buf_append_str(b, "\"");
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            buf_printf(b, "\\u%04x", c);
        else
            buf_append(b, &s.ptr[i], 1);
    }
    buf_append_str(b, "\"");
}
