/*
 * fuzz_xml_delete.c: libFuzzer target for xml_parse_delete() (the
 * DeleteObjects body). Follows h2o fuzz/driver_url.cc: arena -> parse ->
 * assert properties -> clear. Properties: the status is one of the three;
 * on XML_IN_OK there are 1..1000 objects, each with a non-empty key, and
 * the array and every slice lie inside the input or the arena's output.
 */
#include "server/xml_in.h"
#include "tests/fuzz/xml_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char target[] = "fuzz_xml_delete";
    struct fuzz_span span;
    struct xml_delete_request req;
    struct arena *a;
    enum xml_in_status st;

    if (size > FUZZ_XML_MAX_INPUT)
        return 0;
    a = fuzz_xml_begin(&span, data, size);
    st = xml_parse_delete((const char *)data, size, a, &req);
    fuzz_xml_end_parse(&span);

    if (st != XML_IN_OK && st != XML_IN_MALFORMED && st != XML_IN_TOO_MANY)
        fuzz_xml_fail(target, "unknown status");
    if (st != XML_IN_OK)
        return 0;
    if (req.n_objects < 1 || req.n_objects > XML_IN_DELETE_MAX)
        fuzz_xml_fail(target, "object count out of 1..1000");
    if (!fuzz_xml_in_arena(&span, req.objects, req.n_objects * sizeof(*req.objects)))
        fuzz_xml_fail(target, "objects array outside the arena");
    for (size_t i = 0; i < req.n_objects; i++) {
        if (req.objects[i].key.len == 0)
            fuzz_xml_fail(target, "empty key");
        fuzz_xml_check_slice(&span, req.objects[i].key, target);
        fuzz_xml_check_slice(&span, req.objects[i].version_id, target);
        fuzz_xml_check_slice(&span, req.objects[i].etag, target);
        fuzz_xml_check_slice(&span, req.objects[i].last_modified, target);
        fuzz_xml_check_slice(&span, req.objects[i].size, target);
    }
    return 0;
}
