package gather_test

import (
	"testing"

	"github.com/foreman-actors/foreman/actors/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }
