/*
 * xml_in.c: S3 request bodies (DeleteObjects, CompleteMultipartUpload,
 * CreateBucket, Tagging) parsed with expat.
 *
 * One small engine walks a per-document schema: a table of known elements,
 * each a container or a text element, with its parent. Unknown elements
 * under a container are skipped with their subtree; anything else that
 * does not fit the table is MALFORMED. Character data is kept only inside
 * text elements and is bounded by XML_IN_TEXT_MAX. A DOCTYPE or entity
 * declaration stops the parser before any entity can be expanded, so
 * "billion laughs" bodies cost nothing. The first error wins: once
 * 'status' leaves XML_IN_OK the handlers do nothing more, since expat may
 * still deliver a callback or two after XML_StopParser().
 */
#include "server/xml_in.h"

#include <assert.h>
#include <expat.h>
#include <stdlib.h>

/* Deepest element of any schema below, plus one. */
#define XML_IN_DEPTH_MAX 6
/* expat takes an int length; feed large bodies in pieces no larger than this. */
#define XML_IN_CHUNK_LEN (1u << 20)

/* ------------------------------------------------------------------ */
/* Schema-driven engine                                               */
/* ------------------------------------------------------------------ */

/* One known element. Node 0 is the root; ids stay below 32 (bit masks). */
struct xml_node {
    const char *name; /* local name */
    int parent;       /* node id, -1 for the root */
    bool is_text;     /* holds character data and no elements */
};

struct xml_frame {
    int node;
    uint32_t seen; /* bit per text child already seen, to refuse repeats */
};

struct xml_ctx;

/* Called when known element 'node' opens. */
typedef void xml_start_fn(struct xml_ctx *ctx, int node);
/* Called when known element 'node' closes; 'seen' has a bit per text child
 * it had, 'text' is its character data (text elements only; borrowed until
 * the next element opens). */
typedef void xml_end_fn(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text);

struct xml_ctx {
    XML_Parser parser;
    struct arena *a;
    const struct xml_node *nodes;
    size_t n_nodes;
    xml_start_fn *on_start;
    xml_end_fn *on_end;
    void *doc; /* the document's own state */
    enum xml_in_status status;
    int depth;                /* frames in use */
    unsigned long skip_depth; /* unknown elements open above us */
    struct xml_frame stack[XML_IN_DEPTH_MAX];
    size_t text_len;
    char text[XML_IN_TEXT_MAX];
};

/* Records the first error 'status' and stops expat. */
static void
xml_fail(struct xml_ctx *ctx, enum xml_in_status status)
{
    if (ctx->status != XML_IN_OK)
        return;
    ctx->status = status;
    XML_StopParser(ctx->parser, XML_FALSE);
}

/* Returns 'name' without any "prefix:", as expat runs without namespace processing. */
static const char *
xml_local_name(const XML_Char *name)
{
    const char *colon = strrchr(name, ':');
    return colon ? colon + 1 : name;
}

static bool
xml_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Returns 's' without leading and trailing XML whitespace. */
static struct slice
xml_trim(struct slice s)
{
    while (s.len && xml_is_space(s.ptr[0])) {
        s.ptr++;
        s.len--;
    }
    while (s.len && xml_is_space(s.ptr[s.len - 1]))
        s.len--;
    return s;
}

/* Copies 's' into the arena with a trailing NUL; returns the copy. */
static struct slice
xml_dup(struct xml_ctx *ctx, struct slice s)
{
    return (struct slice){arena_strndup(ctx->a, s.ptr, s.len), s.len};
}

