# unit tests of client/ (pure parts: URLs, endpoint, config files, list pages).
CLIENT_TESTS = tests/unit/client/test_url tests/unit/client/test_config \
	tests/unit/client/test_list_xml tests/unit/client/test_version_scan \
	tests/unit/client/test_tar
check_PROGRAMS += $(CLIENT_TESTS)
TESTS += $(CLIENT_TESTS)
tests_unit_client_test_url_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
tests_unit_client_test_url_LDADD = client/libshard_core.la tests/lib/libtest.la
tests_unit_client_test_config_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
tests_unit_client_test_config_LDADD = client/libshard_core.la tests/lib/libtest.la
tests_unit_client_test_list_xml_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
tests_unit_client_test_list_xml_LDADD = client/libshard_core.la tests/lib/libtest.la
tests_unit_client_test_version_scan_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
tests_unit_client_test_version_scan_LDADD = client/libshard_core.la tests/lib/libtest.la
tests_unit_client_test_tar_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS)
tests_unit_client_test_tar_LDADD = client/libshard_core.la tests/lib/libtest.la

# libshard.so exports the SHARD_API calls of client/shard.h and nothing else.
TESTS += tests/unit/client/test_exports.sh
EXTRA_DIST += tests/unit/client/test_exports.sh
