package experiments

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Log-like payloads for the compression ablation: the paper's data is activity
// and operational logs (§1), which compress well because fields repeat; random
// bytes would not compress at all and say nothing about Kafka's compression.

var (
	logPages   = []string{"/home", "/feed", "/profile/view", "/search", "/jobs/view", "/messages/inbox", "/groups/home", "/people/pymk", "/company/about", "/settings/privacy"}
	logAgents  = []string{"Mozilla/5.0 (X11; Linux x86_64) Firefox/4.0", "Mozilla/5.0 (Windows NT 6.1) Chrome/11.0", "Mozilla/5.0 (Macintosh) Safari/533", "LinkedIn/1.0 iPhone"}
	logEvents  = []string{"PageViewEvent", "SearchEvent", "AdImpressionEvent", "ProfileViewEvent", "ConnectionInviteEvent"}
	logServers = []string{"fe01.prod", "fe02.prod", "fe03.prod", "app11.prod", "app12.prod"}
)

// logPayloads is the file of log-like payloads that one step writes and the
// producer steps send, one line per message.
type logPayloads struct {
	path string // empty until written
}

// logLine returns one activity-log line of exactly size bytes (padded with
// spaces or cut).
func logLine(r *rand.Rand, at time.Time, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s INFO %s member=%d page=%s?trk=%s ip=10.%d.%d.%d session=%016x ua=\"%s\" latency_ms=%d",
		at.Format("2006-01-02T15:04:05.000Z"), logServers[r.IntN(len(logServers))], logEvents[r.IntN(len(logEvents))],
		r.IntN(100_000_000), logPages[r.IntN(len(logPages))], logPages[r.IntN(len(logPages))][1:],
		r.IntN(256), r.IntN(256), r.IntN(256), r.Uint64(), logAgents[r.IntN(len(logAgents))], r.IntN(500))
	s := b.String()
	if len(s) >= size {
		return s[:size]
	}
	return s + strings.Repeat(" ", size-len(s))
}

// writeLogLines writes count log-like lines of size bytes, one per line, to a file
// in dir and returns its path.
func writeLogLines(dir string, size, count int) (path string, err error) {
	path = filepath.Join(dir, "log-lines.txt")
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("experiments: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("experiments: %w", cerr)
		}
	}()
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(2011, 6))
	at := time.Date(2011, 6, 12, 10, 0, 0, 0, time.UTC)
	for range count {
		at = at.Add(time.Duration(r.IntN(3000)) * time.Microsecond)
		if _, err := w.WriteString(logLine(r, at, size)); err != nil {
			return "", fmt.Errorf("experiments: %w", err)
		}
		if err := w.WriteByte('\n'); err != nil {
			return "", fmt.Errorf("experiments: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return "", fmt.Errorf("experiments: %w", err)
	}
	return path, f.Sync()
}
