# transport/ module: the RDMA transport on libfabric (the only user of
# <rdma/fabric.h>) and the x-amz-rdma-token codec. Without libfabric
# (configure says so) it builds with a fabric that never opens.
noinst_LTLIBRARIES += transport/libtransport.la
transport_libtransport_la_SOURCES = transport/transport.h transport/token.c transport/fabric.c
transport_libtransport_la_CFLAGS = $(AM_CFLAGS) $(LIBFABRIC_CFLAGS)
transport_libtransport_la_LIBADD = common/libcommon.la

include tests/unit/transport/local.mk
