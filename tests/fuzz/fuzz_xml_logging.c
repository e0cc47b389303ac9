/*
 * fuzz_xml_logging.c: libFuzzer target for xml_parse_logging() (the
 * PutBucketLogging body). Properties: the status is OK or MALFORMED (the
 * schema has no count to exceed); on OK the target is set exactly when
 * logging is enabled, and every slice lies inside the arena's output.
 */
#include "server/xml_in.h"
#include "tests/fuzz/xml_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char target[] = "fuzz_xml_logging";
    struct fuzz_span span;
    struct xml_logging_request req;
    struct arena *a;
    enum xml_in_status st;

    if (size > FUZZ_XML_MAX_INPUT)
        return 0;
    a = fuzz_xml_begin(&span, data, size);
    st = xml_parse_logging((const char *)data, size, a, &req);
    fuzz_xml_end_parse(&span);

    if (st != XML_IN_OK && st != XML_IN_MALFORMED)
        fuzz_xml_fail(target, "unknown status");
    if (st != XML_IN_OK)
        return 0;
    if (!req.is_enabled && (req.target_bucket.ptr || req.target_prefix.ptr))
        fuzz_xml_fail(target, "a target without LoggingEnabled");
    if (req.is_enabled && !req.target_bucket.ptr)
        fuzz_xml_fail(target, "LoggingEnabled without its TargetBucket");
    fuzz_xml_check_slice(&span, req.target_bucket, target);
    fuzz_xml_check_slice(&span, req.target_prefix, target);
    return 0;
}