static void XMLCALL
xml_on_start(void *user, const XML_Char *name, const XML_Char **attrs)
{
    struct xml_ctx *ctx = user;
    const char *local = xml_local_name(name);
    struct xml_frame *parent;
    int node = -1;

    (void)attrs; /* xmlns and everything else is ignored */
    if (ctx->status != XML_IN_OK)
        return;
    if (ctx->skip_depth) {
        ctx->skip_depth++;
        return;
    }
    if (ctx->depth == 0) {
        if (strcmp(local, ctx->nodes[0].name) != 0) {
            xml_fail(ctx, XML_IN_MALFORMED);
            return;
        }
        ctx->stack[ctx->depth++] = (struct xml_frame){0, 0};
        ctx->on_start(ctx, 0);
        return;
    }

    parent = &ctx->stack[ctx->depth - 1];
    if (ctx->nodes[parent->node].is_text) {
        xml_fail(ctx, XML_IN_MALFORMED);
        return;
    }
    for (size_t i = 1; i < ctx->n_nodes; i++) {
        if (ctx->nodes[i].parent == parent->node && strcmp(local, ctx->nodes[i].name) == 0) {
            node = (int)i;
            break;
        }
    }
    if (node < 0) {
        ctx->skip_depth = 1;
        return;
    }
    if (ctx->nodes[node].is_text) {
        if (parent->seen & (1u << node)) {
            xml_fail(ctx, XML_IN_MALFORMED);
            return;
        }
        parent->seen |= 1u << node;
        ctx->text_len = 0;
    }
    assert(ctx->depth < XML_IN_DEPTH_MAX);
    ctx->stack[ctx->depth++] = (struct xml_frame){node, 0};
    ctx->on_start(ctx, node);
}

static void XMLCALL
xml_on_end(void *user, const XML_Char *name)
{
    struct xml_ctx *ctx = user;
    struct xml_frame frame;
    struct slice text = SLICE_NULL;

    (void)name; /* expat has already matched it to the start tag */
    if (ctx->status != XML_IN_OK)
        return;
    if (ctx->skip_depth) {
        ctx->skip_depth--;
        return;
    }
    assert(ctx->depth > 0);
    frame = ctx->stack[--ctx->depth];
    if (ctx->nodes[frame.node].is_text)
        text = (struct slice){ctx->text, ctx->text_len};
    ctx->on_end(ctx, frame.node, frame.seen, text);
}

static void XMLCALL
xml_on_text(void *user, const XML_Char *s, int len)
{
    struct xml_ctx *ctx = user;

    if (ctx->status != XML_IN_OK || ctx->skip_depth || ctx->depth == 0)
        return;
    if (!ctx->nodes[ctx->stack[ctx->depth - 1].node].is_text)
        return; /* whitespace (or stray text) between elements */
    if (len < 0 || (size_t)len > sizeof(ctx->text) - ctx->text_len) {
        xml_fail(ctx, XML_IN_MALFORMED);
        return;
    }
    memcpy(ctx->text + ctx->text_len, s, (size_t)len);
    ctx->text_len += (size_t)len;
}

/* A DOCTYPE may declare entities; S3 bodies never carry one, so refuse it. */
static void XMLCALL
xml_on_doctype(void *user, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
               int has_internal_subset)
{
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal_subset;
    xml_fail(user, XML_IN_MALFORMED);
}

static void XMLCALL
xml_on_entity_decl(void *user, const XML_Char *name, int is_parameter, const XML_Char *value,
                   int value_len, const XML_Char *base, const XML_Char *sysid,
                   const XML_Char *pubid, const XML_Char *notation)
{
    (void)name;
    (void)is_parameter;
    (void)value;
    (void)value_len;
    (void)base;
    (void)sysid;
    (void)pubid;
    (void)notation;
    xml_fail(user, XML_IN_MALFORMED);
}

/*
 * Parses 'len' bytes at 'body' against the schema in 'ctx' (its 'nodes',
 * hooks, 'doc' and 'a' set by the caller). Returns the first error the
 * hooks recorded, XML_IN_MALFORMED when expat finds the body not
 * well-formed, else XML_IN_OK.
 */
static enum xml_in_status
xml_run(struct xml_ctx *ctx, const char *body, size_t len)
{
    size_t off = 0;

    ctx->status = XML_IN_OK;
    ctx->depth = 0;
    ctx->skip_depth = 0;
    ctx->text_len = 0;
    ctx->parser = XML_ParserCreate(NULL);
    if (!ctx->parser) {
        /* Like xmalloc(): bookkeeping allocations do not fail softly. */
        log_error("xml_in: out of memory creating the XML parser");
        abort();
    }
    XML_SetUserData(ctx->parser, ctx);
    XML_SetParamEntityParsing(ctx->parser, XML_PARAM_ENTITY_PARSING_NEVER);
    XML_SetStartDoctypeDeclHandler(ctx->parser, xml_on_doctype);
    XML_SetEntityDeclHandler(ctx->parser, xml_on_entity_decl);
    XML_SetElementHandler(ctx->parser, xml_on_start, xml_on_end);
    XML_SetCharacterDataHandler(ctx->parser, xml_on_text);

    do {
        size_t n = MIN(len - off, (size_t)XML_IN_CHUNK_LEN);
        bool is_final = off + n == len;
        if (XML_Parse(ctx->parser, body ? body + off : NULL, (int)n, is_final) != XML_STATUS_OK) {
            xml_fail(ctx, XML_IN_MALFORMED);
            break;
        }
        off += n;
    } while (off < len);

    XML_ParserFree(ctx->parser);
    ctx->parser = NULL;
    return ctx->status;
}

