package review

import (
	"context"
	"os"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git"
)

func TestZZProfile(t *testing.T) {
	dir := os.Getenv("PROF_REPO")
	if dir == "" {
		t.Skip()
	}
	for i := 0; i < 3; i++ {
		if _, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: dir, Range: git.RangeOptions{Base: "main", Head: "change"}}}); err != nil {
			t.Fatal(err)
		}
	}
}
