/*
 * extent_format.h: THE authoritative description of what storage/ puts on disk.
 *
 * Volumes. The data directory holds volume files named vol-NNNN.dat
 * (STORAGE_VOLUME_NAME_FMT, NNNN = volume number from 0, decimal, at least
 * four digits). Numbers are dense: volume k exists only if 0..k-1 exist, and
 * storage_open stops at the first missing number. Each file is preallocated
 * with fallocate(2) to the configured volume_size (a multiple of 1 MiB); a
 * shorter file left by a crash during creation is extended at open.
 *
 *     vol-0000.dat
 *     +---------+---------------+--------+-------------+--------+----
 *     | extent  | extent        |  free  | extent      |  free  | ...
 *     +---------+---------------+--------+-------------+--------+----
 *     0         ^ 4096-aligned offsets, allocations multiple of 4096
 *
 * There is no header, superblock or free-space map in a volume: the file is
 * raw object bytes. The index is the only record of which ranges are in use
 * (struct storage_extent: volume, offset, logical len); at startup the
 * server marks those extents used and everything else is free, so a crash
 * never leaks space.
 *
 * Extents. An extent starts at a multiple of STORAGE_ALIGN (4096) and owns
 * ALIGN_UP(len, 4096) bytes. Bytes [len, ALIGN_UP(len, 4096)) are padding:
 * zeros when written by this module (O_DIRECT needs aligned lengths), but a
 * reader must never rely on them. An object is an ordered list of extents,
 * possibly in several volumes; an empty object has no extents.
 *
 * Checksums. Each extent is cut into STORAGE_BLOCK_LEN (1 MiB) blocks counted
 * from the extent's first byte; the last block covers only the logical bytes
 * up to len. Each block's checksum is XXH64(block, seed 0), stored as 8 bytes
 * little-endian (STORAGE_SUM_LEN). An object's checksum string is the
 * concatenation over its extents in order, so its length is
 * sum(ceil(len_i / 1 MiB)) * 8 (storage_sums_len). The checksums live in the
 * index record, never in the volume.
 */
#ifndef SHARD_STORAGE_EXTENT_FORMAT_H
#define SHARD_STORAGE_EXTENT_FORMAT_H

#define STORAGE_VOLUME_NAME_FMT "vol-%04u.dat"
#define STORAGE_SUM_SEED 0

#endif
