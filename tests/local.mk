# Tests: unit tests per module, integration tests, fuzz replays.
# Each test is one program (exit 0 pass, 77 skip, else fail).
noinst_LTLIBRARIES += tests/lib/libtest.la
tests_lib_libtest_la_SOURCES = tests/lib/test.h tests/lib/tmpdir.c tests/lib/tmpdir.h \
	tests/lib/harness.c tests/lib/harness.h tests/lib/tar_fixture.c tests/lib/tar_fixture.h

include %D%/unit/common/local.mk
include %D%/unit/auth/local.mk
include %D%/unit/index/local.mk
include %D%/unit/storage/local.mk
include %D%/unit/server/local.mk
include %D%/integration/local.mk
include %D%/fuzz/local.mk
