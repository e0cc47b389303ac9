# server/ input parsers (Range header, XML bodies) and the key text rules
# in a convenience library of their own, so unit tests and fuzz targets link
# them without the rest of the server. Included from server/local.mk.
noinst_LTLIBRARIES += %D%/libs3parse.la
%C%_libs3parse_la_SOURCES = %D%/range.c %D%/range.h %D%/xml_in.c %D%/xml_in.h %D%/key.c \
	%D%/key.h \
	%D%/tags.c %D%/tags.h \
	%D%/lifecycle_xml.c %D%/lifecycle_xml.h \
	%D%/lock_xml.c %D%/lock_xml.h \
	%D%/form.c %D%/form.h %D%/post_policy.c %D%/post_policy.h
%C%_libs3parse_la_SOURCES += %D%/cors.c %D%/cors.h
%C%_libs3parse_la_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS)
%C%_libs3parse_la_LIBADD = common/libcommon.la $(EXPAT_LIBS)
