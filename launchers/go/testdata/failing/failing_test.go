// Package failing holds tests that fail with a broker running, for
// TestTheBrokerIsStoppedWhenATestFails and ...WhenATestTimesOut; it writes
// each broker's pid and directory under $KAFKAIQ_FAILING_OUT for them to
// check.
package failing

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	kafkaiq "github.com/kafkaiq/kafkaiq/launchers/go"
)

func started(t *testing.T, name string) {
	out := os.Getenv("KAFKAIQ_FAILING_OUT")
	if out == "" {
		t.Skip("run by TestTheBrokerIsStoppedWhenATestFails")
	}
	k := kafkaiq.Start(t)
	if err := os.WriteFile(filepath.Join(out, name), fmt.Appendf(nil, "%d\n%s", k.PID, k.Dir), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHangs runs only when asked (go test -run TestHangs -timeout 1s):
// the test binary panics at its -timeout, without running cleanups.
func TestHangs(t *testing.T) {
	if os.Getenv("KAFKAIQ_FAILING_HANG") == "" {
		t.Skip("run by TestTheBrokerIsStoppedWhenATestTimesOut")
	}
	started(t, "hangs")
	select {}
}

func TestFails(t *testing.T) {
	started(t, "fails")
	t.Fatal("the test fails on purpose")
}

func TestBadStart(t *testing.T) {
	kafkaiq.Start(t, kafkaiq.WithOverride("num.partitions", "many"))
	t.Error("Start returned after a bad start")
}

// Last: a panic ends the test binary once the cleanups have run.
func TestPanics(t *testing.T) {
	started(t, "panics")
	panic("the test panics on purpose")
}
