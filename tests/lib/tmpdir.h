/*
 * tmpdir.h: temporary directories for tests, removed recursively at cleanup.
 */
#ifndef SHARD_TEST_TMPDIR_H
#define SHARD_TEST_TMPDIR_H

/* Creates a fresh directory under $TMPDIR (or /tmp) named after 'tag' and
 * returns its path (caller frees with test_tmpdir_remove). Aborts on error. */
char *test_tmpdir_create(const char *tag);
/* Removes the directory tree and frees 'path'. NULL is a no-op. */
void test_tmpdir_remove(char *path);

#endif
