package rules

import "strings"

// SplitLines splits file text into lines (no trailing empty line for a final newline).
func SplitLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// DiffFile builds a File from the old and new versions of a file with a
// simple line diff (LCS). old == nil means the file was added; new == nil
// means it was deleted. It is meant for tests, examples and corpora; the
// review engine builds Files from git's own diff.
func DiffFile(path string, old, new []byte) *File {
	var firstLine string
	var newLines, oldLines []string
	if new != nil {
		newLines = SplitLines(string(new))
		if len(newLines) > 0 {
			firstLine = newLines[0]
		}
	}
	if old != nil {
		oldLines = SplitLines(string(old))
		if firstLine == "" && len(oldLines) > 0 {
			firstLine = oldLines[0]
		}
	}
	f := &File{Path: path, Language: DetectLanguage(path, firstLine)}
	switch {
	case old == nil:
		f.Status = "added"
	case new == nil:
		f.Status = "deleted"
	default:
		f.Status = "modified"
	}
	if new != nil {
		f.Content = newLines
		if f.Content == nil {
			f.Content = []string{}
		}
	}
	added, removed := diffLines(oldLines, newLines)
	for _, i := range added {
		f.Added = append(f.Added, Line{No: i + 1, Text: newLines[i]})
	}
	for _, i := range removed {
		f.Removed = append(f.Removed, Line{No: i + 1, Text: oldLines[i]})
	}
	return f
}

// diffLines returns the indexes of added (in b) and removed (in a) lines.
func diffLines(a, b []string) (added, removed []int) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(am), len(bm)
	if n == 0 || m == 0 || n*m > 4_000_000 {
		for i := range bm {
			added = append(added, pre+i)
		}
		for i := range am {
			removed = append(removed, pre+i)
		}
		return
	}
	// LCS table
	dp := make([][]int32, n+1)
	for i := range dp {
		dp[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if am[i] == bm[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else if dp[i+1][j] >= dp[i][j+1] {
				dp[i][j] = dp[i+1][j]
			} else {
				dp[i][j] = dp[i][j+1]
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case am[i] == bm[j]:
			i++
			j++
		case dp[i+1][j] >= dp[i][j+1]:
			removed = append(removed, pre+i)
			i++
		default:
			added = append(added, pre+j)
			j++
		}
	}
	for ; i < n; i++ {
		removed = append(removed, pre+i)
	}
	for ; j < m; j++ {
		added = append(added, pre+j)
	}
	return
}