/* Makes room for one more element of 'elem_len' bytes in the heap array
 * '*items' holding 'n' of '*cap'. */
static void
xml_grow(void **items, size_t *cap, size_t n, size_t elem_len)
{
    if (n < *cap)
        return;
    *cap = *cap ? *cap * 2 : 16;
    *items = xrealloc(*items, *cap * elem_len);
}

/* ------------------------------------------------------------------ */
/* DeleteObjects                                                      */
/* ------------------------------------------------------------------ */

enum { DEL_ROOT, DEL_QUIET, DEL_OBJECT, DEL_KEY, DEL_VERSION_ID };

static const struct xml_node xml_delete_nodes[] = {
    [DEL_ROOT] = {"Delete", -1, false},
    [DEL_QUIET] = {"Quiet", DEL_ROOT, true},
    [DEL_OBJECT] = {"Object", DEL_ROOT, false},
    [DEL_KEY] = {"Key", DEL_OBJECT, true},
    [DEL_VERSION_ID] = {"VersionId", DEL_OBJECT, true},
};

struct xml_delete_state {
    bool is_quiet;
    struct xml_delete_object *objects; /* heap; copied to the arena at the end */
    size_t n, cap;
};

static void
xml_delete_start(struct xml_ctx *ctx, int node)
{
    struct xml_delete_state *st = ctx->doc;

    if (node != DEL_OBJECT)
        return;
    if (st->n == XML_IN_DELETE_MAX) {
        xml_fail(ctx, XML_IN_TOO_MANY);
        return;
    }
    xml_grow((void **)&st->objects, &st->cap, st->n, sizeof(*st->objects));
    st->objects[st->n++] = (struct xml_delete_object){SLICE_NULL, SLICE_NULL};
}

static void
xml_delete_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct xml_delete_state *st = ctx->doc;
    struct slice v;

    switch (node) {
    case DEL_QUIET:
        v = xml_trim(text);
        if (slice_eq_nocase(v, "true"))
            st->is_quiet = true;
        else if (slice_eq_nocase(v, "false"))
            st->is_quiet = false;
        else
            xml_fail(ctx, XML_IN_MALFORMED);
        break;
    case DEL_OBJECT:
        if (!(seen & (1u << DEL_KEY)))
            xml_fail(ctx, XML_IN_MALFORMED);
        break;
    case DEL_KEY:
        /* Keys are taken verbatim: spaces and newlines are legal in them. */
        if (text.len == 0)
            xml_fail(ctx, XML_IN_MALFORMED);
        else
            st->objects[st->n - 1].key = xml_dup(ctx, text);
        break;
    case DEL_VERSION_ID:
        st->objects[st->n - 1].version_id = xml_dup(ctx, xml_trim(text));
        break;
    default:
        break;
    }
}

enum xml_in_status
xml_parse_delete(const char *body, size_t len, struct arena *a, struct xml_delete_request *out)
{
    struct xml_delete_state st = {0};
    struct xml_ctx *ctx = xcalloc(1, sizeof(*ctx));
    enum xml_in_status status;

    ctx->a = a;
    ctx->nodes = xml_delete_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_delete_nodes);
    ctx->on_start = xml_delete_start;
    ctx->on_end = xml_delete_end;
    ctx->doc = &st;
    status = xml_run(ctx, body, len);
    if (status == XML_IN_OK && st.n == 0)
        status = XML_IN_MALFORMED;
    if (status == XML_IN_OK) {
        out->is_quiet = st.is_quiet;
        out->objects = arena_memdup(a, st.objects, st.n * sizeof(*st.objects));
        out->n_objects = st.n;
    }
    free(st.objects);
    free(ctx);
    return status;
}

