// Package perf defines the result the perf tools (kafka-producer-perf-test,
// kafka-consumer-perf-test) and every throughput driver of the experiments
// print, and the tools' progress line: the JSON object of Kafka's perf tools
// ({"messages","bytes","seconds","msgs_per_sec","mb_per_sec"}), extended with
// throughput samples over time so that the paper's producer figure
// (throughput against time, §5) can be drawn for every system. It lives
// beside the tools' skeleton so that product tools need nothing from
// experiments.
//
// The Go drivers (RabbitMQ, Kafka's perf tools) and the Java ActiveMQ driver all
// print one such object as the last line of their standard output.
package perf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"strings"
)

// MB is the unit of mb_per_sec: a mebibyte, as in Kafka's own perf tools.
const MB = 1 << 20

// Sample is the cumulative number of messages a driver had moved T seconds after
// it started timing.
type Sample struct {
	// T is seconds since the driver started timing.
	T float64 `json:"t"`
	// Messages is the cumulative count of messages sent or received by then.
	Messages int64 `json:"messages"`
}

// Result is what one driver run measured.
type Result struct {
	// Messages is the number of messages sent or received.
	Messages int64 `json:"messages"`
	// Bytes is the payload bytes those messages carried.
	Bytes int64 `json:"bytes"`
	// Seconds is the timed duration.
	Seconds float64 `json:"seconds"`
	// MsgsPerSec is Messages / Seconds.
	MsgsPerSec float64 `json:"msgs_per_sec"`
	// MBPerSec is Bytes / Seconds in units of MB.
	MBPerSec float64 `json:"mb_per_sec"`
	// Samples is the cumulative message count over time; empty when the driver
	// does not sample.
	Samples []Sample `json:"samples,omitempty"`
	// Acks is the producer's request.required.acks (0, 1 or -1), set by
	// kafka-producer-perf-test; nil for drivers without the setting.
	Acks *int `json:"acks,omitempty"`
}

// NewResult fills the derived rates of a Result.
func NewResult(messages, bytes int64, seconds float64, samples []Sample) Result {
	r := Result{Messages: messages, Bytes: bytes, Seconds: seconds, Samples: samples}
	if seconds > 0 {
		r.MsgsPerSec = float64(messages) / seconds
		r.MBPerSec = float64(bytes) / MB / seconds
	}
	return r
}

// ErrNoResult reports driver output without a JSON result line.
var ErrNoResult = errors.New("perf: no JSON result line in output")

// ParseLast reads a driver's standard output and decodes its last non-empty line
// as a Result. Earlier lines (progress, logs) are ignored.
func ParseLast(r io.Reader) (Result, error) {
	var last []byte
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) > 0 {
			last = append(last[:0], line...)
		}
	}
	if err := sc.Err(); err != nil {
		return Result{}, fmt.Errorf("perf: reading driver output: %w", err)
	}
	if len(last) == 0 || last[0] != '{' {
		return Result{}, ErrNoResult
	}
	var res Result
	dec := json.NewDecoder(bytes.NewReader(last))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		return Result{}, fmt.Errorf("perf: decoding result %q: %w", truncate(string(last), 200), err)
	}
	if err := res.Validate(); err != nil {
		return Result{}, err
	}
	return res, nil
}

// Validate checks that a Result is internally consistent: no negative or
// non-finite numbers, and samples in time order.
func (r Result) Validate() error {
	for name, v := range map[string]float64{"seconds": r.Seconds, "msgs_per_sec": r.MsgsPerSec, "mb_per_sec": r.MBPerSec} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("perf: result field %s = %v is not a finite non-negative number", name, v)
		}
	}
	if r.Messages < 0 || r.Bytes < 0 {
		return fmt.Errorf("perf: negative counts in result (messages %d, bytes %d)", r.Messages, r.Bytes)
	}
	for i := 1; i < len(r.Samples); i++ {
		if r.Samples[i].T < r.Samples[i-1].T {
			return fmt.Errorf("perf: sample %d at t=%v precedes sample %d at t=%v", i, r.Samples[i].T, i-1, r.Samples[i-1].T)
		}
	}
	return nil
}

// Marshal encodes r as one JSON line (without the newline).
func (r Result) Marshal() string {
	b, err := json.Marshal(r)
	if err != nil {
		// Only non-finite floats can fail, and NewResult never makes them.
		return fmt.Sprintf(`{"messages":%d,"bytes":%d,"seconds":0,"msgs_per_sec":0,"mb_per_sec":0}`, r.Messages, r.Bytes)
	}
	return string(b)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// Print writes a perf tool's result: the JSON object of one line (the
// experiments parse it as the last line of stdout), or the same numbers as
// text (mb_per_sec counts MiB of payload per second, as 0.7's tools do).
func (r Result) Print(w io.Writer, asJSON bool) error {
	if asJSON {
		_, err := fmt.Fprintln(w, r.Marshal())
		return err
	}
	_, err := fmt.Fprintf(w, "messages: %d\nbytes: %d\nseconds: %.3f\nmsgs/s: %.0f\nMiB/s: %.2f\n",
		r.Messages, r.Bytes, r.Seconds, r.MsgsPerSec, r.MBPerSec)
	if err == nil && r.Acks != nil {
		_, err = fmt.Fprintf(w, "acks: %d\n", *r.Acks)
	}
	return err
}

// StartCPUProfile writes a CPU profile (runtime/pprof, for go tool pprof) to
// path until the returned function is called; with an empty path it does
// nothing. The perf tools and kafka-server take it as --cpuprofile, so that
// where the time goes can be read from a real run.
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(fmt.Errorf("cpuprofile: %w", err), f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		return nil
	}, nil
}
