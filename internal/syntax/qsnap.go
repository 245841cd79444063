//go:build cgo

package syntax

// Compiled queries, kept across processes. tree-sitter's ts_query_new
// analyses every pattern against the grammar's whole parse table: a
// one-node pattern takes 2 ms for TypeScript and 6 ms for Ruby, a rule's
// query up to ~80 ms (go test timings of every built-in query, this
// machine), and a three-line TypeScript change spent ~170 ms of its
// ~210 ms review compiling the seven queries its literals selected. The
// outcome of that analysis is plain data: the TSQuery struct is a dozen
// flat arrays and a language pointer. So a compiled query is written out
// (serializeQuery) and read back (loadQuery) in microseconds; the rule
// packs ship theirs in a snapshot made at build time (internal/rules,
// go generate), and CachedQuery takes a query from it when the grammar
// and the source are the same.
//
// The struct layouts below are tree-sitter's, of the version go.mod pins
// (github.com/smacker/go-tree-sitter, query.c): that file keeps them
// private. A layout that drifts from the linked library is caught by
// TestQueryRoundTrip here (a query read back serializes byte for byte as
// the compiled one and matches the same nodes) and by internal/rules'
// TestQuerySnapshot (every built-in query read from the snapshot matches
// as compiled on the rules' examples); at run time an entry is used only
// when its record of the struct sizes and of the grammar (ABI version,
// symbol, state and field counts) is the linked one's. The snapshot is
// built into the binary, never read from the change under review; its
// lengths are checked all the same (a damaged entry is compiled
// instead).

