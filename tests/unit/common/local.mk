# unit tests of common/
check_PROGRAMS += %D%/test_codec
TESTS += %D%/test_codec
%C%_test_codec_LDADD = common/libcommon.la tests/lib/libtest.la
