/*
 * op_attributes.c: GetObjectAttributes (GET /bucket/key?attributes): the
 * attributes named in x-amz-object-attributes (ETag, Checksum, ObjectParts,
 * StorageClass, ObjectSize) from the object's record and metadata, without
 * reading its data. ObjectParts pages through the part sizes and part
 * checksums a multipart completion kept (META_PART_SIZES,
 * META_PART_CHECKSUMS) with x-amz-max-parts and x-amz-part-number-marker; a
 * simple object has no parts to list, as in S3. Runs on the event loop (one
 * index read).
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/errors.h"
#include "server/meta.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/util.h"
#include "server/xml_out.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>

enum {
    ATTR_ETAG = 1,
    ATTR_CHECKSUM = 2,
    ATTR_PARTS = 4,
    ATTR_STORAGE_CLASS = 8,
    ATTR_SIZE = 16,
};

static const struct {
    const char *name;
    unsigned bit;
} attr_names[] = {
    {"ETag", ATTR_ETAG},         {"Checksum", ATTR_CHECKSUM},
    {"ObjectParts", ATTR_PARTS}, {"StorageClass", ATTR_STORAGE_CLASS},
    {"ObjectSize", ATTR_SIZE},
};

static const enum auth_checksum_algo algos[] = {
    AUTH_CK_CRC32, AUTH_CK_CRC32C, AUTH_CK_CRC64NVME, AUTH_CK_SHA1, AUTH_CK_SHA256,
};

/* Parses x-amz-object-attributes (comma-separated, every header line of
 * it) into ATTR_* bits. Returns S3_OK, or the error to answer. */
static enum s3_error
attrs_parse(const struct s3_req *r, unsigned *out, const char **msg)
{
    *out = 0;
    for (size_t i = 0; i < r->n_headers; i++) {
        if (!slice_eq_nocase(r->headers[i].name, "x-amz-object-attributes"))
            continue;
        struct slice v = r->headers[i].value;
        size_t a = 0;
        while (a <= v.len) {
            size_t b = a;
            while (b < v.len && v.ptr[b] != ',')
                b++;
            struct slice tok = slice_trim((struct slice){v.ptr + a, b - a});
            a = b + 1;
            if (tok.len == 0)
                continue;
            unsigned bit = 0;
            for (size_t k = 0; k < ARRAY_LEN(attr_names); k++)
                if (slice_eq(tok, slice_from_cstr(attr_names[k].name)))
                    bit = attr_names[k].bit;
            if (!bit) {
                *msg = "Invalid attribute name specified.";
                return S3_ERR_INVALID_ARGUMENT;
            }
            *out |= bit;
        }
    }
    if (*out == 0) {
        *msg = "The x-amz-object-attributes header specifying the attributes to be retrieved is "
               "either missing or empty";
        return S3_ERR_INVALID_REQUEST;
    }
    return S3_OK;
}

/* Reads an optional numeric header into '*out' (bounded by 'max').
 * Returns false when it is present and not a number. */
static bool
header_u64(const struct s3_req *r, const char *name, uint64_t max, uint64_t *out)
{
    struct slice v = slice_trim(s3_req_header(r, name));
    if (!v.ptr)
        return true;
    return parse_u64(v, max, out) == 0;
}

/* The algorithm of the object's checksum and its stored value, or
 * AUTH_CK_NONE. */
static enum auth_checksum_algo
object_checksum(const struct meta *m, struct slice *value)
{
    for (size_t i = 0; i < ARRAY_LEN(algos); i++) {
        struct slice v = meta_get(m, auth_checksum_header(algos[i]));
        if (v.ptr) {
            *value = v;
            return algos[i];
        }
    }
    return AUTH_CK_NONE;
}

/* <ObjectParts> of a multipart object: parts after 'marker', at most
 * 'max', with their sizes and (when kept) checksums. */
