package kit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/cli/perf"
)

func TestProcStartStop(t *testing.T) {
	log := filepath.Join(t.TempDir(), "server.log")
	p, err := StartOn(Local("broker"), "sleeper", log, "sleep", "600")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Running() {
		t.Fatal("process exited at once")
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	if p.Running() {
		t.Error("process still running after stop")
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("second stop: %v", err)
	}
	// A process that ignores SIGTERM is killed.
	p2, err := StartOn(Local("broker"), "stubborn", log, "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done")
	if err != nil {
		t.Fatal(err)
	}
	wait.Within(t, 10*time.Second, "the ready line in the log", func() bool { b, _ := os.ReadFile(log); return strings.Contains(string(b), "ready") })
	if err := p2.Stop(200 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("stop of a stubborn process = %v, want a kill", err)
	}
	// Kill ends even a stopped process, and an appended log keeps the
	// earlier life's lines.
	p3, err := Start("appender", exec.Command("sh", "-c", "echo second; kill -STOP $$"), Output{Log: log, Append: true})
	if err != nil {
		t.Fatal(err)
	}
	wait.Within(t, 10*time.Second, "the second line in the log", func() bool { b, _ := os.ReadFile(log); return strings.Contains(string(b), "second") })
	p3.Kill()
	if p3.Running() {
		t.Error("killed process still running")
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), "ready") {
		t.Errorf("appending truncated the log: %q", b)
	}
}

func TestWaitForFailsWhenProcessExits(t *testing.T) {
	p, err := StartOn(Local("broker"), "quitter", filepath.Join(t.TempDir(), "q.log"), "true")
	if err != nil {
		t.Fatal(err)
	}
	err = WaitFor(context.Background(), 30*time.Second, "quitter serving", p, func() bool { return DialOK(context.Background(), "127.0.0.1", 1) })
	if err == nil || !strings.Contains(err.Error(), "quitter exited") {
		t.Errorf("WaitFor = %v", err)
	}
	if err := WaitFor(context.Background(), 100*time.Millisecond, "nothing", nil, func() bool { return false }); err == nil {
		t.Error("WaitFor of a condition that never holds returned nil")
	}
}

func TestDriverRun(t *testing.T) {
	dir := t.TempDir()
	res := perf.NewResult(10, 2000, 0.5, nil)
	ok := DriverRun{Host: localHost{"client"}, LogPath: filepath.Join(dir, "ok.log"),
		Argv: []string{"sh", "-c", "echo progress >&2; echo 'some line'; echo '" + res.Marshal() + "'"}}
	got, err := ok.Run(context.Background())
	if err != nil || got.Messages != 10 || got.MsgsPerSec != 20 {
		t.Errorf("run = %+v, %v", got, err)
	}
	b, _ := os.ReadFile(ok.LogPath)
	if !strings.Contains(string(b), "progress") || !strings.Contains(string(b), `"messages":10`) {
		t.Errorf("driver log lacks its output: %q", b)
	}
	fail := DriverRun{Host: localHost{"client"}, LogPath: filepath.Join(dir, "fail.log"),
		Argv: []string{"sh", "-c", "echo broken >&2; exit 3"}}
	if _, err := fail.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("failing driver = %v, want its stderr in the error", err)
	}
	nojson := DriverRun{Host: localHost{"client"}, LogPath: filepath.Join(dir, "nojson.log"), Argv: []string{"echo", "done"}}
	if _, err := nojson.Run(context.Background()); !errors.Is(err, perf.ErrNoResult) {
		t.Errorf("driver without JSON = %v, want ErrNoResult", err)
	}
}
