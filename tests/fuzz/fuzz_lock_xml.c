/*
 * fuzz_lock_xml.c: libFuzzer target for the versioning and Object Lock
 * bodies (lock_xml.c over xml_parse_fields): VersioningConfiguration,
 * ObjectLockConfiguration, Retention, LegalHold, and ISO 8601 dates.
 * Follows h2o fuzz/driver_url.cc: arena -> parse -> assert properties ->
 * clear. Properties: every status is one of the enum's; a parsed
 * ObjectLockConfiguration survives format -> parse unchanged and has one
 * period in range; a parsed retention without a mode has no date;
 * a date that parses lies between 1970 and LOCK_DATE_MAX_YEAR and parses again
 * to the same instant with its fraction cut off at a second boundary.
 */
#include "server/lock_xml.h"
#include "server/xml_in.h"
#include "tests/fuzz/xml_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char target[] = "fuzz_lock_xml";

static bool
status_is_known(enum lock_xml_status s)
{
    return s == LOCK_XML_OK || s == LOCK_XML_MALFORMED || s == LOCK_XML_INVALID ||
           s == LOCK_XML_UNSUPPORTED;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_span span;
    struct arena *a;
    const char *body = (const char *)data;

    if (size > FUZZ_XML_MAX_INPUT)
        return 0;
    a = fuzz_xml_begin(&span, data, size);

    int vstatus;
    enum lock_xml_status st = versioning_xml_parse(body, size, a, &vstatus);
    if (!status_is_known(st) || (st == LOCK_XML_OK && (vstatus < 0 || vstatus > 2)))
        fuzz_xml_fail(target, "versioning: bad status");

    struct lock_conf c, back;
    st = lock_conf_parse(body, size, a, &c);
    if (!status_is_known(st))
        fuzz_xml_fail(target, "lock configuration: unknown status");
    if (st == LOCK_XML_OK) {
        if (c.has_default && ((c.days == 0) == (c.years == 0) || c.days > LOCK_MAX_DAYS ||
                              c.years > LOCK_MAX_YEARS ||
                              (c.mode != LOCK_MODE_GOVERNANCE && c.mode != LOCK_MODE_COMPLIANCE)))
            fuzz_xml_fail(target, "lock configuration out of range");
        struct buf b;
        buf_init(&b);
        lock_conf_format(&b, &c);
        if (lock_conf_parse(b.ptr, b.len, a, &back) != LOCK_XML_OK ||
            back.has_default != c.has_default || back.mode != c.mode || back.days != c.days ||
            back.years != c.years)
            fuzz_xml_fail(target, "lock configuration does not round-trip");
        buf_cleanup(&b);
    }

    int mode;
    int64_t until;
    st = retention_xml_parse(body, size, a, &mode, &until);
    if (!status_is_known(st))
        fuzz_xml_fail(target, "retention: unknown status");
    if (st == LOCK_XML_OK && mode == LOCK_MODE_NONE && until != 0)
        fuzz_xml_fail(target, "retention: a mode without a date or the reverse");

    bool is_on;
    st = legal_hold_xml_parse(body, size, a, &is_on);
    if (!status_is_known(st))
        fuzz_xml_fail(target, "legal hold: unknown status");
    fuzz_xml_end_parse(&span);

    /* The same bytes as a date. */
    int64_t ns;
    if (lock_date_parse((struct slice){body, size}, &ns) == 0) {
        if (ns < 0 || ns / 1000000000 >= days_from_civil(LOCK_DATE_MAX_YEAR + 1, 1, 1) * 86400)
            fuzz_xml_fail(target, "date out of range");
        if (size >= 19) {
            char whole[21];
            memcpy(whole, body, 19);
            whole[19] = 'Z';
            int64_t ns2;
            if (lock_date_parse((struct slice){whole, 20}, &ns2) != 0 ||
                ns2 != ns - ns % 1000000000)
                fuzz_xml_fail(target, "date does not parse again to the same second");
        }
    }
    return 0;
}
