package recorder

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }
