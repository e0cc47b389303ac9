/*
 * keys.h: THE authoritative description of the index's on-disk format (the
 * LMDB key schema and every record layout), plus the key encoders.
 *
 * The environment is a directory holding data.mdb and lock.mdb (no
 * MDB_NOSUBDIR). It holds these named databases:
 *
 *   "buckets"    key: bucket name (1..63 bytes, no NUL)
 *                val: bucket record (below)
 *   "bucketids"  key: bucket id, 8 bytes big-endian
 *                val: bucket name (reverse map, so "does bucket id N still
 *                     exist" is one get inside a write transaction)
 *   "objects"    key: object key (below)
 *                val: object record (below)
 *   "settings"   (unused; environments made by older versions may hold
 *                it, and nothing reads it)
 *   "meta"       key: "next_bucket_id"
 *                val: u64 little-endian, the id the next bucket gets.
 *                     Ids start at 1 and are never reused.
 *                key: "next_tree_node"
 *                val: u64 little-endian, the next inner node id of
 *                     "keytree" (from 1, below 2^62, never reused).
 *   "uploads"    key: upload id, 16 raw bytes (the 32 lower-case hex chars
 *                     of the API decoded; raw order == hex order)
 *                val: upload record (below)
 *   "bucketuploads"
 *                key: bucket id (8, BE) | upload id (16 raw)
 *                val: empty
 *                     (so "does this bucket have uploads in progress" is
 *                     one cursor seek, and a bucket's uploads are one
 *                     range scan)
 *   "parts"      key: upload id (16 raw) | part number (4, BE; 1..10000)
 *                val: part record (below)
 *   "users"      key: user id (64 lower-case hex chars)
 *                val: user record (below)
 *   "usernames"  key: user name (1..64 bytes)
 *                val: user id (64 chars); kept in step with "users"
 *   "keys"       key: access key (1..128 bytes)
 *                val: key record (below)
 *   "extrefs"    key: volume (4, BE) | offset (8, BE)
 *                val: holder count (4, BE) | length (8, BE); only for
 *                     extents two or more records hold (extref.c)
 *   "keytree"    key: node id (8, BE) | chunk (1..480 bytes)
 *                val: u8 flags (bit 0: a string ends here) | u64 child
 *                     node id (little-endian; 0: none)
 *                (ordered sets of long strings; see "The key tree" below)
 *   "members"    tar member indexes (member.c); every key starts with the
 *                object id O = XXH3-128(bucket id (8, BE) | object key),
 *                canonical (big-endian), 16 bytes:
 *                key: O | 00                  val: member head (below)
 *                key: O | 01 | page (4, BE)   val: member page (below)
 *                key: O | 02 | bucket (4, BE) val: name bucket (below)
 *                seq numbers the members in archive order from 0; page p
 *                holds members 256p .. 256p+255, so a listing from seq is
 *                one range scan from page seq / 256. A name's bucket is
 *                the top 'bits' (head) bits of XXH3-64(name) (0 when bits
 *                is 0); a lookup reads one bucket and one page. An object's
 *                records are dropped (one range delete of prefix O) by
 *                every write that replaces or deletes the object, in the
 *                same transaction, and written only with the object (PUT)
 *                or after checking it still has the head's etag
 *                (MEMBERS_PUT); the etag in the head is checked on reads.
 *   "versions"   every version of every key of a versioned bucket
 *                (version.c), newest first within a key:
 *                key: bid (8, BE) | esc(K) | 00 00 | ~id   when esc(K) is at
 *                       most 464 bytes (<= 490 bytes), else
 *                     bid | esc(K)[0..464) | XXH3-128(K) | ~id   (504)
 *                     where esc is the key-tree escape (below) and ~id the
 *                     version id (16 raw bytes) with every bit inverted,
 *                     so that the newest version of a key comes first
 *                val: object record with the version trailer and the full
 *                     key always stored (key_len = len(K)). A delete
 *                     marker is a record of size 0 with no data.
 *                The latest version, unless it is a delete marker, is also
 *                in "objects" (same record and trailer; its key_len as
 *                always there), so GET and ListObjects read "objects"
 *                alone. The "versions" record holds the extents (extent
 *                scans skip "objects" records with the trailer). Keys
 *                whose escaped forms exceed 464 bytes and share those 464
 *                bytes sort by hash among themselves.
 *   "grants"     key: user id (64 chars) | bucket id (8, BE)
 *                val: grant record (below). Keyed by bucket id, never by
 *                     name: ids are never reused, so a bucket deleted and
 *                     re-created does not inherit old grants (a grant
 *                     whose bucket id is gone is skipped and harmless).
 *   "bucketconfig"
 *                key: bucket id (8, BE) | kind (1 byte, enum
 *                     index_bucket_config_kind: 1 lifecycle, 2 tagging,
 *                     10 CORS, 11 logging;
 *                     later policy, CORS, encryption, versioning)
 *                val: opaque bytes of server/'s format for that kind
 *                     (bucket_config.c). Written only while the bucket
 *                     exists (checked in the same transaction) and
 *                     deleted with it, so a re-created bucket starts with
 *                     no configuration. Listing one kind over all buckets
 *                     scans the whole database (one entry per configured
 *                     bucket and kind: few).
 *   "uploadsdone"
 *                key: upload id (16 raw)
 *                val: bucket_id (8, LE) | completed_ns (8, LE) | key_len
 *                     (2, LE) | result_len (4, LE) | key | result (opaque:
 *                     server/'s answer) [| version_flags (4, LE) |
 *                     version_id (16): present when the completion wrote a
 *                     version with an id]. Written by UPLOAD_COMPLETE in its
 *                     transaction; bounded (INDEX_UPLOADS_DONE_MAX, _TTL_NS):
 *                     each completion drops up to two of the first records
 *                     (earliest initiated) past either bound.
 *
 * A user's keys and grants are deleted with the user in one transaction.
 * Listing one user's keys scans "keys" (users have a handful of keys and
 * the admin API is rare); a user's grants are one range scan.
 *
 * An upload lives in "uploads", "bucketuploads" and its bucket's upload
 * set in "keytree", kept in step inside one write transaction; its parts
 * only exist while the upload does. Because a bucket cannot be deleted
 * while it has an upload, an upload's bucket always exists.
 *
 * Listing uploads (ListMultipartUploads) walks the bucket's upload set in
 * "keytree" (below), in (key, upload id) order from the markers, and
 * fetches one record per upload returned: a page costs O(page).
 *
 * Object keys. S3 keys reach 1024 bytes but LMDB keys stop at 511, so:
 *
 *   len(K) <= 480 (a "direct" key):   bid(8, BE) | K                (<= 488)
 *   len(K) >  480 (a "long" key):     bid(8, BE) | K[0..480) | H    (= 504)
 *        where H = XXH3-128(K) in canonical (big-endian) form, and the
 *        object record carries the full K.
 *
 * Ordering argument. Let P be a 480-byte prefix. Every long key with
 * prefix P sorts after the direct key bid|P (if any) and before any other
 * direct key: a direct key D != P is at most 480 bytes, so it cannot
 * extend P; it differs from P at a position < 480 and sorts on the same
 * side of every K with prefix P as of P itself. Hence (a) the mapping
 * full key -> LMDB key is monotone except inside a "run" (all long keys
 * sharing a 480-byte prefix), (b) each run is contiguous in LMDB order,
 * and (c) a run is recognizable by key length (exactly 504 bytes). Inside
 * a run the order is the hash's, so the lister walks a run in the key
 * tree instead, where every long key of the bucket is also kept (below),
 * and then seeks past the run in "objects": a page costs O(page) however
 * long the runs are. A lookup of a long key is exact (the hash; the full
 * key in the record is compared too).
 *
 * The key tree ("keytree"). An ordered set of byte strings (1..2066
 * bytes) per root id, stored as a trie of 480-byte chunks: string S of
 * set R has the entries
 *   N0 | S[0..480), N1 | S[480..960), ...   up to the chunk S ends in,
 * where N0 = R and each N(i+1) is the child id in the value of entry i;
 * the entry of the last chunk has the "ends here" flag. Inner node ids
 * come from the counter "next_tree_node" in "meta" (from 1, never
 * reused); root ids are 2^63 | bucket id (the bucket's long object keys,
 * each its full key, > 480 bytes) and 2^62 | bucket id (the bucket's
 * uploads, each esc(key) | 00 00 | upload id (16 raw), where esc writes
 * each 00 byte as 00 FF and every other byte as it is; esc preserves
 * order and prefixes and 00 00 sorts before anything esc writes, so the
 * byte order of the strings is (key, upload id) order).
 * Order: the entries of one node sort by chunk, and only a 480-byte
 * chunk has a child, whose strings all extend it; so every string under
 * an entry sorts after the entry's own string and before the next entry
 * of the node (which cannot extend a 480-byte chunk). An in-order walk
 * (an entry's own string, then its child's) therefore yields the strings
 * in byte order, and a seek is one descent. Every entry has the
 * flag or a child, and a child node is never empty: a removal deletes
 * what it leaves empty, bottom up. Kept in step with "objects" and
 * "uploads" inside each write transaction. Environments made before the
 * key tree existed have no "keytree" database: index_open creates it and
 * fills it from "objects" (the 504-byte keys) and "uploads" in the same
 * transaction, once. An older binary writing afterwards would leave it
 * stale, so downgrading after an upgrade is not supported.
 *
 * Bucket record (little-endian):
 *   u8  version (1)
 *   u64 id
 *   i64 created_ns
 *   u8  owner_len (0..63)
 *   owner_len bytes of owner id (empty: made before users existed; root's)
 *   u8  flags (bit 0: public-read). Absent in records written before
 *       users existed: flags 0.
 *
 * User record (little-endian):
 *   u8  version (1)
 *   u8  flags (bit 0: admin)
 *   i64 created_ns
 *   u8  name_len, name_len bytes of name
 *
 * Key record (little-endian):
 *   u8  version (1)
 *   u8  flags (bit 0: read-only)
 *   i64 created_ns
 *   64  user id
 *   u16 blob_len, blob_len bytes of the encrypted secret (auth/ format:
 *       nonce | ciphertext | tag; index/ never sees the secret in clear)
 *
 * Grant record:
 *   u8  version (1)
 *   u8  level (1 read, 2 write, 3 admin)
 *   u16 prefix_len (little-endian), prefix_len bytes of key prefix
 *
 * Object record, version 1 (little-endian, no padding):
 *   off  len
 *     0    1  version (1)
 *     1    1  flags: bit 0 "versioned": the 32-byte version trailer below
 *             follows the head; other bits 0
 *     2    2  key_len: length of the full S3 key stored below (0 for a
 *             direct key, whose full key is the LMDB key after bid)
 *     4    8  size
 *    12    8  mtime_ns (signed)
 *    20   16  etag
 *    36    4  parts_count
 *    40    4  n_extents
 *    44    4  sums_len
 *    48    4  meta_len
 *    52    4  inline_len
 *    56       (flag bit 0 only) version trailer, 32 bytes:
 *               0 16 version id (raw, see index.h)
 *              16  8 retain-until (ns, signed; 0: none)
 *              24  1 lock mode (0 none, 1 GOVERNANCE, 2 COMPLIANCE)
 *              25  1 bit 0 null version, bit 1 delete marker, bit 2 legal hold
 *              26  6 reserved (0)
 *             key_len bytes: full key
 *             n_extents * 24 bytes: { u32 volume, u32 flags, u64 offset, u64 len }
 *             sums_len bytes, meta_len bytes, inline_len bytes
 *   The record length must equal the sum exactly; anything else is
 *   corruption (CORRUPT_BKPT, -EIO).
 *
 * Upload record, version 1 (little-endian, no padding):
 *   off  len
 *     0    1  version (1)
 *     1    1  flags (0; reserved)
 *     2    2  key_len (1..1024): the object key the upload will create
 *     4    8  bucket_id (equal to the one in its "bucketuploads" key)
 *    12    8  initiated_ns (signed)
 *    20    4  meta_len
 *    24       key_len bytes of key, meta_len bytes of meta (opaque)
 *   The record length must equal the sum exactly.
 *
 * Member head (little-endian, 28 bytes):
 *     0    1  version (1)
 *     1    1  flags (bit 0: a readable tar; clear: the object is known
 *             not to be one, and no pages or buckets follow)
 *     2    1  bits (0..24): 2^bits name buckets, the fewest that keep
 *             n_members / 2^bits <= 64
 *     3    1  reserved (0)
 *     4   16  etag of the object version the index was built from
 *    20    4  n_members (0..INDEX_MEMBERS_MAX)
 *    24    4  members per page (256)
 *
 * Member page: up to 256 member entries back to back, in archive order;
 * every page but the last is full. Member entry (little-endian):
 *     0    8  offset of the member's data in the object
 *     8    8  size
 *    16    4  mode
 *    20    8  mtime (seconds, signed)
 *    28    2  name_len (1..4096), then name_len bytes of name
 *
 * Name bucket: 12-byte slots { u64 XXH3-64(name), u32 seq } (little-
 * endian) of every member whose name falls in the bucket, in seq order
 * (the last slot whose member's name matches wins, as tar extracts).
 * Empty buckets have no record.
 *
 * Part record: an object record, version 1 (same codec, same checks),
 * with key_len = 0, inline_len = 0 and parts_count = the part number,
 * which must equal the number in the LMDB key. size, mtime_ns, etag,
 * extents, sums and meta are the part's.
 */
