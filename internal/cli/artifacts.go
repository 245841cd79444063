package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/buildinfo"
	"github.com/diffpalhq/diffpal/internal/output/markdown"
	"github.com/diffpalhq/diffpal/internal/output/sarif"
	"github.com/diffpalhq/diffpal/internal/review"
)

// writeArtifacts writes every output atomically and returns their paths.
func writeArtifacts(dir string, res *review.Result) (map[string]string, error) {
	paths := map[string]string{
		"findings": filepath.Join(dir, "findings.json"),
		"session":  filepath.Join(dir, "qa-session.json"),
		"summary":  filepath.Join(dir, "summary.md"),
		"sarif":    filepath.Join(dir, "diffpal.sarif"),
	}
	if err := findings.AtomicWrite(paths["findings"], 0o644, func(w io.Writer) error { return findings.Encode(w, res.Bundle) }); err != nil {
		return nil, fmt.Errorf("write %s: %w", paths["findings"], err)
	}
	if err := findings.AtomicWrite(paths["session"], 0o644, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(res)
	}); err != nil {
		return nil, fmt.Errorf("write %s: %w", paths["session"], err)
	}
	if err := findings.AtomicWrite(paths["summary"], 0o644, func(w io.Writer) error {
		return markdown.Write(w, res.Bundle, summaryInfo(res))
	}); err != nil {
		return nil, fmt.Errorf("write %s: %w", paths["summary"], err)
	}
	bi := buildinfo.Get()
	log := sarif.Convert(res.Bundle, sarif.Tool{Name: "diffpal", Version: bi.Version, InformationURI: "https://github.com/diffpalhq/diffpal"})
	if err := findings.AtomicWrite(paths["sarif"], 0o644, func(w io.Writer) error { return sarif.Encode(w, log) }); err != nil {
		return nil, fmt.Errorf("write %s: %w", paths["sarif"], err)
	}
	return paths, nil
}
