/*
 * tar_fixture.c: ustar headers and fixture files for the tar tests.
 */
#include "config.h"

#include "tests/lib/tar_fixture.h"
#include "tests/lib/test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 512

void
tar_fixture_header(uint8_t *h, const char *name, uint64_t size, char type, bool base256)
{
    memset(h, 0, BLOCK);
    memcpy(h, name, strlen(name));
    memcpy(h + 100, "0000644", 7);
    if (base256) {
        h[124] = 0x80;
        for (int i = 0; i < 8; i++)
            h[135 - i] = (uint8_t)(size >> (8 * i));
    } else {
        snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    }
    memcpy(h + 136, "14000000000", 11);
    h[156] = (uint8_t)type;
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    unsigned sum = 0;
    memset(h + 148, ' ', 8);
    for (int i = 0; i < BLOCK; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

uint8_t *
tar_fixture_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        TEST_FAIL("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    ASSERT(buf);
    ASSERT_UEQ(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}
