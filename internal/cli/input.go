package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/spf13/cobra"
)

// envMaxBundleBytes overrides findings.DefaultMaxBytes (4 GiB), the most
// validate, gate, sarif and upgrade read from a file or standard input.
const envMaxBundleBytes = "DIFFPAL_MAX_BUNDLE_BYTES"

// maxBundleBytes is the input size limit: DIFFPAL_MAX_BUNDLE_BYTES in
// ios's environment when set (a number of bytes, optionally with a KiB,
// MiB, GiB or TiB suffix), else findings.DefaultMaxBytes.
func maxBundleBytes(ios *IOStreams) (int64, error) {
	v := strings.TrimSpace(ios.Getenv(envMaxBundleBytes))
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
	limit, err := maxBundleBytes(ios)
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

// dirHelp is the -C paragraph of the help of validate, gate, sarif and
// upgrade.
const dirHelp = `-C DIR runs as if diffpal had been started in DIR, as git -C does: FILE
arguments and relative --input, --out and -o paths are resolved from DIR,
and so is the default bundle: DIR/.artifacts/diffpal/findings.json, or,
when DIR has none and lies inside a git work tree, the one at the work
tree's top level, where ` + "`diffpal review -C DIR`" + ` writes it.`

// addDirFlag registers -C/--dir, spelled as review's, on a bundle command.
func addDirFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVarP(dir, "dir", "C", ".", "run as if started in this directory: relative paths and the default bundle are resolved from it")
}

// checkDir refuses a -C that is not a directory before anything is read.
func checkDir(dir string) error {
	if dir == "" || dir == "." {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return usageErr("-C %s: no such directory", dir)
		}
		return usageErr("-C %s: %v", dir, err)
	}
	if !fi.IsDir() {
		return usageErr("-C %s: not a directory", dir)
	}
	return nil
}

// inDir resolves a path named on the command line of a command run with
// -C dir: "-" (standard input or output) and absolute paths are kept,
// relative ones are taken from dir. With -C . the path is left exactly as
// given, so messages name it as the user wrote it.
func inDir(dir, path string) string {
	if path == "-" || path == "" || dir == "" || dir == "." || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// artifactsRoot is the directory whose .artifacts/diffpal holds the
// default bundle of a command run with -C dir: dir itself when
// dir/.artifacts/diffpal/findings.json exists or dir is not inside a git
// work tree (or git is not installed), else the work tree's top level,
// where review writes its artifacts whichever directory inside the
// repository -C named.
func artifactsRoot(ctx context.Context, dir string) string {
	if dir == "" {
		dir = "."
	}
	if _, err := os.Lstat(filepath.Join(dir, findings.DefaultPath)); err == nil {
		return dir
	}
	if ctx == nil {
		ctx = context.Background()
	}
	top, err := (&git.Runner{Dir: dir}).TopLevel(ctx)
	if err != nil || top == "" {
		return dir
	}
	top = filepath.FromSlash(top)
	if abs, err := filepath.Abs(dir); err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil && real == filepath.Clean(top) {
			return dir
		}
	}
	return top
}

// printWarnings lists what a reader normalized, one line each, as
// FILE: warning: /json/pointer: reason.
func printWarnings(w io.Writer, name string, ws []findings.Problem) {
	for _, p := range ws {
		fmt.Fprintf(w, "%s: warning: %s\n", name, p)
	}
}