#ifndef SHARD_INDEX_KEYS_H
#define SHARD_INDEX_KEYS_H

#include "common/common.h"
#include "index/index.h"

#include <stdbool.h>
#include <stdint.h>

#define INDEX_BID_LEN 8
/* Longest S3 key stored directly in the LMDB key. */
#define INDEX_DIRECT_MAX 480
#define INDEX_HASH_LEN 16
/* Length of every LMDB key of a long S3 key (and of no other key). */
#define INDEX_LONG_LKEY_LEN (INDEX_BID_LEN + INDEX_DIRECT_MAX + INDEX_HASH_LEN)
/* Room for any encoded object key. */
#define INDEX_LKEY_MAX INDEX_LONG_LKEY_LEN

#define INDEX_RECORD_VERSION 1
#define INDEX_RECORD_HEAD_LEN 56
/* Record flag bit 0: a 32-byte version trailer follows the head. */
#define INDEX_RECORD_FLAG_VERSION 1u
#define INDEX_RECORD_VERSION_LEN 32
/* "versions" keys: an escaped key up to this long is stored whole. */
#define INDEX_VKEY_DIRECT_MAX 464
/* Longest "versions" key: bid | 464 escaped bytes | hash | id. */
#define INDEX_VKEY_MAX (INDEX_BID_LEN + INDEX_VKEY_DIRECT_MAX + INDEX_HASH_LEN + 16)
#define INDEX_EXTENT_REC_LEN 24
#define INDEX_BUCKET_VERSION 1

