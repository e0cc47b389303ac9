/*
 * xml_in.c: S3 request bodies (DeleteObjects, CompleteMultipartUpload,
 * CreateBucket, Tagging, CORSConfiguration, BucketLoggingStatus,
 * ServerSideEncryptionConfiguration, batch GET) parsed with expat.
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

/* Deepest element of any schema below (AccessControlPolicy's
 * root/AccessControlList/Grant/Grantee/ID is the deepest), plus one. */
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
    bool may_repeat;  /* a text element that may appear more than once */
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
        if ((parent->seen & (1u << node)) && !ctx->nodes[node].may_repeat) {
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

enum {
    DEL_ROOT,
    DEL_QUIET,
    DEL_OBJECT,
    DEL_KEY,
    DEL_VERSION_ID,
    DEL_ETAG,
    DEL_LAST_MODIFIED,
    DEL_SIZE
};

static const struct xml_node xml_delete_nodes[] = {
    [DEL_ROOT] = {"Delete", -1, false},
    [DEL_QUIET] = {"Quiet", DEL_ROOT, true},
    [DEL_OBJECT] = {"Object", DEL_ROOT, false},
    [DEL_KEY] = {"Key", DEL_OBJECT, true},
    [DEL_VERSION_ID] = {"VersionId", DEL_OBJECT, true},
    [DEL_ETAG] = {"ETag", DEL_OBJECT, true},
    [DEL_LAST_MODIFIED] = {"LastModifiedTime", DEL_OBJECT, true},
    [DEL_SIZE] = {"Size", DEL_OBJECT, true},
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
    st->objects[st->n++] = (struct xml_delete_object){.key = SLICE_NULL};
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
    case DEL_ETAG:
        st->objects[st->n - 1].etag = xml_dup(ctx, xml_trim(text));
        break;
    case DEL_LAST_MODIFIED:
        st->objects[st->n - 1].last_modified = xml_dup(ctx, xml_trim(text));
        break;
    case DEL_SIZE:
        st->objects[st->n - 1].size = xml_dup(ctx, xml_trim(text));
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
/* CORSConfiguration                                                  */
/* ------------------------------------------------------------------ */

enum {
    CORS_ROOT,
    CORS_RULE,
    CORS_ID,
    CORS_ORIGIN,
    CORS_METHOD,
    CORS_HEADER,
    CORS_EXPOSE,
    CORS_MAX_AGE
};

static const struct xml_node xml_cors_nodes[] = {
    [CORS_ROOT] = {"CORSConfiguration", -1, false, false},
    [CORS_RULE] = {"CORSRule", CORS_ROOT, false, false},
    [CORS_ID] = {"ID", CORS_RULE, true, false},
    [CORS_ORIGIN] = {"AllowedOrigin", CORS_RULE, true, true},
    [CORS_METHOD] = {"AllowedMethod", CORS_RULE, true, true},
    [CORS_HEADER] = {"AllowedHeader", CORS_RULE, true, true},
    [CORS_EXPOSE] = {"ExposeHeader", CORS_RULE, true, true},
    [CORS_MAX_AGE] = {"MaxAgeSeconds", CORS_RULE, true, false},
};

struct xml_cors_state {
    struct xml_cors_rule *rules; /* heap; copied to the arena at the end */
    size_t n, cap;
    size_t n_values; /* every list entry of every rule, bounded */
};

/* Appends 'v' to one of the current rule's lists (arena arrays). */
static void
xml_cors_push(struct xml_ctx *ctx, struct xml_cors_state *st, struct slice **list, size_t *n,
              struct slice v)
{
    if (++st->n_values > XML_IN_CORS_VALUES_MAX) {
        xml_fail(ctx, XML_IN_TOO_MANY);
        return;
    }
    /* The capacity is implicit: 4, then doubled whenever n reaches a
     * power of two, so the copies cost O(n) in all. */
    if (*n == 0 || (*n >= 4 && (*n & (*n - 1)) == 0)) {
        struct slice *grown = arena_calloc(ctx->a, *n ? *n * 2 : 4, sizeof(*grown));
        if (*n)
            memcpy(grown, *list, *n * sizeof(*grown));
        *list = grown;
    }
    (*list)[(*n)++] = xml_dup(ctx, v);
}

static void
xml_cors_start(struct xml_ctx *ctx, int node)
{
    struct xml_cors_state *st = ctx->doc;

    if (node != CORS_RULE)
        return;
    if (st->n == XML_IN_CORS_RULES_MAX) {
        xml_fail(ctx, XML_IN_TOO_MANY);
        return;
    }
    xml_grow((void **)&st->rules, &st->cap, st->n, sizeof(*st->rules));
    st->rules[st->n++] = (struct xml_cors_rule){.id = SLICE_NULL};
}

static void
xml_cors_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct xml_cors_state *st = ctx->doc;
    struct xml_cors_rule *rule = st->n ? &st->rules[st->n - 1] : NULL;
    struct slice v = xml_trim(text);

    (void)seen;
    switch (node) {
    case CORS_ID:
        rule->id = xml_dup(ctx, v);
        break;
    case CORS_ORIGIN:
        xml_cors_push(ctx, st, &rule->origins, &rule->n_origins, v);
        break;
    case CORS_METHOD:
        xml_cors_push(ctx, st, &rule->methods, &rule->n_methods, v);
        break;
    case CORS_HEADER:
        xml_cors_push(ctx, st, &rule->headers, &rule->n_headers, v);
        break;
    case CORS_EXPOSE:
        xml_cors_push(ctx, st, &rule->expose, &rule->n_expose, v);
        break;
    case CORS_MAX_AGE:
        rule->max_age = xml_dup(ctx, v);
        break;
    default:
        break;
    }
}

enum xml_in_status
xml_parse_cors(const char *body, size_t len, struct arena *a, struct xml_cors_request *out)
{
    struct xml_cors_state st = {0};
    struct xml_ctx *ctx = xcalloc(1, sizeof(*ctx));
    enum xml_in_status status;

    ctx->a = a;
    ctx->nodes = xml_cors_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_cors_nodes);
    ctx->on_start = xml_cors_start;
    ctx->on_end = xml_cors_end;
    ctx->doc = &st;
    status = xml_run(ctx, body, len);
    if (status == XML_IN_OK && st.n == 0)
        status = XML_IN_MALFORMED;
    if (status == XML_IN_OK) {
        out->rules = arena_memdup(a, st.rules, st.n * sizeof(*st.rules));
        out->n_rules = st.n;
    }
    free(st.rules);
    free(ctx);
    return status;
}

