package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
)

// envMaxBundleBytes overrides findings.DefaultMaxBytes (4 GiB), the most
// validate, gate, sarif and upgrade read from a file or standard input.
const envMaxBundleBytes = "DIFFPAL_MAX_BUNDLE_BYTES"

// maxBundleBytes is the input size limit: DIFFPAL_MAX_BUNDLE_BYTES when
// set (a number of bytes, optionally with a KiB, MiB, GiB or TiB suffix),
// else findings.DefaultMaxBytes.
func maxBundleBytes() (int64, error) {
	v := strings.TrimSpace(os.Getenv(envMaxBundleBytes))
	if v == "" {
		return findings.DefaultMaxBytes, nil
	}
	num, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}} {
		if s, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mult = strings.TrimSpace(s), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid %s %q: want a positive number of bytes, e.g. 8GiB", envMaxBundleBytes, v)
	}
	return n * mult, nil
}

// readBundleBytes reads a bundle file, or standard input for "-", with the
// size limit and the early "is this a bundle at all" check of
// findings.ReadAll: a stream whose first non-space byte is not '{' is
// rejected without reading the rest.
func readBundleBytes(ios *IOStreams, path string) ([]byte, error) {
	limit, err := maxBundleBytes()
	if err != nil {
		return nil, err
	}
	var data []byte
	if path == "-" {
		data, err = findings.ReadAll(ios.In, limit)
	} else {
		data, err = findings.ReadBytesLimit(path, limit)
	}
	if errors.Is(err, findings.ErrTooLarge) {
		return nil, fmt.Errorf("%w; set %s to raise the limit", err, envMaxBundleBytes)
	}
	return data, err
}

// displayName is how a file is named in messages.
func displayName(path string) string {
	if path == "-" {
		return "<stdin>"
	}
	return path
}
