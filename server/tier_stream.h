/*
 * tier_stream.h: response bodies read from a tier on the offload workers
 * (tier_stream.c), for tiers whose reads wait on a network.
 */
#ifndef SHARD_SERVER_TIER_STREAM_H
#define SHARD_SERVER_TIER_STREAM_H

#include <microhttpd.h>
#include <stdint.h>

struct server;
struct tier_reader;

/* Bytes of the ring between the worker and the event thread: the memory
 * a streamed body holds per connection. */
#define TIER_STREAM_RING_LEN (1u << 20)

/*
 * A response of 'len' bytes (len > 0) read from 'trd' at positions 0..len
 * on srv's offload workers into a TIER_STREAM_RING_LEN ring; the event
 * thread only copies out of the ring and suspends 'conn' while it is
 * empty, so a slow or unreachable tier stalls this connection and no
 * other. A failed or short read ends the body in error (MHD closes the
 * connection before Content-Length bytes went out). Without an offload
 * pool (thread per connection) the reads run on the connection's thread.
 * Returns the response, which owns 'trd' from then on (destroyed once
 * the response is freed and no read runs), or NULL: 'trd' stays the
 * caller's.
 */
struct MHD_Response *tier_stream_response(struct server *srv, struct MHD_Connection *conn,
                                          struct tier_reader *trd, uint64_t len);

#endif
