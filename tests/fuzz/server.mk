# Fuzz targets of the server/ input parsers (server/libs3parse.la): the Range
# header, the DeleteObjects / CompleteMultipartUpload XML bodies, the
# object tags (Tagging body, x-amz-tagging header, stored form), the
# bucket lifecycle and tagging bodies (lifecycle_xml.c), and the cold
# tier's blob format (cold_format.c). Tar headers (common/tar.c) are in
# local.mk.
# Included from tests/fuzz/local.mk, whose replay main (replay.c) runs each
# target's LLVMFuzzerTestOneInput over its checked-in corpus in make check.
# With --enable-fuzzing (CC=clang) the real libFuzzer binaries are built too;
# they compile the parser sources themselves so the coverage instrumentation
# reaches them:
#   tests/fuzz/fuzz_range -dict=$(srcdir)/tests/fuzz/range.dict \
#       $(srcdir)/tests/fuzz/corpus/range

SERVER_FUZZ_SAN = -fsanitize=fuzzer,address,undefined

check_PROGRAMS += %D%/replay_range %D%/replay_xml_delete %D%/replay_xml_complete \
	%D%/replay_xml_tagging %D%/replay_lifecycle %D%/replay_xml_encryption %D%/replay_xml_batch %D%/replay_lock_xml %D%/replay_cold_format
TESTS += %D%/replay_range %D%/replay_xml_delete %D%/replay_xml_complete %D%/replay_xml_tagging \
	%D%/replay_lifecycle %D%/replay_xml_encryption %D%/replay_xml_batch %D%/replay_lock_xml %D%/replay_cold_format

%C%_replay_xml_encryption_SOURCES = %D%/replay.c %D%/fuzz_xml_encryption.c %D%/xml_check.h
%C%_replay_xml_encryption_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/xml_encryption"'
%C%_replay_xml_encryption_LDADD = server/libs3parse.la

%C%_replay_lock_xml_SOURCES = %D%/replay.c %D%/fuzz_lock_xml.c %D%/xml_check.h
%C%_replay_lock_xml_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/lock_xml"'
%C%_replay_lock_xml_LDADD = server/libs3parse.la

%C%_replay_cold_format_SOURCES = %D%/replay.c %D%/fuzz_cold_format.c server/cold_format.c \
	server/cold_format.h
%C%_replay_cold_format_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/cold_format"'
%C%_replay_cold_format_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS)
%C%_replay_cold_format_LDADD = common/libcommon.la $(XXHASH_LIBS) $(ZSTD_LIBS)

%C%_replay_xml_batch_SOURCES = %D%/replay.c %D%/fuzz_xml_batch.c %D%/xml_check.h
%C%_replay_xml_batch_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/xml_batch"'
%C%_replay_xml_batch_LDADD = server/libs3parse.la

%C%_replay_range_SOURCES = %D%/replay.c %D%/fuzz_range.c
%C%_replay_range_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/range"'
%C%_replay_range_LDADD = server/libs3parse.la

%C%_replay_xml_delete_SOURCES = %D%/replay.c %D%/fuzz_xml_delete.c %D%/xml_check.h
%C%_replay_xml_delete_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/xml_delete"'
%C%_replay_xml_delete_LDADD = server/libs3parse.la

%C%_replay_xml_complete_SOURCES = %D%/replay.c %D%/fuzz_xml_complete.c %D%/xml_check.h
%C%_replay_xml_complete_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/xml_complete"'
%C%_replay_xml_complete_LDADD = server/libs3parse.la

%C%_replay_xml_tagging_SOURCES = %D%/replay.c %D%/fuzz_xml_tagging.c %D%/xml_check.h
%C%_replay_xml_tagging_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/xml_tagging"'
%C%_replay_xml_tagging_LDADD = server/libs3parse.la

%C%_replay_lifecycle_SOURCES = %D%/replay.c %D%/fuzz_lifecycle.c
%C%_replay_lifecycle_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/lifecycle"'
%C%_replay_lifecycle_LDADD = server/libs3parse.la

if FUZZING
noinst_PROGRAMS += %D%/fuzz_range %D%/fuzz_xml_delete %D%/fuzz_xml_complete %D%/fuzz_xml_tagging \
	%D%/fuzz_lifecycle %D%/fuzz_xml_encryption %D%/fuzz_xml_batch %D%/fuzz_lock_xml %D%/fuzz_cold_format

%C%_fuzz_xml_encryption_SOURCES = %D%/fuzz_xml_encryption.c %D%/xml_check.h \
	server/xml_in.c server/xml_in.h
%C%_fuzz_xml_encryption_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_encryption_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_encryption_LDADD = common/libcommon.la $(EXPAT_LIBS)

%C%_fuzz_lock_xml_SOURCES = %D%/fuzz_lock_xml.c %D%/xml_check.h server/xml_in.c server/xml_in.h \
	server/lock_xml.c server/lock_xml.h
%C%_fuzz_lock_xml_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_lock_xml_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_lock_xml_LDADD = common/libcommon.la $(EXPAT_LIBS)

