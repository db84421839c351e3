package perf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseLast(t *testing.T) {
	out := "progress 10%\nprogress 100%\n\n" +
		`{"messages":1000,"bytes":200000,"seconds":2,"msgs_per_sec":500,"mb_per_sec":0.095,"samples":[{"t":1,"messages":400},{"t":2,"messages":1000}]}` + "\n\n"
	got, err := ParseLast(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if got.Messages != 1000 || got.Bytes != 200000 || got.Seconds != 2 || got.MsgsPerSec != 500 || len(got.Samples) != 2 || got.Samples[1].Messages != 1000 {
		t.Errorf("ParseLast = %+v", got)
	}
}

func TestParseLastKafkaToolShape(t *testing.T) {
	// The perf tools of the broker print exactly these five fields.
	got, err := ParseLast(strings.NewReader(`{"messages":5,"bytes":1000,"seconds":0.5,"msgs_per_sec":10,"mb_per_sec":0.0019}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Messages != 5 || len(got.Samples) != 0 {
		t.Errorf("ParseLast = %+v", got)
	}
}

func TestParseLastErrors(t *testing.T) {
	tests := []struct {
		name, in string
		is       error
	}{
		{"empty", "", ErrNoResult},
		{"no json", "hello\nworld\n", ErrNoResult},
		{"json not last", `{"messages":1}` + "\ntrailing text\n", ErrNoResult},
		{"bad json", `{"messages":`, nil},
		{"unknown field", `{"messages":1,"bogus":2}`, nil},
		{"negative", `{"messages":-1,"bytes":0,"seconds":1,"msgs_per_sec":0,"mb_per_sec":0}`, nil},
		{"unordered samples", `{"messages":1,"bytes":0,"seconds":1,"msgs_per_sec":0,"mb_per_sec":0,"samples":[{"t":2,"messages":1},{"t":1,"messages":1}]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseLast(strings.NewReader(tt.in))
			if err == nil {
				t.Fatal("ParseLast succeeded, want an error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v, want %v", err, tt.is)
			}
		})
	}
}

func TestNewResultAndMarshalRoundTrip(t *testing.T) {
	r := NewResult(1000, 200*1000, 0.5, []Sample{{T: 0.25, Messages: 400}, {T: 0.5, Messages: 1000}})
	if r.MsgsPerSec != 2000 || r.MBPerSec != 200*1000/float64(MB)/0.5 {
		t.Errorf("rates %v %v", r.MsgsPerSec, r.MBPerSec)
	}
	back, err := ParseLast(strings.NewReader(r.Marshal()))
	if err != nil {
		t.Fatal(err)
	}
	if back.Messages != r.Messages || back.MsgsPerSec != r.MsgsPerSec || len(back.Samples) != 2 {
		t.Errorf("round trip = %+v, want %+v", back, r)
	}
	if z := NewResult(10, 10, 0, nil); z.MsgsPerSec != 0 || z.MBPerSec != 0 {
		t.Errorf("zero duration gives rates %+v", z)
	}
}

func TestRates(t *testing.T) {
	got := Rates([]Sample{{T: 0.5, Messages: 100}, {T: 0.5, Messages: 100}, {T: 1, Messages: 300}, {T: 2, Messages: 300}})
	want := []Rate{{T: 0.5, MsgsPerSec: 200}, {T: 1, MsgsPerSec: 400}, {T: 2, MsgsPerSec: 0}}
	if len(got) != len(want) {
		t.Fatalf("Rates = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Rates[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestSampler(t *testing.T) {
	var n atomic.Int64
	start := time.Now()
	s := StartSampler(start, time.Millisecond, n.Load)
	// Wait on the condition (three samples taken) rather than on time.
	deadline := time.Now().Add(5 * time.Second)
	for {
		n.Add(1)
		s.mu.Lock()
		k := len(s.samples)
		s.mu.Unlock()
		if k >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sampler took no samples within 5 s")
		}
		<-time.After(time.Millisecond)
	}
	n.Store(1000)
	got := s.Stop(time.Now())
	if len(got) < 4 {
		t.Fatalf("%d samples, want >= 4", len(got))
	}
	if last := got[len(got)-1]; last.Messages != 1000 {
		t.Errorf("final sample %+v, want 1000 messages", last)
	}
	for i := 1; i < len(got); i++ {
		if got[i].T < got[i-1].T || got[i].Messages < got[i-1].Messages {
			t.Errorf("samples not monotonic at %d: %v", i, got)
		}
	}
	if again := s.Stop(time.Now()); len(again) != len(got) {
		t.Errorf("second Stop returned %d samples, want %d", len(again), len(got))
	}
}

func TestPrint(t *testing.T) {
	r := NewResult(1000, 200000, 2, nil)
	var text, js strings.Builder
	if err := r.Print(&text, false); err != nil {
		t.Fatal(err)
	}
	if want := "messages: 1000\nbytes: 200000\nseconds: 2.000\nmsgs/s: 500\nMiB/s: 0.10\n"; text.String() != want {
		t.Errorf("text = %q, want %q", text.String(), want)
	}
	if err := r.Print(&js, true); err != nil {
		t.Fatal(err)
	}
	got, err := ParseLast(strings.NewReader(js.String()))
	if err != nil || got.Messages != 1000 || got.MsgsPerSec != 500 {
		t.Errorf("JSON %q parses to %+v, %v", js.String(), got, err)
	}
}

func TestStartCPUProfile(t *testing.T) {
	stop, err := StartCPUProfile("")
	if err != nil || stop() != nil {
		t.Fatalf("empty path: %v", err)
	}
	path := filepath.Join(t.TempDir(), "cpu.prof")
	stop, err = StartCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// A gzip-compressed protobuf, as runtime/pprof writes it.
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile file: %d bytes, %v", len(b), err)
	}
	if _, err := StartCPUProfile(filepath.Join(t.TempDir(), "no", "such", "dir")); err == nil {
		t.Fatal("no error for a path that cannot be created")
	}
}
