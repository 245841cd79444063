package findings

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Read decodes and validates a bundle of any supported version. A missing
// version reads as v1; v1 string evidence and impact become structured
// values; unknown fields are ignored. The returned bundle's Version is the
// effective version and info.Version the one found in the input.
//
// The error is a *SyntaxError for input that is not a JSON object, and
// Problems when the bundle breaks its version's rules; with Problems the
// partially checked bundle is still returned.
func Read(r io.Reader) (*Bundle, ReadInfo, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, ReadInfo{}, err
	}
	return Parse(data)
}

// Parse is Read over bytes already in memory. The bundle's strings may share
// memory with data, so data must not be modified afterwards.
func Parse(data []byte) (*Bundle, ReadInfo, error) {
	b, info, problems, err := Decode(data, DecodeOptions{})
	if err != nil {
		return nil, info, err
	}
	if len(problems) > 0 {
		return b, info, problems
	}
	return b, info, nil
}

// ReadFile reads a bundle from a file; errors name the file.
func ReadFile(path string) (*Bundle, ReadInfo, error) {
	data, err := ReadBytes(path)
	if err != nil {
		return nil, ReadInfo{}, err
	}
	b, info, err := Parse(data)
	if err != nil {
		return b, info, fmt.Errorf("%s: %w", path, err)
	}
	return b, info, nil
}

// ReadBytes reads a bundle file's bytes, refusing what cannot be a bundle
// (directories, devices, empty files) with a message that says so.
func ReadBytes(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file (write one with `diffpal review`, or pass the bundle's path)", path)
		}
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, not a findings bundle", path)
	}
	if !fi.Mode().IsRegular() && fi.Mode()&os.ModeNamedPipe == 0 {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return data, nil
}