/*
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef uint16_t TSSymbol;
typedef uint16_t TSFieldId;

#define DP_ARRAY(T) struct { T *contents; uint32_t size; uint32_t capacity; }

typedef struct {
  TSSymbol symbol;
  TSSymbol supertype_symbol;
  TSFieldId field;
  uint16_t capture_ids[3];
  uint16_t depth;
  uint16_t alternative_index;
  uint16_t negated_field_list_id;
  bool is_named: 1;
  bool is_immediate: 1;
  bool is_last_child: 1;
  bool is_pass_through: 1;
  bool is_dead_end: 1;
  bool alternative_is_immediate: 1;
  bool contains_captures: 1;
  bool root_pattern_guaranteed: 1;
  bool parent_pattern_guaranteed: 1;
} dpQueryStep;

typedef struct { uint32_t offset; uint32_t length; } dpSlice;

typedef struct {
  DP_ARRAY(char) characters;
  DP_ARRAY(dpSlice) slices;
} dpSymbolTable;

typedef DP_ARRAY(uint8_t) dpCaptureQuantifiers;

typedef struct {
  uint16_t step_index;
  uint16_t pattern_index;
  bool is_rooted;
} dpPatternEntry;

typedef struct {
  dpSlice steps;
  dpSlice predicate_steps;
  uint32_t start_byte;
  bool is_non_local;
} dpQueryPattern;

typedef struct { uint32_t byte_offset; uint16_t step_index; } dpStepOffset;

typedef struct { uint32_t type; uint32_t value_id; } dpPredicateStep;

typedef struct {
  dpSymbolTable captures;
  dpSymbolTable predicate_values;
  DP_ARRAY(dpCaptureQuantifiers) capture_quantifiers;
  DP_ARRAY(dpQueryStep) steps;
  DP_ARRAY(dpPatternEntry) pattern_map;
  DP_ARRAY(dpPredicateStep) predicate_steps;
  DP_ARRAY(dpQueryPattern) patterns;
  DP_ARRAY(dpStepOffset) step_offsets;
  DP_ARRAY(TSFieldId) negated_fields;
  DP_ARRAY(char) string_buffer;
  DP_ARRAY(TSSymbol) repeat_symbols_with_rootless_patterns;
  const void *language;
  uint16_t wildcard_root_pattern_count;
} dpQuery;

// tree-sitter's allocator (lib/src/alloc.c): ts_query_delete frees the
// arrays with it.
extern void *(*ts_current_malloc)(size_t);
extern void *(*ts_current_calloc)(size_t, size_t);

uint32_t ts_language_version(const void *);
uint32_t ts_language_symbol_count(const void *);
uint32_t ts_language_state_count(const void *);
uint32_t ts_language_field_count(const void *);

// The layout record a snapshot entry starts with.
static void dp_layout(uint32_t out[8]) {
  out[0] = sizeof(dpQuery);
  out[1] = sizeof(dpQueryStep);
  out[2] = sizeof(dpPatternEntry);
  out[3] = sizeof(dpQueryPattern);
  out[4] = sizeof(dpStepOffset);
  out[5] = sizeof(dpPredicateStep);
  out[6] = sizeof(dpSlice);
  out[7] = sizeof(dpSymbolTable);
}

static void dp_grammar(const void *lang, uint32_t out[4]) {
  out[0] = ts_language_version(lang);
  out[1] = ts_language_symbol_count(lang);
  out[2] = ts_language_state_count(lang);
  out[3] = ts_language_field_count(lang);
}

// The arrays of a query in one fixed order, which dp_size, dp_write and
// dp_load all walk: X(a) is an array written as it is, N(a, norm) one
// whose elements are written through norm (padding zeroed, below).
#define DP_ARRAYS(q, X, N) \
  X((q)->captures.characters) \
  X((q)->captures.slices) \
  X((q)->predicate_values.characters) \
  X((q)->predicate_values.slices) \
  N((q)->steps, dp_norm_step) \
  N((q)->pattern_map, dp_norm_entry) \
  X((q)->predicate_steps) \
  N((q)->patterns, dp_norm_pattern) \
  N((q)->step_offsets, dp_norm_offset) \
  X((q)->negated_fields) \
  X((q)->repeat_symbols_with_rootless_patterns)

// dp_size is the length of q written by dp_write.
static size_t dp_size(const void *query) {
  const dpQuery *q = query;
  size_t n = 4;
#define DP_SIZE(a) n += 4 + (size_t)(a).size * sizeof(*(a).contents);
#define DP_SIZE_N(a, norm) DP_SIZE(a)
  DP_ARRAYS(q, DP_SIZE, DP_SIZE_N)
  n += 4;
  for (uint32_t i = 0; i < q->capture_quantifiers.size; i++) {
    n += 4 + q->capture_quantifiers.contents[i].size;
  }
  n += 4; // wildcard_root_pattern_count
  return n;
}

// The structs' padding (and a bit-field byte's unused bits) hold whatever
// the allocator left there; dp_write writes each element through a
// zeroed copy of its fields, so the same query always makes the same
// bytes (the snapshot is compared with a fresh one by a test).
static void dp_norm_step(const dpQueryStep *e, void *out) {
  dpQueryStep t;
  memset(&t, 0, sizeof t);
  t.symbol = e->symbol;
  t.supertype_symbol = e->supertype_symbol;
  t.field = e->field;
  memcpy(t.capture_ids, e->capture_ids, sizeof t.capture_ids);
  t.depth = e->depth;
  t.alternative_index = e->alternative_index;
  t.negated_field_list_id = e->negated_field_list_id;
  t.is_named = e->is_named;
  t.is_immediate = e->is_immediate;
  t.is_last_child = e->is_last_child;
  t.is_pass_through = e->is_pass_through;
  t.is_dead_end = e->is_dead_end;
  t.alternative_is_immediate = e->alternative_is_immediate;
  t.contains_captures = e->contains_captures;
  t.root_pattern_guaranteed = e->root_pattern_guaranteed;
  t.parent_pattern_guaranteed = e->parent_pattern_guaranteed;
  memcpy(out, &t, sizeof t);
}
static void dp_norm_entry(const dpPatternEntry *e, void *out) {
  dpPatternEntry t;
  memset(&t, 0, sizeof t);
  t.step_index = e->step_index;
  t.pattern_index = e->pattern_index;
  t.is_rooted = e->is_rooted;
  memcpy(out, &t, sizeof t);
}
static void dp_norm_pattern(const dpQueryPattern *e, void *out) {
  dpQueryPattern t;
  memset(&t, 0, sizeof t);
  t.steps = e->steps;
  t.predicate_steps = e->predicate_steps;
  t.start_byte = e->start_byte;
  t.is_non_local = e->is_non_local;
  memcpy(out, &t, sizeof t);
}
static void dp_norm_offset(const dpStepOffset *e, void *out) {
  dpStepOffset t;
  memset(&t, 0, sizeof t);
  t.byte_offset = e->byte_offset;
  t.step_index = e->step_index;
  memcpy(out, &t, sizeof t);
}

static void dp_put32(uint8_t **p, uint32_t v) { memcpy(*p, &v, 4); *p += 4; }

// dp_write writes q (dp_size bytes) to out. The string buffer is scratch
// space of the parser, not written.
static void dp_write(const void *query, uint8_t *out) {
  const dpQuery *q = query;
  uint8_t *p = out;
  dp_put32(&p, 0x31515044); // "DPQ1"
#define DP_WRITE(a) { \
    size_t len = (size_t)(a).size * sizeof(*(a).contents); \
    dp_put32(&p, (a).size); \
    if (len) memcpy(p, (a).contents, len); \
    p += len; }
#define DP_WRITE_NORM(a, norm) { \
    dp_put32(&p, (a).size); \
    for (uint32_t i = 0; i < (a).size; i++) { \
      norm(&(a).contents[i], p); \
      p += sizeof(*(a).contents); \
    } }
  DP_ARRAYS(q, DP_WRITE, DP_WRITE_NORM)
  dp_put32(&p, q->capture_quantifiers.size);
  for (uint32_t i = 0; i < q->capture_quantifiers.size; i++) {
    const dpCaptureQuantifiers *c = &q->capture_quantifiers.contents[i];
    dp_put32(&p, c->size);
    if (c->size) memcpy(p, c->contents, c->size);
    p += c->size;
  }
  dp_put32(&p, q->wildcard_root_pattern_count);
}

typedef struct { const uint8_t *p; size_t left; int bad; } dpReader;

static uint32_t dp_get32(dpReader *r) {
  uint32_t v = 0;
  if (r->left < 4) { r->bad = 1; return 0; }
  memcpy(&v, r->p, 4); r->p += 4; r->left -= 4;
  return v;
}

// dp_take copies n elements of size elem into a new allocation (NULL for
// none).
static void *dp_take(dpReader *r, uint32_t n, size_t elem) {
  size_t len = (size_t)n * elem;
  if (r->bad || n == 0) return NULL;
  if (len / elem != n || r->left < len) { r->bad = 1; return NULL; }
  void *out = ts_current_malloc(len);
  memcpy(out, r->p, len);
  r->p += len; r->left -= len;
  return out;
}

void ts_query_delete(void *);
const void *ts_language_copy(const void *);

// dp_load builds a query for lang from data (what dp_write wrote), or
// returns NULL when data is not exactly such a query: every length is
// checked against what is left, and all of data must be used. The query
// is freed by ts_query_delete like any other.
static void *dp_load(const void *lang, const uint8_t *data, size_t len) {
  dpReader r = {data, len, 0};
  if (dp_get32(&r) != 0x31515044) return NULL;
  dpQuery *q = ts_current_calloc(1, sizeof(dpQuery));
  q->language = ts_language_copy(lang);
#define DP_READ(a) { \
    uint32_t n = dp_get32(&r); \
    (a).contents = dp_take(&r, n, sizeof(*(a).contents)); \
    if ((a).contents) { (a).size = n; (a).capacity = n; } }
#define DP_READ_N(a, norm) DP_READ(a)
  DP_ARRAYS(q, DP_READ, DP_READ_N)
  uint32_t nq = dp_get32(&r);
  if (!r.bad && nq > 0) {
    if (nq > r.left / 4) {
      r.bad = 1;
    } else {
      q->capture_quantifiers.contents = ts_current_calloc(nq, sizeof(dpCaptureQuantifiers));
      q->capture_quantifiers.size = nq;
      q->capture_quantifiers.capacity = nq;
      for (uint32_t i = 0; i < nq && !r.bad; i++) {
        dpCaptureQuantifiers *c = &q->capture_quantifiers.contents[i];
        uint32_t n = dp_get32(&r);
        c->contents = dp_take(&r, n, 1);
        if (c->contents) { c->size = n; c->capacity = n; }
      }
    }
  }
  q->wildcard_root_pattern_count = (uint16_t)dp_get32(&r);
  if (r.bad || r.left != 0) {
    ts_query_delete(q);
    return NULL;
  }
  return q;
}
*/
import "C"

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	sitter "github.com/smacker/go-tree-sitter"
)

