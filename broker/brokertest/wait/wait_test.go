package wait

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilHolds(t *testing.T) {
	var n atomic.Int32
	if !Until(DefaultTimeout, func() bool { return n.Add(1) >= 5 }) {
		t.Fatal("Until gave up on a condition that held on the fifth poll")
	}
	if got := n.Load(); got != 5 {
		t.Errorf("polled %d times, want 5 (stop at the first true)", got)
	}
}

func TestUntilTimesOut(t *testing.T) {
	if Until(5*time.Millisecond, func() bool { return false }) {
		t.Fatal("Until reported success for a condition that never held")
	}
}

func TestWithinFails(t *testing.T) {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Within(ft, 5*time.Millisecond, "the moon", func() bool { return false })
	}()
	<-done
	if want := "timed out after 5ms waiting for the moon"; ft.msg != want {
		t.Errorf("failure message %q, want %q", ft.msg, want)
	}
}

// fakeT records Fatalf and ends the goroutine, as testing.T does.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
