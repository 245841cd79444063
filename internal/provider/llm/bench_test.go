package llm

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
)

// BenchmarkTokensVsNaive reports what a three-profile review sends (first
// review, then re-review after a one-line push, with the answer cache)
// against the naive "whole diff to every profile" request, as estimated
// tokens per review and their ratios.
func BenchmarkTokensVsNaive(b *testing.B) {
	var files []tfile
	for i := 0; i < 40; i++ {
		files = append(files, tfile{path: fmt.Sprintf("svc/pkg%02d/file.go", i), content: lines(200, fmt.Sprintf("pkg%d statement %%d", i)), added: []int{20, 21, 22, 90, 150}})
	}
	profiles := []qa.Profile{qa.ProfileCodeReviewer, qa.ProfileSecurityReviewer, qa.ProfileSilentFailureHunter}
	var first, push, naive int64
	for b.Loop() {
		dir := b.TempDir()
		run := func(fs []tfile) int64 {
			ch := mkChange(b, fs...)
			p, _ := newProvider(b, &fakeClient{}, func(c *Config) { c.CacheDir = dir })
			for _, pr := range profiles {
				if _, err := p.ReviewProfile(context.Background(), profileReq(b, ch, pr)); err != nil {
					b.Fatal(err)
				}
			}
			naive = 0
			for _, pr := range profiles {
				naive += int64(NaiveRequestBytes(profileReq(b, ch, pr)))
			}
			return p.Stats().EstimatedTokens
		}
		first = run(files)
		edited := slices.Clone(files)
		edited[17].content = slices.Clone(edited[17].content)
		edited[17].content[20] = "pkg17 statement 21 (changed)"
		push = run(edited)
	}
	nt := (naive + 3) / 4
	b.ReportMetric(float64(nt), "naive-tokens")
	b.ReportMetric(float64(first), "first-tokens")
	b.ReportMetric(float64(push), "push-tokens")
	b.ReportMetric(float64(push)/float64(nt), "push/naive")
}