// The binding's Query is a pointer to the C query and a closed flag;
// loadQuery makes one around a query it built (TestQueryRoundTrip checks
// the assumption holds for the linked binding).
type bindingQuery struct {
	c        unsafe.Pointer
	isClosed bool
}

var _ [unsafe.Sizeof(sitter.Query{}) - unsafe.Sizeof(bindingQuery{})]struct{}
var _ [unsafe.Sizeof(bindingQuery{}) - unsafe.Sizeof(sitter.Query{})]struct{}

func languagePtr(l *sitter.Language) unsafe.Pointer {
	// sitter.Language is one field, the C language pointer.
	return *(*unsafe.Pointer)(unsafe.Pointer(l))
}

// queryHeader is the layout and grammar record a serialized query starts
// with: 8 struct sizes, then the grammar's ABI version and symbol, state
// and field counts.
func queryHeader(lang unsafe.Pointer) []byte {
	var layout [8]C.uint32_t
	var gram [4]C.uint32_t
	C.dp_layout(&layout[0])
	C.dp_grammar(lang, &gram[0])
	out := make([]byte, 0, 48)
	for _, v := range layout {
		out = binary.LittleEndian.AppendUint32(out, uint32(v))
	}
	for _, v := range gram {
		out = binary.LittleEndian.AppendUint32(out, uint32(v))
	}
	return out
}

// serializeQuery is q as loadQuery reads it back.
func serializeQuery(q *Query) []byte {
	cq := (*bindingQuery)(unsafe.Pointer(q.q)).c
	lang := languagePtr(language(q.Grammar))
	head := queryHeader(lang)
	n := int(C.dp_size(cq))
	out := make([]byte, len(head)+n)
	copy(out, head)
	C.dp_write(cq, (*C.uint8_t)(unsafe.Pointer(&out[len(head)])))
	return out
}

// errStaleQuery: the serialized query was made by another tree-sitter or
// for another build of the grammar; it must be compiled.
var errStaleQuery = errors.New("compiled query is for another tree-sitter or grammar")

// loadQuery is the query serializeQuery wrote for grammar.
func loadQuery(grammar string, data []byte) (*Query, error) {
	l := language(grammar)
	if l == nil {
		return nil, fmt.Errorf("%w for %q", ErrNoGrammar, grammar)
	}
	lang := languagePtr(l)
	head := queryHeader(lang)
	if len(data) < len(head) || !bytes.Equal(data[:len(head)], head) {
		return nil, errStaleQuery
	}
	body := data[len(head):]
	if len(body) == 0 {
		return nil, errors.New("compiled query: empty")
	}
	cq := C.dp_load(lang, (*C.uint8_t)(unsafe.Pointer(&body[0])), C.size_t(len(body)))
	if cq == nil {
		return nil, errors.New("compiled query: malformed")
	}
	sq := new(sitter.Query)
	(*bindingQuery)(unsafe.Pointer(sq)).c = cq
	return newQuery(grammar, sq)
}

// A query snapshot is compiled queries by grammar and source, made by
// QuerySnapshot and installed by UseQuerySnapshot; CachedQuery and
// CompileAhead read a query from it instead of compiling it. Format:
// the magic line, then entries of a grammar name (uint16 length first),
// the SHA-256 of the query source, and the serialized query (uint32
// length first), all little-endian.
const querySnapshotMagic = "diffpal query snapshot 1\n"

