/*
 * fuzz_xml_tagging.c: libFuzzer target for the object tag parsers:
 * xml_parse_tagging() (the PutObjectTagging body), tags_validate(),
 * tags_parse_header() (x-amz-tagging) and the stored form
 * (tags_encode/tags_decode). Follows h2o fuzz/driver_url.cc: arena ->
 * parse -> assert properties -> clear. Properties: the status is one of
 * the three; on XML_IN_OK at most TAGS_OBJECT_MAX tags, every slice inside
 * the input or the arena; a validated set survives encode -> decode and
 * header-format -> tags_parse_header unchanged; a header that parses gives
 * a valid set; any bytes that decode as the stored form re-encode to
 * exactly those bytes (the form is canonical).
 */
#include "server/tags.h"
#include "server/xml_in.h"
#include "tests/fuzz/xml_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char target[] = "fuzz_xml_tagging";

static bool
same_tags(const struct s3_tag *a, size_t na, const struct s3_tag *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (!slice_eq(a[i].key, b[i].key) || !slice_eq(a[i].value, b[i].value))
            return false;
    return true;
}

/* Appends 's' percent-encoding every byte but letters and digits. */
static void
query_encode(struct buf *b, struct slice s)
{
    static const char hx[] = "0123456789ABCDEF";
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            buf_append(b, &s.ptr[i], 1);
        } else {
            char e[3] = {'%', hx[c >> 4], hx[c & 15]};
            buf_append(b, e, 3);
        }
    }
}

/* Checks that a valid set 'tags'/'n' survives the stored form and the
 * header form. */
static void
check_round_trips(struct arena *a, const struct s3_tag *tags, size_t n)
{
    const uint8_t *enc;
    size_t enc_len;
    struct s3_tag *back;
    size_t n_back;
    tags_encode(a, tags, n, &enc, &enc_len);
    if (!tags_decode(enc, enc_len, a, &back, &n_back) || !same_tags(tags, n, back, n_back))
        fuzz_xml_fail(target, "stored form does not round-trip");

    struct buf h;
    buf_init(&h);
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_append_str(&h, "&");
        query_encode(&h, tags[i].key);
        buf_append_str(&h, "=");
        query_encode(&h, tags[i].value);
    }
    enum tags_error e = tags_parse_header((struct slice){h.ptr, h.len}, a, &back, &n_back);
    if (e != TAGS_OK || !same_tags(tags, n, back, n_back))
        fuzz_xml_fail(target, "header form does not round-trip");
    buf_cleanup(&h);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_span span;
    struct xml_tagging_request req;
    struct arena *a;
    enum xml_in_status st;

    if (size > FUZZ_XML_MAX_INPUT)
        return 0;
    a = fuzz_xml_begin(&span, data, size);
    st = xml_parse_tagging((const char *)data, size, TAGS_OBJECT_MAX, a, &req);
    fuzz_xml_end_parse(&span);

    if (st != XML_IN_OK && st != XML_IN_MALFORMED && st != XML_IN_TOO_MANY)
        fuzz_xml_fail(target, "unknown status");
    if (st == XML_IN_OK) {
        if (req.n_tags > TAGS_OBJECT_MAX)
            fuzz_xml_fail(target, "more tags than asked for");
        if (req.n_tags && !fuzz_xml_in_arena(&span, req.tags, req.n_tags * sizeof(*req.tags)))
            fuzz_xml_fail(target, "tags array outside the arena");
        struct s3_tag *tags = arena_calloc(a, req.n_tags + 1, sizeof(*tags));
        for (size_t i = 0; i < req.n_tags; i++) {
            fuzz_xml_check_slice(&span, req.tags[i].key, target);
            fuzz_xml_check_slice(&span, req.tags[i].value, target);
            if (!req.tags[i].key.ptr || !req.tags[i].value.ptr)
                fuzz_xml_fail(target, "a Tag without its Key or Value parsed");
            tags[i] = (struct s3_tag){req.tags[i].key, req.tags[i].value};
        }
        if (tags_validate(tags, req.n_tags, TAGS_OBJECT_MAX) == TAGS_OK)
            check_round_trips(a, tags, req.n_tags);
    }

    /* The same bytes as an x-amz-tagging header. */
    struct s3_tag *ht;
    size_t hn;
    if (tags_parse_header((struct slice){(const char *)data, size}, a, &ht, &hn) == TAGS_OK) {
        if (hn > TAGS_OBJECT_MAX || tags_validate(ht, hn, TAGS_OBJECT_MAX) != TAGS_OK)
            fuzz_xml_fail(target, "a parsed header gave an invalid set");
        check_round_trips(a, ht, hn);
    }

    /* The same bytes as a stored form: decoding is exact. */
    struct s3_tag *dt;
    size_t dn;
    if (tags_decode(data, size, a, &dt, &dn)) {
        const uint8_t *enc;
        size_t enc_len;
        tags_encode(a, dt, dn, &enc, &enc_len);
        if (enc_len != size || (size && memcmp(enc, data, size) != 0))
            fuzz_xml_fail(target, "stored form is not canonical");
    }
    return 0;
}