/* ------------------------------------------------------------------ */
/* CompleteMultipartUpload                                            */
/* ------------------------------------------------------------------ */

enum {
    CMP_ROOT,
    CMP_PART,
    CMP_PART_NUMBER,
    CMP_ETAG,
    CMP_CRC32,
    CMP_CRC32C,
    CMP_CRC64NVME,
    CMP_SHA1,
    CMP_SHA256,
};

static const struct xml_node xml_complete_nodes[] = {
    [CMP_ROOT] = {"CompleteMultipartUpload", -1, false},
    [CMP_PART] = {"Part", CMP_ROOT, false},
    [CMP_PART_NUMBER] = {"PartNumber", CMP_PART, true},
    [CMP_ETAG] = {"ETag", CMP_PART, true},
    [CMP_CRC32] = {"ChecksumCRC32", CMP_PART, true},
    [CMP_CRC32C] = {"ChecksumCRC32C", CMP_PART, true},
    [CMP_CRC64NVME] = {"ChecksumCRC64NVME", CMP_PART, true},
    [CMP_SHA1] = {"ChecksumSHA1", CMP_PART, true},
    [CMP_SHA256] = {"ChecksumSHA256", CMP_PART, true},
};

struct xml_complete_state {
    struct xml_complete_part *parts; /* heap; copied to the arena at the end */
    size_t n, cap;
};

static void
xml_complete_start(struct xml_ctx *ctx, int node)
{
    struct xml_complete_state *st = ctx->doc;

    if (node != CMP_PART)
        return;
    if (st->n == XML_IN_PARTS_MAX) {
        xml_fail(ctx, XML_IN_TOO_MANY);
        return;
    }
    xml_grow((void **)&st->parts, &st->cap, st->n, sizeof(*st->parts));
    memset(&st->parts[st->n++], 0, sizeof(*st->parts));
}

static void
xml_complete_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct xml_complete_state *st = ctx->doc;
    struct xml_complete_part *part = st->n ? &st->parts[st->n - 1] : NULL;
    struct slice v = xml_trim(text);
    uint64_t number;

    switch (node) {
    case CMP_PART:
        if (!(seen & (1u << CMP_PART_NUMBER)))
            xml_fail(ctx, XML_IN_MALFORMED);
        break;
    case CMP_PART_NUMBER:
        if (parse_u64(v, XML_IN_PARTS_MAX, &number) != 0 || number == 0)
            xml_fail(ctx, XML_IN_MALFORMED);
        else
            part->part_number = (uint32_t)number;
        break;
    case CMP_ETAG:
        /* expat has already turned &quot; into '"'. */
        if (v.len >= 2 && v.ptr[0] == '"' && v.ptr[v.len - 1] == '"') {
            v.ptr++;
            v.len -= 2;
        }
        part->etag = xml_dup(ctx, v);
        break;
    case CMP_CRC32:
        part->checksum_crc32 = xml_dup(ctx, v);
        break;
    case CMP_CRC32C:
        part->checksum_crc32c = xml_dup(ctx, v);
        break;
    case CMP_CRC64NVME:
        part->checksum_crc64nvme = xml_dup(ctx, v);
        break;
    case CMP_SHA1:
        part->checksum_sha1 = xml_dup(ctx, v);
        break;
    case CMP_SHA256:
        part->checksum_sha256 = xml_dup(ctx, v);
        break;
    default:
        break;
    }
}

enum xml_in_status
xml_parse_complete(const char *body, size_t len, struct arena *a, struct xml_complete_request *out)
{
    struct xml_complete_state st = {0};
    struct xml_ctx *ctx = xcalloc(1, sizeof(*ctx));
    enum xml_in_status status;

    ctx->a = a;
    ctx->nodes = xml_complete_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_complete_nodes);
    ctx->on_start = xml_complete_start;
    ctx->on_end = xml_complete_end;
    ctx->doc = &st;
    status = xml_run(ctx, body, len);
    if (status == XML_IN_OK && st.n == 0)
        status = XML_IN_MALFORMED;
    if (status == XML_IN_OK) {
        out->parts = arena_memdup(a, st.parts, st.n * sizeof(*st.parts));
        out->n_parts = st.n;
    }
    free(st.parts);
    free(ctx);
    return status;
}

