/*
 * lock_xml.c: parsing and formatting of the versioning and Object Lock
 * documents (lock_xml.h). Bodies go through xml_parse_fields (expat with a
 * fixed schema); this file only checks the values, strictly, as S3 does:
 * anything not in the schema's vocabulary is refused, never guessed.
 */
#include "server/lock_xml.h"
#include "server/xml_in.h"

#include <inttypes.h>
#include <stdio.h>

int
lock_mode_parse(struct slice s)
{
    if (slice_eq(s, SLICE_LIT("GOVERNANCE")))
        return LOCK_MODE_GOVERNANCE;
    if (slice_eq(s, SLICE_LIT("COMPLIANCE")))
        return LOCK_MODE_COMPLIANCE;
    return -1;
}

const char *
lock_mode_name(int mode)
{
    return mode == LOCK_MODE_GOVERNANCE   ? "GOVERNANCE"
           : mode == LOCK_MODE_COMPLIANCE ? "COMPLIANCE"
                                          : "";
}

enum lock_xml_status
versioning_xml_parse(const char *body, size_t len, struct arena *a, int *status)
{
    struct xml_field f[] = {{"Status", SLICE_NULL}, {"MfaDelete", SLICE_NULL}};
    *status = 0;
    if (xml_parse_fields(body, len, "VersioningConfiguration", f, ARRAY_LEN(f), a) != XML_IN_OK)
        return LOCK_XML_MALFORMED;
    if (f[0].value.ptr) {
        if (slice_eq(f[0].value, SLICE_LIT("Enabled")))
            *status = 1;
        else if (slice_eq(f[0].value, SLICE_LIT("Suspended")))
            *status = 2;
        else
            return LOCK_XML_MALFORMED;
    }
    if (f[1].value.ptr) {
        if (slice_eq(f[1].value, SLICE_LIT("Enabled")))
            return LOCK_XML_UNSUPPORTED;
        if (!slice_eq(f[1].value, SLICE_LIT("Disabled")))
            return LOCK_XML_MALFORMED;
    }
    return LOCK_XML_OK;
}

/* Parses a period of 1..'max' (decimal digits only). */
static bool
period_parse(struct slice s, uint32_t max, uint32_t *out)
{
    uint64_t v;
    if (parse_u64(s, max, &v) != 0 || v == 0)
        return false;
    *out = (uint32_t)v;
    return true;
}

enum lock_xml_status
lock_conf_parse(const char *body, size_t len, struct arena *a, struct lock_conf *out)
{
    struct xml_field f[] = {
        {"ObjectLockEnabled", SLICE_NULL},
        {"Rule/DefaultRetention/Mode", SLICE_NULL},
        {"Rule/DefaultRetention/Days", SLICE_NULL},
        {"Rule/DefaultRetention/Years", SLICE_NULL},
    };
    memset(out, 0, sizeof(*out));
    if (xml_parse_fields(body, len, "ObjectLockConfiguration", f, ARRAY_LEN(f), a) != XML_IN_OK)
        return LOCK_XML_MALFORMED;
    if (!slice_eq(f[0].value, SLICE_LIT("Enabled")))
        return LOCK_XML_MALFORMED;
    if (!f[1].value.ptr && !f[2].value.ptr && !f[3].value.ptr)
        return LOCK_XML_OK;
    out->has_default = true;
    out->mode = lock_mode_parse(f[1].value);
    if (out->mode < 0)
        return LOCK_XML_MALFORMED;
    if ((f[2].value.ptr != NULL) == (f[3].value.ptr != NULL))
        return LOCK_XML_MALFORMED;
    if (f[2].value.ptr && !period_parse(f[2].value, LOCK_MAX_DAYS, &out->days))
        return LOCK_XML_INVALID;
    if (f[3].value.ptr && !period_parse(f[3].value, LOCK_MAX_YEARS, &out->years))
        return LOCK_XML_INVALID;
    return LOCK_XML_OK;
}

void
lock_conf_format(struct buf *b, const struct lock_conf *c)
{
    char num[24];
    buf_append_str(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ObjectLockConfiguration "
                      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                      "<ObjectLockEnabled>Enabled</ObjectLockEnabled>");
    if (c->has_default) {
        buf_append_str(b, "<Rule><DefaultRetention><Mode>");
        buf_append_str(b, lock_mode_name(c->mode));
        buf_append_str(b, "</Mode>");
        snprintf(num, sizeof(num), "%" PRIu32, c->days ? c->days : c->years);
        buf_append_str(b, c->days ? "<Days>" : "<Years>");
        buf_append_str(b, num);
        buf_append_str(b, c->days ? "</Days>" : "</Years>");
        buf_append_str(b, "</DefaultRetention></Rule>");
    }
    buf_append_str(b, "</ObjectLockConfiguration>");
}

