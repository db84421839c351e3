// Package progress shows how far a long command has got, in the form that
// suits where its output goes: on a terminal, a bar redrawn in place
// (schollz/progressbar); anywhere else (a pipe, a file such as the log of
// `make run > run.log 2>&1`), one line per step, so that the log reads as the
// list of what was done and when, instead of a thousand redraws of a bar.
// kafka-experiments and kafka-faults use it; the perf drivers use
// IsTerminal to show their bar only on a terminal.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/sys/unix"
)

// IsTerminal reports whether w is a terminal (an *os.File on which the
// terminal ioctl succeeds).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Steps shows a run of a known number of steps: Begin names each step as it
// starts, End counts it done. Its methods are safe for concurrent use.
type Steps struct {
	w     io.Writer
	what  string
	total int
	now   func() time.Time // the clock; tests replace it

	mu    sync.Mutex // guards the fields below
	start time.Time
	begun int // steps begun
	done  int // steps ended
	bar   *progressbar.ProgressBar
}

// New returns the Steps of a run of total steps called what ("experiments"):
// a bar on w when w is a terminal, else one line per step. A nil w shows
// nothing.
func New(w io.Writer, what string, total int) *Steps {
	s := &Steps{w: w, what: what, total: total, now: time.Now}
	s.start = s.now()
	if w != nil && IsTerminal(w) {
		s.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
	}
	return s
}

// NewLines is New without the bar: one line per step even on a terminal,
// for a command whose other output (kafka-faults' verdict lines) would
// break a bar redrawn in place.
func NewLines(w io.Writer, what string, total int) *Steps {
	s := &Steps{w: w, what: what, total: total, now: time.Now}
	s.start = s.now()
	return s
}

// Begin shows that step label starts: the bar's description, or the line
// "what k/N (elapsed): label".
func (s *Steps) Begin(label string) {
	if s == nil || s.w == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begun++
	if s.bar != nil {
		s.bar.Describe(fmt.Sprintf("%-58.58s", label))
		return
	}
	fmt.Fprintf(s.w, "%s %d/%d (%s): %s\n", s.what, s.begun, s.total, s.elapsed(), label)
}

// End counts a step done; after the last one, off a terminal, it writes
// "what: finished N/N in elapsed".
func (s *Steps) End() {
	if s == nil || s.w == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done++
	if s.bar != nil {
		_ = s.bar.Add(1)
		return
	}
	if s.done == s.total {
		fmt.Fprintf(s.w, "%s: finished %d/%d in %s\n", s.what, s.done, s.total, s.elapsed())
	}
}

// elapsed is the time since New, to the second.
func (s *Steps) elapsed() string { return s.now().Sub(s.start).Round(time.Second).String() }
