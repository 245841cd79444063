package rules

// TextCursor finds runs of a File's lines in its Text, moving forward
// only: runs asked for in line order cost one pass over the file, and the
// lines come as a slice of Text instead of a copy.
type TextCursor struct {
	line, off int // Text[off:] starts line line+1
}

// Span is where lines first..last (1-based) of f.Content sit in f.Text:
// Text[start:end] is them joined by "\n", and end < len(Text) means a
// newline follows. ok is false when f has no Text, the lines are not in
// Content, or first is before a line an earlier Span passed.
func (c *TextCursor) Span(f *File, first, last int) (start, end int, ok bool) {
	if f.Text == "" || first < 1 || last < first || last > len(f.Content) || first <= c.line {
		return 0, 0, false
	}
	for c.line < first-1 {
		c.off += len(f.Content[c.line]) + 1
		c.line++
	}
	end = c.off - 1
	for i := first - 1; i < last; i++ {
		end += len(f.Content[i]) + 1
	}
	if end > len(f.Text) {
		return 0, 0, false // Text is not Content joined
	}
	return c.off, end, true
}
