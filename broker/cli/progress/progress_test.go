package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// fakeClock returns a clock that moves a minute and a half per call.
func fakeClock() func() time.Time {
	t := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(90 * time.Second)
		return t
	}
}

// TestStepsOffATerminalWriteOneLinePerStep: into a buffer (a pipe, a log
// file), three steps give three lines and a closing one, and no carriage
// return (a redrawn bar writes one per redraw).
func TestStepsOffATerminalWriteOneLinePerStep(t *testing.T) {
	var out bytes.Buffer
	s := New(&out, "experiments", 3)
	s.now = fakeClock()
	s.start = s.now()
	for _, l := range []string{"start kafka", "kafka producer batch 50", "stop kafka"} {
		s.Begin(l)
		s.End()
	}
	want := "experiments 1/3 (1m30s): start kafka\n" +
		"experiments 2/3 (3m0s): kafka producer batch 50\n" +
		"experiments 3/3 (4m30s): stop kafka\n" +
		"experiments: finished 3/3 in 6m0s\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestStepsOnATerminalDrawABar: on a terminal (a pseudo-terminal's master
// side) New draws the bar; NewLines never does; a file is no terminal.
func TestStepsOnATerminalDrawABar(t *testing.T) {
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal to test with: %v", err)
	}
	defer ptm.Close()
	if !IsTerminal(ptm) {
		t.Fatal("IsTerminal(/dev/ptmx) = false")
	}
	if s := New(ptm, "experiments", 2); s.bar == nil {
		t.Error("New on a terminal draws no bar")
	}
	if s := NewLines(ptm, "faults", 2); s.bar != nil {
		t.Error("NewLines on a terminal draws a bar")
	}
	f, err := os.Create(t.TempDir() + "/log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&bytes.Buffer{}) {
		t.Error("a file or a buffer is taken for a terminal")
	}
	s := New(f, "experiments", 1)
	s.Begin("only step")
	s.End()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "\r") || !strings.HasPrefix(string(b), "experiments 1/1 (") {
		t.Errorf("into a file: %q, want lines", b)
	}
}

// A nil writer or a nil *Steps shows nothing and does not panic.
func TestStepsNil(t *testing.T) {
	New(nil, "x", 1).Begin("a")
	var s *Steps
	s.Begin("a")
	s.End()
}
