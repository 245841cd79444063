package cli

import (
	"io"
	"os"
)

// IOStreams are a command's standard streams and the parts of its
// process environment that it reads — environment variables, the working
// directory, whether stdout and stderr are terminals — injected in gh's
// manner so that tests run commands without a terminal and with exactly
// the environment they mean.
//
// The zero value (and a nil *IOStreams) is the process's view: every func
// left nil falls back to the os package, and TTY detection looks at Out
// and ErrOut, so tests that only set In, Out and ErrOut get buffers that
// are not terminals. Commands read the environment and the working
// directory only through these methods.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	// LookupEnvFunc reads an environment variable (os.LookupEnv when nil).
	LookupEnvFunc func(key string) (string, bool)
	// GetwdFunc returns the working directory (os.Getwd when nil). It
	// decides how paths are shown (relative to it when below it); file
	// system calls still resolve relative paths as the kernel does, and
	// commands that must run elsewhere take -C.
	GetwdFunc func() (string, error)

	stdoutTTY, stderrTTY ttyOverride
}

// ttyOverride is a test's answer to "is this stream a terminal?"; the
// zero value asks the stream itself.
type ttyOverride int8

const (
	ttyDetect ttyOverride = iota
	ttyYes
	ttyNo
)

func overrideOf(b bool) ttyOverride {
	if b {
		return ttyYes
	}
	return ttyNo
}

func (o ttyOverride) is(w io.Writer) bool {
	switch o {
	case ttyYes:
		return true
	case ttyNo:
		return false
	}
	return isTerminal(w)
}

// System returns the process's streams and environment.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// LookupEnv reads an environment variable.
func (s *IOStreams) LookupEnv(key string) (string, bool) {
	if s == nil || s.LookupEnvFunc == nil {
		return os.LookupEnv(key)
	}
	return s.LookupEnvFunc(key)
}

// Getenv reads an environment variable; unset reads as "".
func (s *IOStreams) Getenv(key string) string {
	v, _ := s.LookupEnv(key)
	return v
}

// Getwd returns the working directory.
func (s *IOStreams) Getwd() (string, error) {
	if s == nil || s.GetwdFunc == nil {
		return os.Getwd()
	}
	return s.GetwdFunc()
}

// SetStdoutTTY makes IsStdoutTTY answer tty instead of looking at Out.
func (s *IOStreams) SetStdoutTTY(tty bool) { s.stdoutTTY = overrideOf(tty) }

// SetStderrTTY makes IsStderrTTY answer tty instead of looking at ErrOut.
func (s *IOStreams) SetStderrTTY(tty bool) { s.stderrTTY = overrideOf(tty) }

// IsStdoutTTY reports whether Out is a terminal.
func (s *IOStreams) IsStdoutTTY() bool {
	if s == nil {
		return false
	}
	return s.stdoutTTY.is(s.Out)
}

// IsStderrTTY reports whether ErrOut is a terminal.
func (s *IOStreams) IsStderrTTY() bool {
	if s == nil {
		return false
	}
	return s.stderrTTY.is(s.ErrOut)
}

// ColorMode is the --color setting.
type ColorMode string

// The --color values.
const (
	ColorAuto   ColorMode = "auto"
	ColorAlways ColorMode = "always"
	ColorNever  ColorMode = "never"
)

// parseColorMode checks a --color value.
func parseColorMode(v string) (ColorMode, error) {
	switch m := ColorMode(v); m {
	case ColorAuto, ColorAlways, ColorNever:
		return m, nil
	}
	return "", usageErr("invalid --color %q: want auto, always or never", v)
}

// ColorEnabled reports whether what goes to Out may be coloured: always
// and never decide by themselves; auto (or "") colours a terminal unless
// NO_COLOR is set (to anything, even empty: no-color.org) or TERM is
// dumb.
func (s *IOStreams) ColorEnabled(mode ColorMode) bool {
	switch mode {
	case ColorAlways:
		return true
	case ColorNever:
		return false
	}
	if _, ok := s.LookupEnv("NO_COLOR"); ok {
		return false
	}
	return s.IsStdoutTTY() && s.Getenv("TERM") != "dumb"
}

// ProgressEnabled reports whether a progress line may be drawn on ErrOut:
// only on a terminal, so CI logs and redirected stderr never get carriage
// returns and erase sequences.
func (s *IOStreams) ProgressEnabled() bool { return s.IsStderrTTY() }

// isTerminal reports whether w is a character device.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
