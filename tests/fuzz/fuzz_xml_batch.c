/*
 * fuzz_xml_batch.c: libFuzzer target for xml_parse_batch() (the batch GET
 * body, POST /bucket?batch). Follows h2o fuzz/driver_url.cc: arena ->
 * parse -> assert properties -> clear. Properties: the status is one of
 * the three; on XML_IN_OK there are 1..10000 entries, each with a
 * non-empty key, a member that is absent or non-empty, and the array and
 * every slice lie inside the input or the arena's output.
 */
#include "server/xml_in.h"
#include "tests/fuzz/xml_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char target[] = "fuzz_xml_batch";
    struct fuzz_span span;
    struct xml_batch_request req;
    struct arena *a;
    enum xml_in_status st;

    if (size > FUZZ_XML_MAX_INPUT)
        return 0;
    a = fuzz_xml_begin(&span, data, size);
    st = xml_parse_batch((const char *)data, size, a, &req);
    fuzz_xml_end_parse(&span);

    if (st != XML_IN_OK && st != XML_IN_MALFORMED && st != XML_IN_TOO_MANY)
        fuzz_xml_fail(target, "unknown status");
    if (st != XML_IN_OK)
        return 0;
    if (req.n_entries < 1 || req.n_entries > XML_IN_BATCH_MAX)
        fuzz_xml_fail(target, "entry count out of 1..10000");
    if (!fuzz_xml_in_arena(&span, req.entries, req.n_entries * sizeof(*req.entries)))
        fuzz_xml_fail(target, "entries array outside the arena");
    for (size_t i = 0; i < req.n_entries; i++) {
        const struct xml_batch_entry *e = &req.entries[i];
        if (e->key.len == 0)
            fuzz_xml_fail(target, "empty key");
        if (e->member.ptr && e->member.len == 0)
            fuzz_xml_fail(target, "empty member");
        fuzz_xml_check_slice(&span, e->key, target);
        fuzz_xml_check_slice(&span, e->member, target);
        fuzz_xml_check_slice(&span, e->range, target);
    }
    return 0;
}