/* ------------------------------------------------------------------ */
/* BucketLoggingStatus                                                */
/* ------------------------------------------------------------------ */

enum { LOG_ROOT, LOG_ENABLED, LOG_TARGET, LOG_PREFIX };

static const struct xml_node xml_logging_nodes[] = {
    [LOG_ROOT] = {"BucketLoggingStatus", -1, false, false},
    [LOG_ENABLED] = {"LoggingEnabled", LOG_ROOT, false, false},
    [LOG_TARGET] = {"TargetBucket", LOG_ENABLED, true, false},
    [LOG_PREFIX] = {"TargetPrefix", LOG_ENABLED, true, false},
};

static void
xml_logging_start(struct xml_ctx *ctx, int node)
{
    struct xml_logging_request *out = ctx->doc;
    if (node == LOG_ENABLED) {
        if (out->is_enabled)
            xml_fail(ctx, XML_IN_MALFORMED);
        out->is_enabled = true;
    }
}

static void
xml_logging_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct xml_logging_request *out = ctx->doc;
    if (node == LOG_ENABLED && !(seen & (1u << LOG_TARGET)))
        xml_fail(ctx, XML_IN_MALFORMED);
    else if (node == LOG_TARGET)
        out->target_bucket = xml_dup(ctx, xml_trim(text));
    else if (node == LOG_PREFIX)
        out->target_prefix = xml_dup(ctx, text);
}

enum xml_in_status
xml_parse_logging(const char *body, size_t len, struct arena *a, struct xml_logging_request *out)
{
    struct xml_ctx *ctx = xcalloc(1, sizeof(*ctx));
    enum xml_in_status status;

    memset(out, 0, sizeof(*out));
    ctx->a = a;
    ctx->nodes = xml_logging_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_logging_nodes);
    ctx->on_start = xml_logging_start;
    ctx->on_end = xml_logging_end;
    ctx->doc = out;
    status = xml_run(ctx, body, len);
    free(ctx);
    return status;
}

