# unit tests of server/
check_PROGRAMS += %D%/test_range %D%/test_xml_in
TESTS += %D%/test_range %D%/test_xml_in

%C%_test_range_SOURCES = %D%/test_range.c
%C%_test_range_LDADD = server/libs3parse.la tests/lib/libtest.la

%C%_test_xml_in_SOURCES = %D%/test_xml_in.c
%C%_test_xml_in_LDADD = server/libs3parse.la tests/lib/libtest.la

# server/reserve.c needs only common/ (its header is server.h).
check_PROGRAMS += %D%/test_reserve
TESTS += %D%/test_reserve
%C%_test_reserve_SOURCES = %D%/test_reserve.c server/reserve.c
%C%_test_reserve_LDADD = common/libcommon.la tests/lib/libtest.la