int64_t
lock_conf_until_ns(const struct lock_conf *c, int64_t now_ns)
{
    int64_t days = c->days ? (int64_t)c->days : (int64_t)c->years * 365;
    return now_ns + days * 86400 * INT64_C(1000000000);
}

enum lock_xml_status
retention_xml_parse(const char *body, size_t len, struct arena *a, int *mode, int64_t *until_ns)
{
    struct xml_field f[] = {{"Mode", SLICE_NULL}, {"RetainUntilDate", SLICE_NULL}};
    *mode = LOCK_MODE_NONE;
    *until_ns = 0;
    if (xml_parse_fields(body, len, "Retention", f, ARRAY_LEN(f), a) != XML_IN_OK)
        return LOCK_XML_MALFORMED;
    if (!f[0].value.ptr && !f[1].value.ptr)
        return LOCK_XML_OK;
    if (!f[0].value.ptr || !f[1].value.ptr)
        return LOCK_XML_MALFORMED;
    *mode = lock_mode_parse(f[0].value);
    if (*mode < 0)
        return LOCK_XML_MALFORMED;
    if (lock_date_parse(f[1].value, until_ns) != 0)
        return LOCK_XML_INVALID;
    return LOCK_XML_OK;
}

enum lock_xml_status
legal_hold_xml_parse(const char *body, size_t len, struct arena *a, bool *is_on)
{
    struct xml_field f[] = {{"Status", SLICE_NULL}};
    *is_on = false;
    if (xml_parse_fields(body, len, "LegalHold", f, ARRAY_LEN(f), a) != XML_IN_OK)
        return LOCK_XML_MALFORMED;
    if (slice_eq(f[0].value, SLICE_LIT("ON")))
        *is_on = true;
    else if (!slice_eq(f[0].value, SLICE_LIT("OFF")))
        return LOCK_XML_MALFORMED;
    return LOCK_XML_OK;
}

/* Reads 'n' decimal digits at s[*i] into '*out'. */
static bool
digits(struct slice s, size_t *i, size_t n, int64_t *out)
{
    int64_t v = 0;
    if (s.len - *i < n)
        return false;
    for (size_t k = 0; k < n; k++) {
        char c = s.ptr[*i + k];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *i += n;
    *out = v;
    return true;
}

static bool
expect(struct slice s, size_t *i, char c)
{
    if (*i >= s.len || s.ptr[*i] != c)
        return false;
    (*i)++;
    return true;
}

int
lock_date_parse(struct slice s, int64_t *ns)
{
    int64_t y, mo, d, h, mi, sec, frac = 0;
    size_t i = 0;
    if (!digits(s, &i, 4, &y) || !expect(s, &i, '-') || !digits(s, &i, 2, &mo) ||
        !expect(s, &i, '-') || !digits(s, &i, 2, &d) || !expect(s, &i, 'T') ||
        !digits(s, &i, 2, &h) || !expect(s, &i, ':') || !digits(s, &i, 2, &mi) ||
        !expect(s, &i, ':') || !digits(s, &i, 2, &sec))
        return -1;
    if (i < s.len && s.ptr[i] == '.') {
        i++;
        size_t n = 0;
        while (i < s.len && s.ptr[i] >= '0' && s.ptr[i] <= '9' && n < 9) {
            frac = frac * 10 + (s.ptr[i++] - '0');
            n++;
        }
        if (n == 0)
            return -1;
        for (; n < 9; n++)
            frac *= 10;
    }
    if (i < s.len && s.ptr[i] == 'Z')
        i++;
    else if (s.len - i == 6 && memcmp(s.ptr + i, "+00:00", 6) == 0)
        i += 6;
    else
        return -1;
    if (i != s.len)
        return -1;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || y > LOCK_DATE_MAX_YEAR || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        h > 23 || mi > 59 || sec > 59)
        return -1;
    bool is_leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !is_leap)
        return -1;
    int64_t days = days_from_civil(y, mo, d);
    *ns = ((days * 86400 + h * 3600 + mi * 60 + sec) * INT64_C(1000000000)) + frac;
    return 0;
}
