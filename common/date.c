/*
 * date.c: the calendar arithmetic and the date formats the tree speaks:
 * HTTP dates (RFC 9110; formatted as IMF-fixdate, parsed in every form a
 * recipient must accept) and SigV4's "YYYYMMDDTHHMMSSZ". Pure and
 * thread-safe: no gmtime/strptime (no time-zone lock, no locale).
 * Proleptic Gregorian calendar, UTC, years 0 to 9999.
 */
#include "common/common.h"

#include <stdio.h>

void
civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    unsigned doe = (unsigned)(days - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

int64_t
days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static const char wdays[] = "ThuFriSatSunMonTueWed"; /* 1970-01-01 was a Thursday */
static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

static char *
put2(char *p, unsigned v)
{
    p[0] = (char)('0' + v / 10);
    p[1] = (char)('0' + v % 10);
    return p + 2;
}

size_t
http_date_format(int64_t s, char *out)
{
    int64_t days = s >= 0 ? s / 86400 : -((-s + 86399) / 86400);
    unsigned secs = (unsigned)(s - days * 86400);
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0)
        y = 0;
    if (y > 9999)
        y = 9999;
    unsigned wd = (unsigned)(((days % 7) + 7) % 7);
    char *p = out;
    memcpy(p, wdays + wd * 3, 3);
    p += 3;
    *p++ = ',';
    *p++ = ' ';
    p = put2(p, d);
    *p++ = ' ';
    memcpy(p, months + (m - 1) * 3, 3);
    p += 3;
    *p++ = ' ';
    p = put2(p, (unsigned)(y / 100));
    p = put2(p, (unsigned)(y % 100));
    *p++ = ' ';
    p = put2(p, secs / 3600);
    *p++ = ':';
    p = put2(p, secs / 60 % 60);
    *p++ = ':';
    p = put2(p, secs % 60);
    memcpy(p, " GMT", 5);
    return (size_t)(p + 4 - out);
}

void
amz_date_format(int64_t s, char out[17])
{
    if (s < 0)
        s = 0;
    int64_t days = s / 86400;
    unsigned secs = (unsigned)(s - days * 86400);
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y > 9999)
        y = 9999;
    char *p = put2(out, (unsigned)(y / 100));
    p = put2(p, (unsigned)(y % 100));
    p = put2(p, m);
    p = put2(p, d);
    *p++ = 'T';
    p = put2(p, secs / 3600);
    p = put2(p, secs / 60 % 60);
    p = put2(p, secs % 60);
    *p++ = 'Z';
    *p = '\0';
}

/* ---- parsing ------------------------------------------------------------ */

/* A cursor over the text being parsed. */
struct scan {
    const char *p;
    const char *end;
};

/* Reads exactly 'n' decimal digits. */
static bool
scan_digits(struct scan *sc, size_t n, int *out)
{
    if ((size_t)(sc->end - sc->p) < n)
        return false;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = sc->p[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    sc->p += n;
    *out = v;
    return true;
}

/* Reads one or two digits (a day of month: "6" or "06"). */
static bool
scan_1or2(struct scan *sc, int *out)
{
    if (sc->end - sc->p >= 2 && sc->p[1] >= '0' && sc->p[1] <= '9')
        return scan_digits(sc, 2, out);
    return scan_digits(sc, 1, out);
}

static bool
scan_char(struct scan *sc, char c)
{
    if (sc->p == sc->end || *sc->p != c)
        return false;
    sc->p++;
    return true;
}

static void
scan_spaces(struct scan *sc)
{
    while (sc->p < sc->end && *sc->p == ' ')
        sc->p++;
}

/* Reads a run of ASCII letters into 'out' (the slice of it). */
static struct slice
scan_word(struct scan *sc)
{
    const char *start = sc->p;
    while (sc->p < sc->end && ((*sc->p | 0x20) >= 'a' && (*sc->p | 0x20) <= 'z'))
        sc->p++;
    return (struct slice){start, (size_t)(sc->p - start)};
}

/* Month number (1-12) of a three-letter name in any case, or 0. */
static int
month_of(struct slice w)
{
    if (w.len != 3)
        return 0;
    for (int i = 0; i < 12; i++)
        if (slice_casecmp(w, (struct slice){months + 3 * i, 3}) == 0)
            return i + 1;
    return 0;
}

/* True when 'w' names a weekday: three letters or the full name. */
static bool
is_weekday(struct slice w)
{
    static const char *full[] = {"monday", "tuesday",  "wednesday", "thursday",
                                 "friday", "saturday", "sunday"};
    for (int i = 0; i < 7; i++) {
        struct slice f = slice_from_cstr(full[i]);
        if (slice_casecmp(w, f) == 0 ||
            (w.len == 3 && slice_casecmp(w, (struct slice){f.ptr, 3}) == 0))
            return true;
    }
    return false;
}

/* "hh:mm:ss" */
static bool
scan_time(struct scan *sc, int *h, int *mi, int *s)
{
    return scan_digits(sc, 2, h) && scan_char(sc, ':') && scan_digits(sc, 2, mi) &&
           scan_char(sc, ':') && scan_digits(sc, 2, s);
}

/* Validates the fields and converts them; a leap second (60) is allowed. */
static int
to_epoch(int y, int mo, int d, int h, int mi, int s, int64_t *out)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 0 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 ||
        s > 60)
        return -1;
    bool is_leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !is_leap)
        return -1;
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
    return 0;
}

