package experiments

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

func TestLogLines(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{20, 200, 1000} {
		if l := logLine(r, time.Now(), size); len(l) != size || strings.Contains(l, "\n") {
			t.Errorf("logLine(%d) has %d bytes: %q", size, len(l), l)
		}
	}
	path, err := writeLogLines(t.TempDir(), 200, 500)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for sc.Scan() {
		if len(sc.Text()) != 200 {
			t.Fatalf("line %d has %d bytes", n, len(sc.Text()))
		}
		n++
	}
	if n != 500 {
		t.Errorf("%d lines, want 500", n)
	}
	// Log-like, not random: gzip shrinks it several times.
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if ratio := float64(len(b)) / float64(z.Len()); ratio < 2.5 {
		t.Errorf("gzip ratio %.2f, want log-like lines that compress >= 2.5x", ratio)
	}
}
