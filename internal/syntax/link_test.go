//go:build cgo && linux

package syntax

import (
	"debug/elf"
	"os"
	"strings"
	"testing"
)

// The test binary links this package's cgo flags as diffpal does: it must
// not need libstdc++ or libgcc_s from the machine (link.go).
func TestNoDynamicCXXRuntime(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) == 0 {
		t.Fatal("no imported libraries: not the dynamically linked cgo binary this test expects")
	}
	for _, l := range libs {
		if strings.HasPrefix(l, "libstdc++") || strings.HasPrefix(l, "libgcc_s") {
			t.Errorf("binary needs %s at run time (imports %v)", l, libs)
		}
	}
}