%C%_fuzz_cold_format_SOURCES = %D%/fuzz_cold_format.c server/cold_format.c server/cold_format.h
%C%_fuzz_cold_format_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_cold_format_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_cold_format_LDADD = common/libcommon.la $(XXHASH_LIBS) $(ZSTD_LIBS)

%C%_fuzz_range_SOURCES = %D%/fuzz_range.c server/range.c server/range.h
%C%_fuzz_range_CFLAGS = $(AM_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_range_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_range_LDADD = common/libcommon.la

%C%_fuzz_xml_batch_SOURCES = %D%/fuzz_xml_batch.c %D%/xml_check.h server/xml_in.c server/xml_in.h
%C%_fuzz_xml_batch_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_batch_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_batch_LDADD = common/libcommon.la $(EXPAT_LIBS)

%C%_fuzz_xml_delete_SOURCES = %D%/fuzz_xml_delete.c %D%/xml_check.h \
	server/xml_in.c server/xml_in.h
%C%_fuzz_xml_delete_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_delete_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_delete_LDADD = common/libcommon.la $(EXPAT_LIBS)

%C%_fuzz_xml_complete_SOURCES = %D%/fuzz_xml_complete.c %D%/xml_check.h \
	server/xml_in.c server/xml_in.h
%C%_fuzz_xml_complete_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_complete_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_complete_LDADD = common/libcommon.la $(EXPAT_LIBS)

%C%_fuzz_xml_tagging_SOURCES = %D%/fuzz_xml_tagging.c %D%/xml_check.h \
	server/xml_in.c server/xml_in.h server/tags.c server/tags.h
%C%_fuzz_xml_tagging_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_tagging_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_tagging_LDADD = common/libcommon.la $(EXPAT_LIBS)
%C%_fuzz_lifecycle_SOURCES = %D%/fuzz_lifecycle.c server/lifecycle_xml.c server/lifecycle_xml.h
%C%_fuzz_lifecycle_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_lifecycle_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_lifecycle_LDADD = common/libcommon.la $(EXPAT_LIBS)
endif

EXTRA_DIST += %D%/range.dict %D%/xml_delete.dict %D%/xml_complete.dict %D%/xml_tagging.dict \
	%D%/lifecycle.dict %D%/xml_encryption.dict %D%/corpus/xml_encryption %D%/corpus/range %D%/corpus/xml_delete %D%/corpus/xml_complete \
	%D%/corpus/xml_tagging %D%/corpus/lifecycle %D%/xml_batch.dict \
	%D%/corpus/xml_batch %D%/lock_xml.dict %D%/corpus/lock_xml %D%/cold_format.dict %D%/corpus/cold_format

# Bucket CORS configurations (server/cors.c, issue 13).
check_PROGRAMS += %D%/replay_cors
TESTS += %D%/replay_cors
%C%_replay_cors_SOURCES = %D%/replay.c %D%/fuzz_cors.c
%C%_replay_cors_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/cors"'
%C%_replay_cors_LDADD = server/libs3parse.la
if FUZZING
noinst_PROGRAMS += %D%/fuzz_cors
%C%_fuzz_cors_SOURCES = %D%/fuzz_cors.c server/cors.c server/cors.h server/xml_in.c server/xml_in.h
%C%_fuzz_cors_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_cors_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_cors_LDADD = common/libcommon.la $(EXPAT_LIBS)
endif
EXTRA_DIST += %D%/cors.dict %D%/corpus/cors

# PutBucketLogging bodies (xml_in.c, issue 13).
check_PROGRAMS += %D%/replay_xml_logging
TESTS += %D%/replay_xml_logging
%C%_replay_xml_logging_SOURCES = %D%/replay.c %D%/fuzz_xml_logging.c %D%/xml_check.h
%C%_replay_xml_logging_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/xml_logging"'
%C%_replay_xml_logging_LDADD = server/libs3parse.la
if FUZZING
noinst_PROGRAMS += %D%/fuzz_xml_logging
%C%_fuzz_xml_logging_SOURCES = %D%/fuzz_xml_logging.c %D%/xml_check.h server/xml_in.c server/xml_in.h
%C%_fuzz_xml_logging_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_logging_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_xml_logging_LDADD = common/libcommon.la $(EXPAT_LIBS)
endif
EXTRA_DIST += %D%/xml_logging.dict %D%/corpus/xml_logging

# ---- POST Object: the form parser and the policy document ------------------
check_PROGRAMS += %D%/replay_post_form
TESTS += %D%/replay_post_form
%C%_replay_post_form_SOURCES = %D%/replay.c %D%/fuzz_post_form.c
%C%_replay_post_form_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS_DIR='"$(srcdir)/%D%/corpus/post_form"'
%C%_replay_post_form_LDADD = server/libs3parse.la

if FUZZING
noinst_PROGRAMS += %D%/fuzz_post_form
%C%_fuzz_post_form_SOURCES = %D%/fuzz_post_form.c server/form.c server/form.h \
	server/post_policy.c server/post_policy.h
%C%_fuzz_post_form_CFLAGS = $(AM_CFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_post_form_LDFLAGS = $(AM_LDFLAGS) $(SERVER_FUZZ_SAN)
%C%_fuzz_post_form_LDADD = common/libcommon.la
endif

EXTRA_DIST += %D%/post_form.dict %D%/corpus/post_form