/* Raw length of an upload id (INDEX_UPLOAD_ID_LEN hex chars). */
#define INDEX_UPLOAD_RAW_LEN 16
#define INDEX_UPLOAD_VERSION 1
#define INDEX_UPLOAD_HEAD_LEN 24
/* "parts" key: upload id | part number. */
#define INDEX_PART_KEY_LEN (INDEX_UPLOAD_RAW_LEN + 4)
/* "bucketconfig" key: bucket id | kind. */
#define INDEX_BUCKETCONFIG_KEY_LEN (INDEX_BID_LEN + 1)
/* "bucketuploads" key: bucket id | upload id. */
#define INDEX_BUCKETUPLOAD_KEY_LEN (INDEX_BID_LEN + INDEX_UPLOAD_RAW_LEN)

/* The key tree (see above). */
#define INDEX_TREE_CHUNK 480
#define INDEX_TREE_STR_MAX (2 * INDEX_MAX_KEY + 2 + INDEX_UPLOAD_RAW_LEN)
#define INDEX_TREE_DEPTH ((INDEX_TREE_STR_MAX + INDEX_TREE_CHUNK - 1) / INDEX_TREE_CHUNK)
#define INDEX_TREE_ROOT_OBJECTS(bid) ((UINT64_C(1) << 63) | (uint64_t)(bid))
#define INDEX_TREE_ROOT_UPLOADS(bid) ((UINT64_C(1) << 62) | (uint64_t)(bid))