/* ------------------------------------------------------------------ */
/* CreateBucket                                                       */
/* ------------------------------------------------------------------ */

enum { CRB_ROOT, CRB_LOCATION };

static const struct xml_node xml_create_bucket_nodes[] = {
    [CRB_ROOT] = {"CreateBucketConfiguration", -1, false},
    [CRB_LOCATION] = {"LocationConstraint", CRB_ROOT, true},
};

static void
xml_create_bucket_start(struct xml_ctx *ctx, int node)
{
    (void)ctx;
    (void)node;
}

static void
xml_create_bucket_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct slice *location = ctx->doc;

    (void)seen;
    if (node == CRB_LOCATION)
        *location = xml_dup(ctx, xml_trim(text));
}

enum xml_in_status
xml_parse_create_bucket(const char *body, size_t len, struct arena *a, struct slice *location)
{
    struct slice found = SLICE_NULL;
    struct xml_ctx *ctx;
    enum xml_in_status status;

    *location = SLICE_NULL;
    if (xml_trim((struct slice){body, len}).len == 0)
        return XML_IN_OK;
    ctx = xcalloc(1, sizeof(*ctx));
    ctx->a = a;
    ctx->nodes = xml_create_bucket_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_create_bucket_nodes);
    ctx->on_start = xml_create_bucket_start;
    ctx->on_end = xml_create_bucket_end;
    ctx->doc = &found;
    status = xml_run(ctx, body, len);
    if (status == XML_IN_OK)
        *location = found;
    free(ctx);
    return status;
}

/* ------------------------------------------------------------------ */
/* Tagging (PutObjectTagging)                                         */
/* ------------------------------------------------------------------ */

enum { TAG_ROOT, TAG_SET, TAG_TAG, TAG_KEY, TAG_VALUE };

static const struct xml_node xml_tagging_nodes[] = {
    [TAG_ROOT] = {"Tagging", -1, false},    [TAG_SET] = {"TagSet", TAG_ROOT, false},
    [TAG_TAG] = {"Tag", TAG_SET, false},    [TAG_KEY] = {"Key", TAG_TAG, true},
    [TAG_VALUE] = {"Value", TAG_TAG, true},
};

struct xml_tagging_state {
    size_t max_tags;
    bool has_set;
    struct xml_tag *tags; /* heap; copied to the arena at the end */
    size_t n, cap;
};

static void
xml_tagging_start(struct xml_ctx *ctx, int node)
{
    struct xml_tagging_state *st = ctx->doc;

    if (node == TAG_SET) {
        if (st->has_set)
            xml_fail(ctx, XML_IN_MALFORMED);
        st->has_set = true;
        return;
    }
    if (node != TAG_TAG)
        return;
    if (st->n == st->max_tags) {
        xml_fail(ctx, XML_IN_TOO_MANY);
        return;
    }
    xml_grow((void **)&st->tags, &st->cap, st->n, sizeof(*st->tags));
    st->tags[st->n++] = (struct xml_tag){SLICE_NULL, SLICE_NULL};
}

static void
xml_tagging_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct xml_tagging_state *st = ctx->doc;

    switch (node) {
    case TAG_TAG:
        if ((seen & (1u << TAG_KEY | 1u << TAG_VALUE)) != (1u << TAG_KEY | 1u << TAG_VALUE))
            xml_fail(ctx, XML_IN_MALFORMED);
        break;
    case TAG_KEY:
        /* Verbatim, like object keys: whitespace is part of a tag. */
        st->tags[st->n - 1].key = xml_dup(ctx, text);
        break;
    case TAG_VALUE:
        st->tags[st->n - 1].value = xml_dup(ctx, text);
        break;
    default:
        break;
    }
}

enum xml_in_status
xml_parse_tagging(const char *body, size_t len, size_t max_tags, struct arena *a,
                  struct xml_tagging_request *out)
{
    struct xml_tagging_state st = {.max_tags = max_tags};
    struct xml_ctx *ctx = xcalloc(1, sizeof(*ctx));
    enum xml_in_status status;

