package faults

import (
	"bufio"
	"cmp"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/netdb11/kafka/experiments/faults/check"
)

// A trial's history (trials/<cell>/history.jsonl): JSON lines, one
// check.Event each: the seed and configuration, every send with its
// outcome (wall-clock start and end, and StartMono/Mono, monotonic
// nanoseconds since the trial's start), every read and every consumer
// poll, commit and rebalance (Wall, Mono), every nemesis step (its window,
// wall and monotonic) and lost tail, the final reads, the replica hashes.
// The same seed replays the same schedule and workload (kafka-faults
// --replay).

// chronological orders a trial's events as they happened: the meta event
// first, then every event the harness timed (sends by their start, nemesis
// steps and lost tails by their start, reads, polls, commits and
// rebalances when they were recorded) by monotonic time, then what was
// gathered after the run (ends, replica hashes, reasons a trial is
// invalid) as it was. The sort is stable: one consumer's polls and
// rebalances keep their order, which the checker reads.
func chronological(evs []check.Event) {
	at := func(e check.Event) int64 {
		switch {
		case e.Type == check.TypeMeta:
			return math.MinInt64
		case e.StartMono != 0:
			return e.StartMono
		case e.Mono != 0:
			return e.Mono
		}
		return math.MaxInt64
	}
	slices.SortStableFunc(evs, func(a, b check.Event) int { return cmp.Compare(at(a), at(b)) })
}

func writeHistory(path string, evs []check.Event) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	w := check.NewWriter(bw)
	for _, e := range evs {
		if err := w.Write(e); err != nil {
			f.Close()
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rate is the acknowledged messages per second (sent ones in AckNone
// mode) in each bin of the run.
func rate(evs []check.Event, start time.Time, length, bin time.Duration, sent bool) []float64 {
	n := int(length / bin)
	out := make([]float64, n)
	for _, e := range evs {
		if e.Type != check.TypeSend {
			continue
		}
		at := e.End
		if sent {
			at = e.Start
		} else if e.Outcome != check.OK {
			continue
		}
		i := int(at.Sub(start) / bin)
		if i >= 0 && i < n {
			out[i] += float64(time.Second) / float64(bin)
		}
	}
	return out
}

// keepLogs copies the servers' logs from the work directory to out.
func keepLogs(work, out string) error {
	ents, err := os.ReadDir(work)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if e.IsDir() || filepath.Ext(e.Name()) != ".log" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(work, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(out, e.Name()), b, 0o644)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ReadHistory reads a history file.
func ReadHistory(path string) ([]check.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return check.Read(bufio.NewReader(f))
}
