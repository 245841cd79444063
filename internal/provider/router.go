package provider

import (
	"context"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/qa"
)

// Router sends each profile to its provider (the config's stages) and the
// rest to Default.
type Router struct {
	Default  Provider
	Profiles map[qa.Profile]Provider
}

// Name lists the distinct providers, default first.
func (r *Router) Name() string {
	names := []string{r.Default.Name()}
	for _, p := range r.Profiles {
		if n := p.Name(); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) > 1 {
		slices.Sort(names[1:])
	}
	return strings.Join(names, "+")
}

// For is the provider that reviews profile p.
func (r *Router) For(p qa.Profile) Provider {
	if x, ok := r.Profiles[p]; ok {
		return x
	}
	return r.Default
}

// ReviewProfile implements Provider.
func (r *Router) ReviewProfile(ctx context.Context, req ProfileRequest) (ProfileResult, error) {
	return r.For(req.Profile).ReviewProfile(ctx, req)
}

// Prepare implements Preparer for every routed provider that has it, each
// once, the default first and then in profile order.
func (r *Router) Prepare(ctx context.Context, files []*ChangedFile) {
	keys := make([]string, 0, len(r.Profiles))
	for k := range r.Profiles {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	all := []Provider{r.Default}
	for _, k := range keys {
		all = append(all, r.Profiles[qa.Profile(k)])
	}
	seen := map[Provider]bool{}
	for _, p := range all {
		if seen[p] {
			continue
		}
		seen[p] = true
		if pp, ok := p.(Preparer); ok {
			pp.Prepare(ctx, files)
		}
	}
}
