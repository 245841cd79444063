//go:build cgo

package syntax

// The YAML grammar's scanner is C++, which makes a Linux binary need
// libstdc++ and libgcc_s at run time: linked statically, a machine
// without them runs diffpal too, and every process skips loading and
// relocating them (about 4 ms of each start, bench/review.sh's 10-line
// change; docs/benchmarks.md "Sixth round").

// #cgo linux LDFLAGS: -static-libstdc++ -static-libgcc
import "C"
