bin_PROGRAMS += shardstore
shardstore_SOURCES = server/main.c
