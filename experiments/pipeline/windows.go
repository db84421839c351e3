package pipeline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	caudit "github.com/netdb11/kafka/consumer/audit"
	"github.com/netdb11/kafka/experiments/results"
)

// loadSummary is kafka-audit-producer's --json summary.
type loadSummary struct {
	Sent    int64 `json:"sent"`
	Windows []struct {
		Unix        float64 `json:"window_unix"`
		Messages    int64   `json:"messages"`
		QueueMeanms float64 `json:"queue_mean_ms"`
	} `json:"windows"`
}

// readRows reads kafka-audit --json output: its windows by start time, and
// its total.
func readRows(path string) (map[float64]caudit.JSONRow, caudit.JSONRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, caudit.JSONRow{}, err
	}
	defer f.Close()
	rows := map[float64]caudit.JSONRow{}
	var total caudit.JSONRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r caudit.JSONRow
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		switch r.Type {
		case "window":
			if r.LengthS > 0 {
				rows[r.WindowUnix] = r
			}
		case "total":
			total = r
		}
	}
	return rows, total, sc.Err()
}

// outs are the files the phase's audits printed: the final audit at the
// analysis cluster, the consumer's, and the observers' at each cluster.
type outs struct{ final, consumer, live, analysis string }

// mergeWindows reads what the phase's audits printed and merges it, window
// by window, with the producers' queueing, into ph's windows and total.
func mergeWindows(ph *results.PipelinePhase, sums []loadSummary, sent int64, o outs) error {
	final, total, err := readRows(o.final)
	if err != nil {
		return err
	}
	endToEnd, e2eTotal, err := readRows(o.consumer)
	if err != nil {
		return err
	}
	live, _, err := readRows(o.live)
	if err != nil {
		return err
	}
	ana, _, err := readRows(o.analysis)
	if err != nil {
		return err
	}
	queued := map[float64][2]float64{} // window -> (sum of queue ms, messages)
	for _, s := range sums {
		for _, w := range s.Windows {
			q := queued[w.Unix]
			q[0] += w.QueueMeanms * float64(w.Messages)
			q[1] += float64(w.Messages)
			queued[w.Unix] = q
		}
	}
	var keys []float64
	for k := range final {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	start := float64(ph.Started.UnixNano()) / 1e9
	var tq, tl, ta, tn float64
	for _, k := range keys {
		f, x := final[k], endToEnd[k]
		w := results.PipelineWindow{At: k - start, Tally: f.Tally, LatencyMs: x.LatencyMs,
			LiveMs: live[k].MeanMs, AnalysisMs: ana[k].MeanMs}
		if q := queued[k]; q[1] > 0 {
			w.QueuedMs = q[0] / q[1]
		}
		ph.Windows = append(ph.Windows, w)
		n := float64(f.Sent)
		tq, tl, ta, tn = tq+w.QueuedMs*n, tl+w.LiveMs*n, ta+w.AnalysisMs*n, tn+n
	}
	ph.Total = results.PipelineWindow{Tally: total.Tally, LatencyMs: e2eTotal.LatencyMs}
	if tn > 0 {
		ph.Total.QueuedMs, ph.Total.LiveMs, ph.Total.AnalysisMs = tq/tn, tl/tn, ta/tn
	}
	if total.Sent != sent {
		return fmt.Errorf("pipeline: the producers sent %d messages, the audit's events announce %d", sent, total.Sent)
	}
	return nil
}

// LoadAverage reads /proc/loadavg's first three fields.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
