# unit tests of common/
check_PROGRAMS += %D%/test_codec %D%/test_date %D%/test_uri
TESTS += %D%/test_codec %D%/test_date %D%/test_uri
%C%_test_codec_LDADD = common/libcommon.la tests/lib/libtest.la
%C%_test_date_LDADD = common/libcommon.la tests/lib/libtest.la
%C%_test_uri_LDADD = common/libcommon.la tests/lib/libtest.la

check_PROGRAMS += %D%/test_size
TESTS += %D%/test_size
%C%_test_size_LDADD = common/libcommon.la tests/lib/libtest.la

# common/tar.c, the tar header parser (archives from tar_fixtures.py).
check_PROGRAMS += %D%/test_tar
TESTS += %D%/test_tar
%C%_test_tar_LDADD = common/libcommon.la tests/lib/libtest.la
EXTRA_DIST += %D%/tar_fixtures.py
