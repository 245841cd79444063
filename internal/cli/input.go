package cli

import (
	"io"

	"github.com/diffpalhq/diffpal/findings"
)

// readBundleBytes reads a bundle file, or standard input for "-".
func readBundleBytes(ios *IOStreams, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(ios.In)
	}
	return findings.ReadBytes(path)
}

// displayName is how a file is named in messages.
func displayName(path string) string {
	if path == "-" {
		return "<stdin>"
	}
	return path
}
