/*
 * xml_out.c: XML responses. S3 documents are small and flat, so they are
 * formatted straight into a growable buffer; every text goes through
 * xml_escape, which also escapes control characters as numeric references.
 */
#include "server/server.h"

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
    buf_reserve(b, s.len);
    size_t start = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        const char *rep = NULL;
        char num[8];
        switch (c) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&apos;";
            break;
        default:
            if (c < 0x20 && c != '\t') {
                snprintf(num, sizeof(num), "&#x%X;", c);
                rep = num;
            }
        }
        if (rep) {
            buf_append(b, s.ptr + start, i - start);
            buf_append_str(b, rep);
            start = i + 1;
        }
    }
    buf_append(b, s.ptr + start, s.len - start);
}

void
xml_elem(struct buf *b, const char *name, struct slice value)
{
    buf_printf(b, "<%s>", name);
    xml_escape(b, value);
    buf_printf(b, "</%s>", name);
}

void
xml_elem_key(struct buf *b, const char *name, struct slice value, bool is_url)
{
    if (!is_url) {
        xml_elem(b, name, value);
        return;
    }
    struct buf enc;
    buf_init(&enc);
    uri_encode(&enc, value.ptr, value.len, true);
    xml_elem(b, name, (struct slice){enc.ptr ? enc.ptr : "", enc.len});
    buf_cleanup(&enc);
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
