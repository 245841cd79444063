package findings

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// NormalizeFile is Normalize followed by Encode for a bundle that is not
// in memory: the bundle in bf (scanned, without problems) with header hdr
// (bf.Header, or a copy the caller changed, such as its Version) is
// normalized finding by finding and written to w, byte for byte what
// Encode writes after Normalize. It reads bf twice more: once in order to
// compute each finding's place in Normalize's order (it keeps, per
// finding, its path, category, id, lines and severity rank), then in that
// order (in one pass when the bundle is in that order already, else
// finding by finding), each normalized, validated and written. The
// problems Normalize would return are returned (Problems) after the whole
// bundle was seen, with the same pointers, and then what was written to w
// must be discarded; with w nil the bundle is only normalized and
// validated. n is the number of findings.
func NormalizeFile(bf *BundleFile, hdr *Bundle, opts Options, w io.Writer) (n int, err error) {
	h := *hdr
	h.Findings = []Finding{}
	if h.Version == "" {
		h.Version = CurrentVersion
	}
	repo := cmp.Or(opts.Repo, h.Repo, "local")
	if opts.Repo != "" || h.Repo != "" {
		h.Repo = repo
	}
	if bo := opts.Policy.BlockOn; bo != "" && bo.Rank() == 0 {
		if s, err := ParseSeverity(string(bo)); err == nil {
			opts.Policy.BlockOn = s
		} else {
			return 0, Problems{{Pointer: "/gate/block_on", Reason: err.Error()}}
		}
	}
	type entry struct {
		key sortKey
		ord int
	}
	entries := make([]entry, 0, bf.Len())
	intern := map[string]string{}
	in := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		v := strings.Clone(s)
		intern[v] = v
		return v
	}
	err = bf.Each(func(i int, f *Finding) error {
		normalizeFinding(f, &h)
		f.ID = ID(repo, h.HeadSHA, f)
		k := keyOf(f)
		k.path, k.category = in(k.path), in(k.category)
		entries = append(entries, entry{key: k, ord: i})
		return nil
	})
	if err != nil {
		return 0, err
	}
	intern = nil
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Or(compareKeys(a.key, b.key), cmp.Compare(a.ord, b.ord)) })
	if len(entries) > 0 {
		h.FingerprintVersion = FingerprintVersion
	}
	h.Gate = &GatePolicy{BlockOn: opts.Policy.blockOn(), MinConfidence: opts.Policy.MinConfidence}

	// Validate's checks, the header first, then each finding in order.
	v := &validator{}
	rules := rulesFor(h.Version)
	if rules == nil {
		v.add("/version", fmt.Sprintf("unsupported version %q: want v1, v2, v3 or v4", h.Version))
		rules = rulesFor(CurrentVersion)
	}
	v.rules = rules
	v.bundleHeader(&h, 0, 0)
	var enc *Encoder
	if w != nil {
		if enc, err = NewEncoder(w, &h); err != nil {
			return 0, err
		}
	}
	var occ occurrences
	rd := bf.Reader()
	defer rd.Close()
	for i, e := range entries {
		f, err := rd.Get(e.ord)
		if err != nil {
			return 0, err
		}
		normalizeFinding(f, &h)
		f.ID = e.key.id
		occ.fill(f)
		f.Blocking = opts.Policy.Blocks(f)
		v.finding(f, i)
		if enc != nil && len(v.problems) == 0 {
			if err := enc.Finding(f); err != nil {
				return 0, err
			}
		}
	}
	if len(v.problems) > 0 {
		return 0, v.problems
	}
	if enc != nil {
		if err := enc.Close(); err != nil {
			return 0, err
		}
	}
	return len(entries), nil
}
