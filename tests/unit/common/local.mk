# unit tests of common/
check_PROGRAMS += %D%/test_codec
TESTS += %D%/test_codec
%C%_test_codec_LDADD = common/libcommon.la tests/lib/libtest.la

check_PROGRAMS += %D%/test_size
TESTS += %D%/test_size
%C%_test_size_LDADD = common/libcommon.la tests/lib/libtest.la
