/*
 * fuzz_xml_complete.c: libFuzzer target for xml_parse_complete() (the
 * CompleteMultipartUpload body). Follows h2o fuzz/driver_url.cc: arena ->
 * parse -> assert properties -> clear. Properties: the status is one of
 * the three; on XML_IN_OK there are 1..10000 parts, each numbered
 * 1..10000, and the array and every slice lie inside the input or the
 * arena's output.
 */
#include "server/xml_in.h"
#include "tests/fuzz/xml_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char target[] = "fuzz_xml_complete";
    struct fuzz_span span;
    struct xml_complete_request req;
    struct arena *a;
    enum xml_in_status st;

    if (size > FUZZ_XML_MAX_INPUT)
        return 0;
    a = fuzz_xml_begin(&span, data, size);
    st = xml_parse_complete((const char *)data, size, a, &req);
    fuzz_xml_end_parse(&span);

    if (st != XML_IN_OK && st != XML_IN_MALFORMED && st != XML_IN_TOO_MANY)
        fuzz_xml_fail(target, "unknown status");
    if (st != XML_IN_OK)
        return 0;
    if (req.n_parts < 1 || req.n_parts > XML_IN_PARTS_MAX)
        fuzz_xml_fail(target, "part count out of 1..10000");
    if (!fuzz_xml_in_arena(&span, req.parts, req.n_parts * sizeof(*req.parts)))
        fuzz_xml_fail(target, "parts array outside the arena");
    for (size_t i = 0; i < req.n_parts; i++) {
        const struct xml_complete_part *p = &req.parts[i];
        if (p->part_number < 1 || p->part_number > XML_IN_PARTS_MAX)
            fuzz_xml_fail(target, "part number out of 1..10000");
        fuzz_xml_check_slice(&span, p->etag, target);
        fuzz_xml_check_slice(&span, p->checksum_crc32, target);
        fuzz_xml_check_slice(&span, p->checksum_crc32c, target);
        fuzz_xml_check_slice(&span, p->checksum_crc64nvme, target);
        fuzz_xml_check_slice(&span, p->checksum_sha1, target);
        fuzz_xml_check_slice(&span, p->checksum_sha256, target);
    }
    return 0;
}