    ctx->a = a;
    ctx->nodes = xml_tagging_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_tagging_nodes);
    ctx->on_start = xml_tagging_start;
    ctx->on_end = xml_tagging_end;
    ctx->doc = &st;
    status = xml_run(ctx, body, len);
    if (status == XML_IN_OK && !st.has_set)
        status = XML_IN_MALFORMED;
    if (status == XML_IN_OK) {
        out->tags = st.n ? arena_memdup(a, st.tags, st.n * sizeof(*st.tags)) : NULL;
        out->n_tags = st.n;
    }
    free(st.tags);
    free(ctx);
    return status;
}

/* ------------------------------------------------------------------ */
/* PublicAccessBlockConfiguration, OwnershipControls                  */
/* ------------------------------------------------------------------ */

enum { PAB_ROOT, PAB_BLOCK_ACLS, PAB_IGNORE_ACLS, PAB_BLOCK_POLICY, PAB_RESTRICT };

static const struct xml_node xml_pab_nodes[] = {
    [PAB_ROOT] = {"PublicAccessBlockConfiguration", -1, false},
    [PAB_BLOCK_ACLS] = {"BlockPublicAcls", PAB_ROOT, true},
    [PAB_IGNORE_ACLS] = {"IgnorePublicAcls", PAB_ROOT, true},
    [PAB_BLOCK_POLICY] = {"BlockPublicPolicy", PAB_ROOT, true},
    [PAB_RESTRICT] = {"RestrictPublicBuckets", PAB_ROOT, true},
};

static void
xml_ignore_start(struct xml_ctx *ctx, int node)
{
    (void)ctx;
    (void)node;
}

static void
xml_pab_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    bool *flags = ctx->doc;
    (void)seen;
    if (node == PAB_ROOT)
        return;
    text = xml_trim(text);
    if (slice_eq(text, SLICE_LIT("true")))
        flags[node - 1] = true;
    else if (!slice_eq(text, SLICE_LIT("false")))
        xml_fail(ctx, XML_IN_MALFORMED);
}

enum xml_in_status
xml_parse_public_access_block(const char *body, size_t len, bool flags[4])
{
    struct xml_ctx *ctx = xcalloc(1, sizeof(*ctx));
    memset(flags, 0, 4 * sizeof(*flags));
    ctx->nodes = xml_pab_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_pab_nodes);
    ctx->on_start = xml_ignore_start;
    ctx->on_end = xml_pab_end;
    ctx->doc = flags;
    enum xml_in_status status = xml_run(ctx, body, len);
    free(ctx);
    return status;
}

enum { OWN_ROOT, OWN_RULE, OWN_VALUE };

static const struct xml_node xml_own_nodes[] = {
    [OWN_ROOT] = {"OwnershipControls", -1, false},
    [OWN_RULE] = {"Rule", OWN_ROOT, false},
    [OWN_VALUE] = {"ObjectOwnership", OWN_RULE, true},
};

struct xml_own_state {
    int n_rules;
    struct slice value;
};

static void
xml_own_start(struct xml_ctx *ctx, int node)
{
    struct xml_own_state *st = ctx->doc;
    if (node == OWN_RULE && ++st->n_rules > 1)
        xml_fail(ctx, XML_IN_MALFORMED);
}

static void
xml_own_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct xml_own_state *st = ctx->doc;
    (void)seen;
    if (node == OWN_VALUE)
        st->value = xml_dup(ctx, xml_trim(text));
}

enum xml_in_status
xml_parse_ownership_controls(const char *body, size_t len, struct arena *a, struct slice *value)
{
    struct xml_own_state st = {0};
    struct xml_ctx *ctx = xcalloc(1, sizeof(*ctx));
    ctx->a = a;
    ctx->nodes = xml_own_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_own_nodes);
    ctx->on_start = xml_own_start;
    ctx->on_end = xml_own_end;
    ctx->doc = &st;
    enum xml_in_status status = xml_run(ctx, body, len);
    if (status == XML_IN_OK && st.value.len == 0)
        status = XML_IN_MALFORMED;
    *value = st.value;
    free(ctx);
    return status;
}

/* ------------------------------------------------------------------ */
/* AccessControlPolicy (PutBucketAcl, PutObjectAcl)                   */
/* ------------------------------------------------------------------ */