/* ISO 8601 "YYYY-MM-DDThh:mm:ssZ" or "YYYY-MM-DDThh:mm:ss.sssZ" (the
 * milliseconds are dropped). */
static int
parse_iso8601(struct scan sc, int64_t *out)
{
    int y, mo, d, h, mi, s, ms;
    if (!scan_digits(&sc, 4, &y) || !scan_char(&sc, '-') || !scan_digits(&sc, 2, &mo) ||
        !scan_char(&sc, '-') || !scan_digits(&sc, 2, &d) || !scan_char(&sc, 'T') ||
        !scan_time(&sc, &h, &mi, &s))
        return -1;
    if (scan_char(&sc, '.') && !scan_digits(&sc, 3, &ms))
        return -1;
    if (!scan_char(&sc, 'Z') || sc.p != sc.end)
        return -1;
    return to_epoch(y, mo, d, h, mi, s, out);
}

int
http_date_parse(struct slice text, int64_t *out_s)
{
    struct scan sc = {text.ptr, text.ptr + text.len};
    int y, mo, d, h, mi, s;
    if (text.len == 0)
        return -1;
    scan_spaces(&sc);
    while (sc.end > sc.p && sc.end[-1] == ' ')
        sc.end--;
    if (sc.p < sc.end && *sc.p >= '0' && *sc.p <= '9') {
        if (sc.end - sc.p > 4 && sc.p[4] == '-')
            return parse_iso8601(sc, out_s);
    } else {
        struct slice w = scan_word(&sc);
        if (!is_weekday(w))
            return -1;
        if (!scan_char(&sc, ',')) {
            /* asctime: "Sun Nov  6 08:49:37 1994" */
            scan_spaces(&sc);
            mo = month_of(scan_word(&sc));
            scan_spaces(&sc);
            if (mo == 0 || !scan_1or2(&sc, &d) || !scan_char(&sc, ' ') ||
                !scan_time(&sc, &h, &mi, &s) || !scan_char(&sc, ' ') || !scan_digits(&sc, 4, &y) ||
                sc.p != sc.end)
                return -1;
            return to_epoch(y, mo, d, h, mi, s, out_s);
        }
        scan_spaces(&sc);
    }
    /* IMF-fixdate "06 Nov 1994 08:49:37 GMT" (weekday and comma optional,
     * as clients that drop them exist) or RFC 850 "06-Nov-94 08:49:37 GMT". */
    if (!scan_1or2(&sc, &d))
        return -1;
    if (scan_char(&sc, '-')) {
        mo = month_of(scan_word(&sc));
        if (mo == 0 || !scan_char(&sc, '-') || !scan_digits(&sc, 2, &y))
            return -1;
        y += y < 69 ? 2000 : 1900; /* POSIX strptime %y */
    } else {
        if (!scan_char(&sc, ' '))
            return -1;
        mo = month_of(scan_word(&sc));
        if (mo == 0 || !scan_char(&sc, ' ') || !scan_digits(&sc, 4, &y))
            return -1;
    }
    if (!scan_char(&sc, ' ') || !scan_time(&sc, &h, &mi, &s) || !scan_char(&sc, ' '))
        return -1;
    struct slice zone = scan_word(&sc);
    if (slice_casecmp(zone, SLICE_LIT("GMT")) != 0 || sc.p != sc.end)
        return -1;
    return to_epoch(y, mo, d, h, mi, s, out_s);
}

int
amz_date_parse(struct slice text, int64_t *out_s)
{
    struct scan sc = {text.ptr, text.ptr + text.len};
    int y, mo, d, h, mi, s;
    if (!scan_digits(&sc, 4, &y) || !scan_digits(&sc, 2, &mo) || !scan_digits(&sc, 2, &d) ||
        !scan_char(&sc, 'T') || !scan_digits(&sc, 2, &h) || !scan_digits(&sc, 2, &mi) ||
        !scan_digits(&sc, 2, &s) || !scan_char(&sc, 'Z') || sc.p != sc.end)
        return -1;
    return to_epoch(y, mo, d, h, mi, s, out_s);
}

/* Parses an ISO 8601 date ("2024-05-01", "2024-05-01T12:00:00Z", with
 * optional fractional seconds) or epoch seconds into Unix seconds. */
bool
iso_date_parse(struct slice s, int64_t *out)
{
    uint64_t epoch;
    if (s.len && s.len <= 12 && parse_u64(s, UINT64_C(1) << 40, &epoch) == 0) {
        *out = (int64_t)epoch;
        return true;
    }
    char text[40];
    if (s.len < 10 || s.len >= sizeof(text))
        return false;
    memcpy(text, s.ptr, s.len);
    text[s.len] = '\0';
    unsigned y, mo, d, h = 0, mi = 0, sec = 0;
    int n = 0;
    if (sscanf(text, "%4u-%2u-%2u%n", &y, &mo, &d, &n) != 3 || n != 10)
        return false;
    const char *t = text + 10;
    if (*t == 'T') {
        int m = 0;
        if (sscanf(t, "T%2u:%2u:%2u%n", &h, &mi, &sec, &m) != 3 || m != 9)
            return false;
        t += m;
        if (*t == '.') {
            t++;
            while (*t >= '0' && *t <= '9')
                t++;
        }
        if (*t == 'Z')
            t++;
    }
    if (*t || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return false;
    *out = days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 + mi * 60 + sec;
    return true;
}