/* ------------------------------------------------------------------ */
/* PutBucketEncryption                                                */
/* ------------------------------------------------------------------ */

enum { ENC_ROOT, ENC_RULE, ENC_DEFAULT, ENC_ALGORITHM, ENC_KMS_KEY, ENC_BUCKET_KEY };

static const struct xml_node xml_encryption_nodes[] = {
    [ENC_ROOT] = {"ServerSideEncryptionConfiguration", -1, false, false},
    [ENC_RULE] = {"Rule", ENC_ROOT, false, false},
    [ENC_DEFAULT] = {"ApplyServerSideEncryptionByDefault", ENC_RULE, false, false},
    [ENC_ALGORITHM] = {"SSEAlgorithm", ENC_DEFAULT, true, false},
    [ENC_KMS_KEY] = {"KMSMasterKeyID", ENC_DEFAULT, true, false},
    [ENC_BUCKET_KEY] = {"BucketKeyEnabled", ENC_RULE, true, false},
};

static void
xml_encryption_start(struct xml_ctx *ctx, int node)
{
    struct xml_encryption_request *out = ctx->doc;

    if (node == ENC_RULE) {
        if (out->n_rules == XML_IN_ENCRYPTION_RULES_MAX) {
            xml_fail(ctx, XML_IN_TOO_MANY);
            return;
        }
        out->n_rules++;
    } else if (node == ENC_DEFAULT) {
        if (out->rules[out->n_rules - 1].has_default)
            xml_fail(ctx, XML_IN_MALFORMED);
        out->rules[out->n_rules - 1].has_default = true;
    }
}

static void
xml_encryption_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct xml_encryption_request *out = ctx->doc;
    struct xml_encryption_rule *rule = out->n_rules ? &out->rules[out->n_rules - 1] : NULL;

    (void)seen;
    switch (node) {
    case ENC_ALGORITHM:
        rule->algorithm = xml_dup(ctx, xml_trim(text));
        break;
    case ENC_KMS_KEY:
        rule->kms_key_id = xml_dup(ctx, xml_trim(text));
        break;
    case ENC_BUCKET_KEY:
        rule->bucket_key_enabled = xml_dup(ctx, xml_trim(text));
        break;
    default:
        break;
    }
}

enum xml_in_status
xml_parse_encryption(const char *body, size_t len, struct arena *a,
                     struct xml_encryption_request *out)
{
    struct xml_ctx *ctx = xcalloc(1, sizeof(*ctx));
    enum xml_in_status status;

    memset(out, 0, sizeof(*out));
    ctx->a = a;
    ctx->nodes = xml_encryption_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_encryption_nodes);
    ctx->on_start = xml_encryption_start;
    ctx->on_end = xml_encryption_end;
    ctx->doc = out;
    status = xml_run(ctx, body, len);
    free(ctx);
    return status;
}

/* ------------------------------------------------------------------ */
/* Batch GET                                                          */
/* ------------------------------------------------------------------ */

enum { BAT_ROOT, BAT_CONTINUE, BAT_ENTRY, BAT_KEY, BAT_MEMBER, BAT_RANGE };

static const struct xml_node xml_batch_nodes[] = {
    [BAT_ROOT] = {"Batch", -1, false, false},
    [BAT_CONTINUE] = {"ContinueOnError", BAT_ROOT, true, false},
    [BAT_ENTRY] = {"Entry", BAT_ROOT, false, false},
    [BAT_KEY] = {"Key", BAT_ENTRY, true, false},
    [BAT_MEMBER] = {"Member", BAT_ENTRY, true, false},
    [BAT_RANGE] = {"Range", BAT_ENTRY, true, false},
};

struct xml_batch_state {
    bool is_continue;
    struct xml_batch_entry *entries; /* heap; copied to the arena at the end */
    size_t n, cap;
};