/* Writes the 8-byte big-endian form of 'v' to 'p'. */
void index__put_be64(uint8_t *p, uint64_t v);
uint64_t index__get_be64(const uint8_t *p);
void index__put_be32(uint8_t *p, uint32_t v);
uint32_t index__get_be32(const uint8_t *p);
void index__put_le16(uint8_t *p, uint16_t v);
void index__put_le32(uint8_t *p, uint32_t v);
void index__put_le64(uint8_t *p, uint64_t v);
uint16_t index__get_le16(const uint8_t *p);
uint32_t index__get_le32(const uint8_t *p);
uint64_t index__get_le64(const uint8_t *p);

/*
 * Encodes the LMDB key of S3 key 'key' (1..INDEX_MAX_KEY bytes) in bucket
 * 'bucket_id' into 'out' (INDEX_LKEY_MAX bytes). Returns its length.
 */
size_t index__objkey_encode(uint8_t *out, uint64_t bucket_id, struct slice key);

/*
 * Encodes a seek target: the LMDB key at or before which every object
 * with full key >= 'key' is found (see list.c). For a long 'key' it is
 * bid | key[0..480) | 16 zero bytes, which sorts before every member of
 * the run with that prefix. 'key' may be empty. Returns its length.
 */
size_t index__objkey_seek_encode(uint8_t *out, uint64_t bucket_id, struct slice key);

/*
 * Writes esc('key') (keys.h: each 00 byte as 00 FF) into 'out' (room for
 * 2 * key.len bytes) and returns its length. esc is order-preserving and
 * prefix-preserving, so esc(X) is a seek target for "keys >= X".
 */
size_t index__key_escape(uint8_t *out, struct slice key);
/*
 * Writes the key-tree string of an upload, esc('key') | 00 00 | 'raw_id'
 * (INDEX_UPLOAD_RAW_LEN bytes), into 'out' (INDEX_TREE_STR_MAX bytes) and
 * returns its length.
 */
size_t index__upload_tree_str(uint8_t *out, struct slice key, const uint8_t *raw_id);

/* Returns true when an LMDB object key of length 'len' is a long key. */
static inline bool
index__objkey_is_long(size_t len)
{
    return len == INDEX_LONG_LKEY_LEN;
}

#endif
