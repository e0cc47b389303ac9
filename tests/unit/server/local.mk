# unit tests of server/
check_PROGRAMS += %D%/test_range %D%/test_xml_in %D%/test_key %D%/test_tags
TESTS += %D%/test_range %D%/test_xml_in %D%/test_key %D%/test_tags

%C%_test_range_SOURCES = %D%/test_range.c
%C%_test_range_LDADD = server/libs3parse.la tests/lib/libtest.la

%C%_test_xml_in_SOURCES = %D%/test_xml_in.c
%C%_test_xml_in_LDADD = server/libs3parse.la tests/lib/libtest.la

# server/reserve.c needs only common/.
check_PROGRAMS += %D%/test_reserve
TESTS += %D%/test_reserve
%C%_test_reserve_SOURCES = %D%/test_reserve.c server/reserve.c
%C%_test_reserve_LDADD = common/libcommon.la tests/lib/libtest.la

%C%_test_key_SOURCES = %D%/test_key.c
%C%_test_key_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS)
%C%_test_key_LDADD = server/libs3parse.la tests/lib/libtest.la $(EXPAT_LIBS)

%C%_test_tags_SOURCES = %D%/test_tags.c
%C%_test_tags_LDADD = server/libs3parse.la tests/lib/libtest.la

# server/cold_format.c (the cold tier's blob format) needs common/, xxhash and zstd.
check_PROGRAMS += %D%/test_cold_format
TESTS += %D%/test_cold_format
%C%_test_cold_format_SOURCES = %D%/test_cold_format.c server/cold_format.c server/cold_format.h
%C%_test_cold_format_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS)
%C%_test_cold_format_LDADD = common/libcommon.la tests/lib/libtest.la $(XXHASH_LIBS) $(ZSTD_LIBS)

# server/hasher.c against OpenSSL's digests (auth/ and common/ only).
check_PROGRAMS += %D%/test_hasher
TESTS += %D%/test_hasher
%C%_test_hasher_SOURCES = %D%/test_hasher.c server/hasher.c
%C%_test_hasher_LDADD = auth/libauth.la common/libcommon.la tests/lib/libtest.la -lpthread