static void
xml_batch_start(struct xml_ctx *ctx, int node)
{
    struct xml_batch_state *st = ctx->doc;

    if (node != BAT_ENTRY)
        return;
    if (st->n == XML_IN_BATCH_MAX) {
        xml_fail(ctx, XML_IN_TOO_MANY);
        return;
    }
    xml_grow((void **)&st->entries, &st->cap, st->n, sizeof(*st->entries));
    st->entries[st->n++] = (struct xml_batch_entry){SLICE_NULL, SLICE_NULL, SLICE_NULL};
}

static void
xml_batch_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct xml_batch_state *st = ctx->doc;
    struct slice v;

    switch (node) {
    case BAT_CONTINUE:
        v = xml_trim(text);
        if (slice_eq_nocase(v, "true"))
            st->is_continue = true;
        else if (slice_eq_nocase(v, "false"))
            st->is_continue = false;
        else
            xml_fail(ctx, XML_IN_MALFORMED);
        break;
    case BAT_ENTRY:
        if (!(seen & (1u << BAT_KEY)))
            xml_fail(ctx, XML_IN_MALFORMED);
        break;
    case BAT_KEY:
    case BAT_MEMBER:
        /* Verbatim: spaces and newlines are legal in keys and member names. */
        if (text.len == 0)
            xml_fail(ctx, XML_IN_MALFORMED);
        else if (node == BAT_KEY)
            st->entries[st->n - 1].key = xml_dup(ctx, text);
        else
            st->entries[st->n - 1].member = xml_dup(ctx, text);
        break;
    case BAT_RANGE:
        st->entries[st->n - 1].range = xml_dup(ctx, xml_trim(text));
        break;
    default:
        break;
    }
}

enum xml_in_status
xml_parse_batch(const char *body, size_t len, struct arena *a, struct xml_batch_request *out)
{
    struct xml_batch_state st = {0};
    struct xml_ctx *ctx = xcalloc(1, sizeof(*ctx));
    enum xml_in_status status;

    ctx->a = a;
    ctx->nodes = xml_batch_nodes;
    ctx->n_nodes = ARRAY_LEN(xml_batch_nodes);
    ctx->on_start = xml_batch_start;
    ctx->on_end = xml_batch_end;
    ctx->doc = &st;
    status = xml_run(ctx, body, len);
    if (status == XML_IN_OK && st.n == 0)
        status = XML_IN_MALFORMED;
    if (status == XML_IN_OK) {
        out->is_continue_on_error = st.is_continue;
        out->entries = arena_memdup(a, st.entries, st.n * sizeof(*st.entries));
        out->n_entries = st.n;
    }
    free(st.entries);
    free(ctx);
    return status;
}

/* ------------------------------------------------------------------ */
/* Small fixed documents (xml_parse_fields)                           */
/* ------------------------------------------------------------------ */

#define XML_FIELDS_NODES_MAX 16

struct xml_fields_state {
    struct xml_field *fields;
    size_t n;
    int field_node[XML_FIELDS_MAX]; /* node id of each field's text element */
};

static void
xml_fields_start(struct xml_ctx *ctx, int node)
{
    (void)ctx;
    (void)node;
}

static void
xml_fields_end(struct xml_ctx *ctx, int node, uint32_t seen, struct slice text)
{
    struct xml_fields_state *st = ctx->doc;
    (void)seen;
    for (size_t i = 0; i < st->n; i++)
        if (st->field_node[i] == node) {
            if (st->fields[i].value.ptr) {
                /* The same path twice under repeated containers. */
                xml_fail(ctx, XML_IN_MALFORMED);
                return;
            }
            st->fields[i].value = xml_dup(ctx, xml_trim(text));
        }
}

/* Finds or adds the node 'name' (of 'len' bytes) under 'parent'. Returns its
 * id, or -1 when the table is full. */
static int
xml_fields_node(struct xml_node *nodes, char (*names)[64], size_t *n_nodes, int parent,
                const char *name, size_t len, bool is_text)
{
    for (size_t i = 1; i < *n_nodes; i++)
        if (nodes[i].parent == parent && strlen(nodes[i].name) == len &&
            memcmp(nodes[i].name, name, len) == 0 && nodes[i].is_text == is_text)
            return (int)i;
    if (*n_nodes == XML_FIELDS_NODES_MAX || len >= 64)
        return -1;
    memcpy(names[*n_nodes], name, len);
    names[*n_nodes][len] = 0;
    nodes[*n_nodes] = (struct xml_node){names[*n_nodes], parent, is_text, false};
    return (int)(*n_nodes)++;
}

