/*
 * ini.c: the parser of aws-cli's shared files (~/.aws/credentials and
 * ~/.aws/config). Pure: bytes in, (section, subsection, key, value) out.
 *
 *   [default]                      section "default"
 *   region = eu-west-1             key/value
 *   s3 =                           a key with an empty value opens a subsection
 *     endpoint_url = http://...    indented lines belong to the subsection
 *   # comment, ; comment
 *
 * Every name and value is trimmed and truncated to CAP-1 bytes; the parser
 * never reads past 'len' and accepts any bytes (it is fuzzed: fuzz_ini).
 */
#include "config.h"

#include "client/shard_int.h"

#define CAP 256

static bool
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Copies the trimmed run 'p[0..n)' into 'out' (NUL-terminated, truncated to CAP-1).
 * A NUL byte ends the run first, so the C string handed out is what was trimmed. */
static void
copy_trimmed(const char *p, size_t n, char out[CAP])
{
    n = strnlen(p, n);
    while (n > 0 && is_space(p[0])) {
        p++;
        n--;
    }
    if (n > CAP - 1)
        n = CAP - 1;
    while (n > 0 && is_space(p[n - 1]))
        n--; /* after the cut, so a cut inside blanks leaves none at the end */
    memcpy(out, p, n);
    out[n] = '\0';
}

int
client__ini_parse(const char *text, size_t len, client_ini_fn fn, void *ctx)
{
    char section[CAP] = "", subsection[CAP] = "", key[CAP], value[CAP];
    size_t pos = 0;

    while (pos < len) {
        size_t start = pos;
        while (pos < len && text[pos] != '\n')
            pos++;
        const char *line = text + start;
        size_t n = pos - start;
        if (pos < len)
            pos++; /* the '\n' */
        bool is_indented = n > 0 && is_space(line[0]);
        size_t i = 0;
        while (i < n && is_space(line[i]))
            i++;
        if (i == n || line[i] == '#' || line[i] == ';')
            continue;
        if (line[i] == '[') {
            size_t j = i + 1;
            while (j < n && line[j] != ']')
                j++;
            if (j == n)
                continue; /* no closing bracket: not a section header */
            copy_trimmed(line + i + 1, j - i - 1, section);
            subsection[0] = '\0';
            continue;
        }
        size_t eq = i;
        while (eq < n && line[eq] != '=')
            eq++;
        if (eq == n)
            continue; /* neither a section nor key = value: ignored like botocore */
        copy_trimmed(line + i, eq - i, key);
        copy_trimmed(line + eq + 1, n - eq - 1, value);
        if (!is_indented)
            subsection[0] = '\0';
        if (!is_indented && value[0] == '\0') {
            memcpy(subsection, key, sizeof(key));
            continue;
        }
        int rc = fn(ctx, section, is_indented ? subsection : "", key, value);
        if (rc != 0)
            return rc;
    }
    return 0;
}
