package franzgo

import (
	"testing"

	"weir/test/compat/internal/compattest"
)

func TestMain(m *testing.M) { compattest.Main(m) }