var snap struct {
	mu    sync.Mutex
	data  []byte
	index map[string][]byte // grammar + "\x00" + sha256(src) -> serialized query
}

// UseQuerySnapshot installs a snapshot (one; a later call replaces it).
// It is indexed on first use.
func UseQuerySnapshot(data []byte) {
	snap.mu.Lock()
	defer snap.mu.Unlock()
	snap.data, snap.index = data, nil
}

func snapshotKey(grammar, src string) string {
	sum := sha256.Sum256([]byte(src))
	return grammar + "\x00" + string(sum[:])
}

// snapshotQuery is the serialized query for grammar and src in the
// installed snapshot, or nil.
func snapshotQuery(grammar, src string) []byte {
	snap.mu.Lock()
	defer snap.mu.Unlock()
	if snap.index == nil && snap.data != nil {
		idx, err := indexQuerySnapshot(snap.data)
		if err != nil {
			idx = map[string][]byte{} // unusable: every query compiles
		}
		snap.index = idx
	}
	return snap.index[snapshotKey(grammar, src)]
}

func indexQuerySnapshot(data []byte) (map[string][]byte, error) {
	rest, ok := bytes.CutPrefix(data, []byte(querySnapshotMagic))
	if !ok {
		return nil, errors.New("query snapshot: bad magic")
	}
	idx := map[string][]byte{}
	for len(rest) > 0 {
		if len(rest) < 2 {
			return nil, errors.New("query snapshot: truncated")
		}
		n := int(binary.LittleEndian.Uint16(rest))
		rest = rest[2:]
		if len(rest) < n+sha256.Size+4 {
			return nil, errors.New("query snapshot: truncated")
		}
		grammar := string(rest[:n])
		sum := rest[n : n+sha256.Size]
		rest = rest[n+sha256.Size:]
		m := int(binary.LittleEndian.Uint32(rest))
		rest = rest[4:]
		if len(rest) < m {
			return nil, errors.New("query snapshot: truncated")
		}
		idx[grammar+"\x00"+string(sum)] = rest[:m:m]
		rest = rest[m:]
	}
	return idx, nil
}

// QuerySnapshot compiles each query (grammar -> sources) and returns the
// snapshot of them, entries in grammar then source order, so the same
// queries make the same bytes.
func QuerySnapshot(queries map[string][]string) ([]byte, error) {
	out := []byte(querySnapshotMagic)
	grammars := make([]string, 0, len(queries))
	for g := range queries {
		grammars = append(grammars, g)
	}
	slices.Sort(grammars)
	for _, g := range grammars {
		srcs := slices.Clone(queries[g])
		slices.Sort(srcs)
		srcs = slices.Compact(srcs)
		for _, src := range srcs {
			q, err := CompileQuery(g, src)
			if err != nil {
				return nil, fmt.Errorf("%s query: %w", g, err)
			}
			data := serializeQuery(q)
			q.q.Close()
			sum := sha256.Sum256([]byte(src))
			out = binary.LittleEndian.AppendUint16(out, uint16(len(g)))
			out = append(out, g...)
			out = append(out, sum[:]...)
			out = binary.LittleEndian.AppendUint32(out, uint32(len(data)))
			out = append(out, data...)
		}
	}
	return out, nil
}

// QueryFromSnapshot is the query for grammar and src read from a
// snapshot (not the installed one): tests compare it with the compiled
// query. It is an error when the snapshot has no such query.
func QueryFromSnapshot(data []byte, grammar, src string) (*Query, error) {
	idx, err := indexQuerySnapshot(data)
	if err != nil {
		return nil, err
	}
	q, ok := idx[snapshotKey(grammar, src)]
	if !ok {
		return nil, fmt.Errorf("query snapshot: no %s query %.40q", grammar, src)
	}
	return loadQuery(grammar, q)
}
