# Fuzz target of client/: the aws-cli shared-file (INI) parser. Included
# from client/local.mk; same pattern as tests/fuzz/local.mk.
check_PROGRAMS += %D%/replay_ini
TESTS += %D%/replay_ini
%C%_replay_ini_SOURCES = %D%/replay.c %D%/fuzz_ini.c
%C%_replay_ini_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCURL_CFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(abs_top_srcdir)/%D%/corpus/ini"'
%C%_replay_ini_LDADD = client/libshard_core.la

if FUZZING
noinst_PROGRAMS += %D%/fuzz_ini
%C%_fuzz_ini_SOURCES = %D%/fuzz_ini.c client/ini.c
%C%_fuzz_ini_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS) $(FUZZ_SAN)
%C%_fuzz_ini_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_SAN)
%C%_fuzz_ini_LDADD = common/libcommon.la
endif

EXTRA_DIST += %D%/ini.dict %D%/corpus/ini

# The list page parsers (ListObjectsV2 and ListObjectVersions answers:
# expat, and the scanner of ListVersionsResult pages checked against it).
check_PROGRAMS += %D%/replay_list_xml
TESTS += %D%/replay_list_xml
%C%_replay_list_xml_SOURCES = %D%/replay.c %D%/fuzz_list_xml.c client/xml.c \
	client/version_scan.c
%C%_replay_list_xml_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCURL_CFLAGS) $(EXPAT_CFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(abs_top_srcdir)/%D%/corpus/list_xml"'
%C%_replay_list_xml_LDADD = common/libcommon.la $(EXPAT_LIBS)

if FUZZING
noinst_PROGRAMS += %D%/fuzz_list_xml
%C%_fuzz_list_xml_SOURCES = %D%/fuzz_list_xml.c client/xml.c client/version_scan.c
%C%_fuzz_list_xml_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS) $(EXPAT_CFLAGS) $(FUZZ_SAN)
%C%_fuzz_list_xml_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_SAN)
%C%_fuzz_list_xml_LDADD = common/libcommon.la $(EXPAT_LIBS)
endif

EXTRA_DIST += %D%/list_xml.dict %D%/corpus/list_xml

# The tar member reader (client/tar.c on common/tar.c): the shards Python's
# ShardDataset streams, differential against the parser it is built on.
check_PROGRAMS += %D%/replay_tar_reader
TESTS += %D%/replay_tar_reader
%C%_replay_tar_reader_SOURCES = %D%/replay.c %D%/fuzz_tar_reader.c
%C%_replay_tar_reader_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(abs_top_srcdir)/%D%/corpus/tar_reader"'
%C%_replay_tar_reader_LDADD = client/libshard_core.la

if FUZZING
noinst_PROGRAMS += %D%/fuzz_tar_reader
%C%_fuzz_tar_reader_SOURCES = %D%/fuzz_tar_reader.c client/tar.c common/tar.c
%C%_fuzz_tar_reader_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS) $(FUZZ_SAN)
%C%_fuzz_tar_reader_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_SAN)
%C%_fuzz_tar_reader_LDADD = client/libshard_core.la
endif

EXTRA_DIST += %D%/tar_reader.dict %D%/corpus/tar_reader