enum {
    ACP_ROOT,
    ACP_OWNER,
    ACP_OWNER_ID,
    ACP_OWNER_NAME,
    ACP_LIST,
    ACP_GRANT,
    ACP_GRANTEE,
    ACP_PERMISSION,
    ACP_G_ID,
    ACP_G_NAME,
    ACP_G_URI,
    ACP_G_EMAIL,
};

static const struct xml_node xml_acp_nodes[] = {
    [ACP_ROOT] = {"AccessControlPolicy", -1, false},
    [ACP_OWNER] = {"Owner", ACP_ROOT, false},
    [ACP_OWNER_ID] = {"ID", ACP_OWNER, true},
    [ACP_OWNER_NAME] = {"DisplayName", ACP_OWNER, true},
    [ACP_LIST] = {"AccessControlList", ACP_ROOT, false},
    [ACP_GRANT] = {"Grant", ACP_LIST, false},
    [ACP_GRANTEE] = {"Grantee", ACP_GRANT, false},
    [ACP_PERMISSION] = {"Permission", ACP_GRANT, true},
    [ACP_G_ID] = {"ID", ACP_GRANTEE, true},
    [ACP_G_NAME] = {"DisplayName", ACP_GRANTEE, true},
    [ACP_G_URI] = {"URI", ACP_GRANTEE, true},
    [ACP_G_EMAIL] = {"EmailAddress", ACP_GRANTEE, true},
};

struct xml_acp_state {
    struct xml_acp_request *out;
    bool has_list;
};

static void
xml_acp_start(struct xml_ctx *ctx, int node)
{
    struct xml_acp_state *st = ctx->doc;
    if (node == ACP_LIST) {
        if (st->has_list)
            xml_fail(ctx, XML_IN_MALFORMED);
        st->has_list = true;
    } else if (node == ACP_GRANT) {
        if (st->out->n_grants == XML_ACP_GRANTS_MAX) {
            xml_fail(ctx, XML_IN_TOO_MANY);
            return;
        }
        st->out->grants[st->out->n_grants++] = (struct xml_acp_grant){0};
    }
}

static void
xml_acp_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct xml_acp_state *st = ctx->doc;
    struct xml_acp_grant *g = st->out->n_grants ? &st->out->grants[st->out->n_grants - 1] : NULL;
    text = xml_trim(text);
    switch (node) {
    case ACP_OWNER_ID:
        st->out->owner_id = xml_dup(ctx, text);
        break;
    case ACP_GRANT:
        if (!(seen & (1u << ACP_PERMISSION)))
            xml_fail(ctx, XML_IN_MALFORMED);
        break;
    case ACP_GRANTEE: {
        int n = !!(seen & (1u << ACP_G_ID)) + !!(seen & (1u << ACP_G_URI)) +
                !!(seen & (1u << ACP_G_EMAIL));
        if (n != 1)
            xml_fail(ctx, XML_IN_MALFORMED);
        break;
    }
    case ACP_PERMISSION:
        g->permission = xml_dup(ctx, text);
        break;
    case ACP_G_ID:
        g->id = xml_dup(ctx, text);
        break;
    case ACP_G_URI:
        g->uri = xml_dup(ctx, text);
        break;
    case ACP_G_EMAIL:
        g->email = xml_dup(ctx, text);
        break;
    default:
        break;
    }
}

enum xml_in_status
xml_parse_acp(const char *body, size_t len, struct arena *a, struct xml_acp_request *out)
{
    struct xml_acp_state st = {.out = out};
    struct xml_ctx *ctx = xcalloc(1, sizeof(*ctx));
    memset(out, 0, sizeof(*out));
    out->grants = arena_calloc(a, XML_ACP_GRANTS_MAX, sizeof(*out->grants));
    ctx->a = a;
    ctx->nodes = xml_acp_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_acp_nodes);
    ctx->on_start = xml_acp_start;
    ctx->on_end = xml_acp_end;
    ctx->doc = &st;
    enum xml_in_status status = xml_run(ctx, body, len);
    if (status == XML_IN_OK && !st.has_list)
        status = XML_IN_MALFORMED;
    free(ctx);
    return status;
}
