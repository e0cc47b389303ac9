/*
 * key.h: object keys as text. Which keys the server lets a client write
 * (S3 keys are UTF-8), and how any stored key, whatever its bytes, is
 * written as XML 1.0 text. Pure functions: no allocation, no I/O, safe
 * from any thread.
 */
#ifndef SHARD_SERVER_KEY_H
#define SHARD_SERVER_KEY_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most bytes xml_text_put writes for one input byte ("&quot;"). */
#define XML_TEXT_EXPANSION 6

/*
 * Returns the length (1..4) of the well-formed UTF-8 sequence at 'p' (of
 * 'len' bytes left), or 0 when it is not one: a stray continuation byte,
 * a truncated sequence, an overlong form, a surrogate (U+D800..U+DFFF) or
 * a code point above U+10FFFF.
 */
size_t key_utf8_len(const uint8_t *p, size_t len);

/*
 * True when 'key' may be written (PutObject, CopyObject's destination,
 * CreateMultipartUpload...): well-formed UTF-8 without NUL, as S3 wants.
 * Every other control character is valid and accepted, as S3 accepts it;
 * the length limit is checked elsewhere (KeyTooLongError).
 */
bool key_is_writable(struct slice key);

/*
 * Writes 's' as XML 1.0 character data into 'p', which has room for
 * XML_TEXT_EXPANSION * s.len bytes, and returns the end of what it wrote.
 * & < > " ' become entities; LF and CR become &#xA; and &#xD; (so that a
 * parser's end-of-line normalization keeps them); TAB and every other
 * character XML allows are copied. What XML 1.0 cannot carry at all
 * (other C0 controls, including NUL; U+FFFE and U+FFFF) becomes one
 * U+FFFD, and so does each byte that is not part of well-formed UTF-8, so
 * the document stays well-formed whatever the stored keys hold. Such keys
 * list exactly only with encoding-type=url (which libshard and the SDKs
 * ask for).
 */
char *xml_text_put(char *p, struct slice s);

#endif
