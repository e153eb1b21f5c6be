package store

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestMain stops the PostgreSQL server the tests share (testutil.Run).
func TestMain(m *testing.M) { testutil.Main(m) }