static void
parts_xml(struct buf *b, const struct index_object *obj, const struct meta *m,
          enum auth_checksum_algo algo, uint64_t marker, uint64_t max)
{
    struct slice sizes = meta_get(m, META_PART_SIZES);
    struct slice sums = meta_get(m, META_PART_CHECKSUMS);
    size_t dl = algo == AUTH_CK_NONE ? 0 : auth_checksum_len(algo);
    bool has_sums = dl && sums.len == dl * obj->parts_count;
    uint32_t n = obj->parts_count;
    buf_append_str(b, "<ObjectParts>");
    xml_elem_u64(b, "PartsCount", n);
    xml_elem_u64(b, "PartNumberMarker", marker);
    xml_elem_u64(b, "MaxParts", max);
    uint64_t last = marker, shown = 0;
    bool is_truncated = false;
    char name[40];
    for (uint64_t pn = marker + 1; pn <= n; pn++) {
        if (shown == max) {
            is_truncated = true;
            break;
        }
        uint64_t first, len;
        if (!meta_part_sizes_parse(sizes, n, (uint32_t)pn, &first, &len))
            break;
        buf_append_str(b, "<Part>");
        if (has_sums) {
            char b64[64];
            size_t bl = base64_encode(sums.ptr + (pn - 1) * dl, dl, b64);
            snprintf(name, sizeof(name), "Checksum%s", auth_checksum_name(algo));
            xml_elem(b, name, (struct slice){b64, bl});
        }
        xml_elem_u64(b, "PartNumber", pn);
        xml_elem_u64(b, "Size", len);
        buf_append_str(b, "</Part>");
        last = pn;
        shown++;
    }
    xml_elem_bool(b, "IsTruncated", is_truncated);
    if (is_truncated)
        xml_elem_u64(b, "NextPartNumberMarker", last);
    buf_append_str(b, "</ObjectParts>");
}

void
op_get_object_attributes(struct s3_req *r)
{
    struct index_bucket bk;
    const char *msg = NULL;
    unsigned attrs;
    enum s3_error e = attrs_parse(r, &attrs, &msg);
    if (e != S3_OK) {
        s3_respond_error(r, e, msg);
        return;
    }
    uint64_t max_parts = 1000, marker = 0;
    if (!header_u64(r, "x-amz-max-parts", 1000000, &max_parts) ||
        !header_u64(r, "x-amz-part-number-marker", INDEX_MAX_PARTS, &marker)) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid part number marker or max parts");
        return;
    }
    max_parts = MIN(max_parts, 1000);
    const struct s3_param *vid = s3_req_param(r, "versionId");
    if (vid && !slice_eq(vid->value, SLICE_LIT("null"))) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid version id specified");
        return;
    }
    if (!s3_bucket_lookup(r, &bk))
        return;
    struct index_object obj;
    struct meta m;
    int rc = index_object_get(r->srv->index, bk.id, r->key, r->arena, &obj);
    if (rc == -ENOENT) {
        s3_respond_error(r, S3_ERR_NO_SUCH_KEY, NULL);
        return;
    }
    if (rc < 0 || !meta_decode(r->arena, obj.meta, obj.meta_len, &m)) {
        s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
        return;
    }
    e = s3_get_conditions(r, &obj);
    if (e == S3_ERR_NOT_MODIFIED) {
        s3_respond_empty(r, 304);
        return;
    }
    if (e != S3_OK) {
        s3_respond_error(r, e, NULL);
        return;
    }
    struct slice ck = SLICE_NULL;
    enum auth_checksum_algo algo = object_checksum(&m, &ck);

    struct buf b;
    buf_init(&b);
    xml_begin(&b, "GetObjectAttributesResponse");
    if (attrs & ATTR_ETAG) {
        /* Unquoted, as S3 gives it here. */
        char etag[48];
        s3_format_etag(obj.etag, obj.parts_count, etag);
        size_t el = strlen(etag);
        xml_elem(&b, "ETag", (struct slice){etag + 1, el >= 2 ? el - 2 : 0});
    }
    if ((attrs & ATTR_CHECKSUM) && algo != AUTH_CK_NONE) {
        char name[40];
        snprintf(name, sizeof(name), "Checksum%s", auth_checksum_name(algo));
        buf_append_str(&b, "<Checksum>");
        xml_elem(&b, name, ck);
        struct slice type = meta_get(&m, "x-amz-checksum-type");
        if (type.len)
            xml_elem(&b, "ChecksumType", type);
        buf_append_str(&b, "</Checksum>");
    }
    if ((attrs & ATTR_PARTS) && obj.parts_count)
        parts_xml(&b, &obj, &m, algo, marker, max_parts);
    if (attrs & ATTR_STORAGE_CLASS) {
        struct slice sc = meta_get(&m, "x-amz-storage-class");
        xml_elem(&b, "StorageClass", sc.len ? sc : SLICE_LIT("STANDARD"));
    }
    if (attrs & ATTR_SIZE)
        xml_elem_u64(&b, "ObjectSize", obj.size);
    xml_end(&b, "GetObjectAttributesResponse");

    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b.len, b.ptr, MHD_RESPMEM_MUST_COPY);
    buf_cleanup(&b);
    char date[40];
    s3_format_http_date(obj.mtime_ns, date);
    s3_resp_header(resp, "Content-Type", "application/xml");
    s3_resp_header(resp, "Last-Modified", date);
    s3_respond(r, 200, resp);
}