enum xml_in_status
xml_parse_fields(const char *body, size_t len, const char *root, struct xml_field *fields,
                 size_t n_fields, struct arena *a)
{
    struct xml_node nodes[XML_FIELDS_NODES_MAX];
    char names[XML_FIELDS_NODES_MAX][64];
    struct xml_fields_state st = {.fields = fields, .n = n_fields};
    size_t n_nodes = 1;
    enum xml_in_status status = XML_IN_MALFORMED;
    struct xml_ctx *ctx = NULL;

    assert(n_fields <= XML_FIELDS_MAX);
    nodes[0] = (struct xml_node){root, -1, false, false};
    for (size_t i = 0; i < n_fields; i++) {
        const char *p = fields[i].path;
        int parent = 0;
        fields[i].value = SLICE_NULL;
        for (;;) {
            const char *slash = strchr(p, '/');
            size_t l = slash ? (size_t)(slash - p) : strlen(p);
            parent = xml_fields_node(nodes, names, &n_nodes, parent, p, l, !slash);
            assert(parent >= 0);
            if (!slash)
                break;
            p = slash + 1;
        }
        st.field_node[i] = parent;
    }
    ctx = xcalloc(1, sizeof(*ctx));
    ctx->a = a;
    ctx->nodes = nodes;
    ctx->n_nodes = n_nodes;
    ctx->on_start = xml_fields_start;
    ctx->on_end = xml_fields_end;
    ctx->doc = &st;
    status = xml_run(ctx, body, len);
    free(ctx);
    if (status != XML_IN_OK)
        for (size_t i = 0; i < n_fields; i++)
            fields[i].value = SLICE_NULL;
    return status;
}

/* ------------------------------------------------------------------ */
/* PublicAccessBlockConfiguration, OwnershipControls                  */
/* ------------------------------------------------------------------ */

enum { PAB_ROOT, PAB_BLOCK_ACLS, PAB_IGNORE_ACLS, PAB_BLOCK_POLICY, PAB_RESTRICT };

static const struct xml_node xml_pab_nodes[] = {
    [PAB_ROOT] = {"PublicAccessBlockConfiguration", -1, false, false},
    [PAB_BLOCK_ACLS] = {"BlockPublicAcls", PAB_ROOT, true, false},
    [PAB_IGNORE_ACLS] = {"IgnorePublicAcls", PAB_ROOT, true, false},
    [PAB_BLOCK_POLICY] = {"BlockPublicPolicy", PAB_ROOT, true, false},
    [PAB_RESTRICT] = {"RestrictPublicBuckets", PAB_ROOT, true, false},
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
    [OWN_ROOT] = {"OwnershipControls", -1, false, false},
    [OWN_RULE] = {"Rule", OWN_ROOT, false, false},
    [OWN_VALUE] = {"ObjectOwnership", OWN_RULE, true, false},
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
    [ACP_ROOT] = {"AccessControlPolicy", -1, false, false},
    [ACP_OWNER] = {"Owner", ACP_ROOT, false, false},
    [ACP_OWNER_ID] = {"ID", ACP_OWNER, true, false},
    [ACP_OWNER_NAME] = {"DisplayName", ACP_OWNER, true, false},
    [ACP_LIST] = {"AccessControlList", ACP_ROOT, false, false},
    [ACP_GRANT] = {"Grant", ACP_LIST, false, false},
    [ACP_GRANTEE] = {"Grantee", ACP_GRANT, false, false},
    [ACP_PERMISSION] = {"Permission", ACP_GRANT, true, false},
    [ACP_G_ID] = {"ID", ACP_GRANTEE, true, false},
    [ACP_G_NAME] = {"DisplayName", ACP_GRANTEE, true, false},
    [ACP_G_URI] = {"URI", ACP_GRANTEE, true, false},
    [ACP_G_EMAIL] = {"EmailAddress", ACP_GRANTEE, true, false},
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
