package brokertest

import (
	"os/exec"
	"strings"
	"testing"
)

// Build builds the commands named by pkgs (import paths, such as
// "github.com/netdb11/kafka/broker/cmd/kafka-server") with the go command
// into a fresh t.TempDir(), and returns that directory: for tests that run
// the real programs as processes of their own (to SIGKILL them, or to test
// them as a user runs them). A failed build fails the test with go's output.
func Build(t testing.TB, pkgs ...string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("brokertest: go build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return dir
}
