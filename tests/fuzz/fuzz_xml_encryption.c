/*
 * fuzz_xml_encryption.c: libFuzzer target for xml_parse_encryption() (the
 * PutBucketEncryption body). Properties: the status is one of the three;
 * on XML_IN_OK at most XML_IN_ENCRYPTION_RULES_MAX rules, every slice NULL
 * or inside the arena and NUL-terminated; a value present in a rule came
 * from inside its ApplyServerSideEncryptionByDefault (the algorithm and
 * key id) only when that element was seen.
 */
#include "server/xml_in.h"
#include "tests/fuzz/xml_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char target[] = "fuzz_xml_encryption";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_span span;
    struct xml_encryption_request req;
    struct arena *a;
    enum xml_in_status st;

    if (size > FUZZ_XML_MAX_INPUT)
        return 0;
    a = fuzz_xml_begin(&span, data, size);
    st = xml_parse_encryption((const char *)data, size, a, &req);
    fuzz_xml_end_parse(&span);

    if (st != XML_IN_OK && st != XML_IN_MALFORMED && st != XML_IN_TOO_MANY)
        fuzz_xml_fail(target, "unknown status");
    if (st == XML_IN_OK) {
        if (req.n_rules > XML_IN_ENCRYPTION_RULES_MAX)
            fuzz_xml_fail(target, "more rules than the maximum");
        for (size_t i = 0; i < req.n_rules; i++) {
            const struct xml_encryption_rule *rule = &req.rules[i];
            fuzz_xml_check_slice(&span, rule->algorithm, target);
            fuzz_xml_check_slice(&span, rule->kms_key_id, target);
            fuzz_xml_check_slice(&span, rule->bucket_key_enabled, target);
            if (!rule->has_default && (rule->algorithm.ptr || rule->kms_key_id.ptr))
                fuzz_xml_fail(target, "an algorithm outside ApplyServerSideEncryptionByDefault");
        }
    }
    return 0;
}
