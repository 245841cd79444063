package store_test

import (
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/diffpalhq/diffpal/internal/qa/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func() store.Store { return store.NewMemory() })
}
