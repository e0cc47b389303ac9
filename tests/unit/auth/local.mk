# unit tests of auth/: each links only auth/ (and common/ through it).
AUTH_TESTS = tests/unit/auth/test_sigv4 tests/unit/auth/test_chunked tests/unit/auth/test_checksum \
	tests/unit/auth/test_sigv2 tests/unit/auth/test_policy tests/unit/auth/test_secret \
	tests/unit/auth/test_md5_mb tests/unit/auth/test_sse tests/unit/auth/test_iam
check_PROGRAMS += $(AUTH_TESTS)
TESTS += $(AUTH_TESTS)
AUTH_TEST_LDADD = auth/libauth.la tests/lib/libtest.la
tests_unit_auth_test_sigv4_LDADD = $(AUTH_TEST_LDADD)
tests_unit_auth_test_chunked_LDADD = $(AUTH_TEST_LDADD)
tests_unit_auth_test_checksum_LDADD = $(AUTH_TEST_LDADD)
tests_unit_auth_test_sigv2_LDADD = $(AUTH_TEST_LDADD)
tests_unit_auth_test_policy_LDADD = $(AUTH_TEST_LDADD)
tests_unit_auth_test_secret_LDADD = $(AUTH_TEST_LDADD)
tests_unit_auth_test_sse_LDADD = $(AUTH_TEST_LDADD)
tests_unit_auth_test_iam_LDADD = $(AUTH_TEST_LDADD)
tests_unit_auth_test_md5_mb_CFLAGS = $(AM_CFLAGS) $(OPENSSL_CFLAGS)
tests_unit_auth_test_md5_mb_LDADD = $(AUTH_TEST_LDADD) $(OPENSSL_LIBS)
