/*
 * tar_fixture.h: what the tar tests build archives and read fixtures with
 * (tar_fixture.c), shared by tests/unit/common/test_tar.c and
 * tests/unit/client/test_tar.c.
 */
#ifndef SHARD_TESTS_TAR_FIXTURE_H
#define SHARD_TESTS_TAR_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes a ustar header for 'name' of 'size' bytes and type 'type' into
 * 'h' (512 bytes) with a valid checksum; 'base256' writes the size in GNU
 * base-256. */
void tar_fixture_header(uint8_t *h, const char *name, uint64_t size, char type, bool base256);
/* The whole file at 'path', NUL-terminated (not counted in '*len');
 * fails the test when it cannot be read. Free with free(). */
uint8_t *tar_fixture_read(const char *path, size_t *len);

#endif
