// Package buildinfo reports the binary's version. Release builds set the
// variables with -ldflags "-X"; other builds fall back to the module and VCS
// data the Go toolchain embeds.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Set by -ldflags at release time.
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// Info is the binary's identity.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"go_version"`
	Modified  bool   `json:"modified,omitempty"`
}

// Get returns the build information. It is worked out once: parsing the
// toolchain's build info costs about 0.1 ms, and every review asks for it
// several times (help text, each output format's tool version).
func Get() Info { return get() }

var get = sync.OnceValue(func() Info {
	info := Info{Version: Version, Commit: Commit, Date: Date}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "0.0.0-dev"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	if info.Date == "" {
		info.Date = "unknown"
	}
	return info
})
