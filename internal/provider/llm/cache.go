package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/diffpalhq/diffpal/internal/jcs"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/repofs"
	"github.com/diffpalhq/diffpal/internal/safefile"
)

// DefaultCacheDir is the cache directory relative to the repository root.
const DefaultCacheDir = ".artifacts/diffpal/cache"

// Cache stores validated model answers on disk, keyed by everything that
// determines them: provider, model, call parameters, the prompt (system
// and user message, which carry the redacted evidence) and the evidence
// hashes. Entries hold the answer and its usage, never prompts, evidence
// content or credentials. Writes are atomic (temp file, fsync, rename) and
// files are 0600 in 0700 directories.
type Cache struct {
	Dir string
	// Base is the trusted directory Dir lies in (the repository root):
	// no component of Dir below it may be a symlink, so a change under
	// review cannot point the cache's reads or writes elsewhere.
	Base string
	Now  func() time.Time
}

var hexKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })

// cacheEntry is the stored form.
type cacheEntry struct {
	Version  int             `json:"version"`
	Key      string          `json:"key"`
	Provider string          `json:"provider"`
	Model    string          `json:"model"`
	Kind     string          `json:"kind"`
	Answer   json.RawMessage `json:"answer"`
	Usage    Usage           `json:"usage"`
	// Inspection is what the agent that made the answer was seen doing
	// (paths and tool titles, already redacted; never file contents).
	Inspection *provider.Inspection `json:"inspection,omitempty"`
	CreatedAt  string               `json:"created_at"`
}

const cacheVersion = 1

// CacheKey is the key of a request: the SHA-256 of the canonical JSON of
// the fields that determine the answer.
func CacheKey(provider string, req Request, evidenceSHAs []string) (string, error) {
	sum := func(s []byte) string {
		h := sha256.Sum256(s)
		return hex.EncodeToString(h[:])
	}
	msgs := make([]map[string]string, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = map[string]string{"role": m.Role, "sha256": sum([]byte(m.Content))}
	}
	if evidenceSHAs == nil {
		evidenceSHAs = []string{}
	}
	return jcs.SHA256Hex(map[string]any{
		"v": cacheVersion, "prompt_version": PromptVersion, "provider": provider, "model": req.Model,
		"reasoning": req.Reasoning, "max_tokens": req.MaxTokens, "schema_name": req.SchemaName,
		"schema_sha256": sum(req.Schema), "system_sha256": sum([]byte(req.System)), "messages": msgs,
		"evidence_sha256": evidenceSHAs,
	})
}

func (c *Cache) path(key string) string {
	return filepath.Join(c.Dir, key[:2], key+".json")
}

// Get returns the cached answer of key.
func (c *Cache) Get(key string) (json.RawMessage, Usage, bool) {
	raw, u, _, ok := c.get(key)
	return raw, u, ok
}

func (c *Cache) get(key string) (json.RawMessage, Usage, *provider.Inspection, bool) {
	if c == nil || !hexKey().MatchString(key) {
		return nil, Usage{}, nil, false
	}
	p := c.path(key)
	if safefile.CheckDir(c.Base, filepath.Dir(p)) != nil {
		return nil, Usage{}, nil, false
	}
	data, err := repofs.ReadRegular(p, maxCacheEntry)
	if err != nil {
		return nil, Usage{}, nil, false
	}
	var e cacheEntry
	if json.Unmarshal(data, &e) != nil || e.Version != cacheVersion || e.Key != key || len(e.Answer) == 0 {
		return nil, Usage{}, nil, false
	}
	return e.Answer, e.Usage, e.Inspection, true
}

// Put stores an answer atomically.
func (c *Cache) Put(key, provider, model, kind string, answer json.RawMessage, u Usage) error {
	return c.put(key, provider, model, kind, answer, u, nil)
}

func (c *Cache) put(key, provider, model, kind string, answer json.RawMessage, u Usage, insp *provider.Inspection) error {
	if c == nil {
		return nil
	}
	if !hexKey().MatchString(key) {
		return fmt.Errorf("cache: bad key %q", key)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	data, err := json.Marshal(cacheEntry{Version: cacheVersion, Key: key, Provider: provider, Model: model, Kind: kind,
		Answer: answer, Usage: u, Inspection: insp, CreatedAt: now().UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	// Atomic, confined to Base, and removed on a signal mid-write.
	err = safefile.Write(context.Background(), c.Base, c.path(key), safefile.Options{Perm: 0o600, DirPerm: 0o700},
		func(w io.Writer) error { _, err := w.Write(data); return err })
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// maxCacheEntry bounds one entry read (answers are far smaller).
const maxCacheEntry = 16 << 20
