// Package results holds the record of every measured run of the experiments and
// writes them, with the configuration and the machine's description, as CSV and
// JSON: nothing in the report or the figures exists that is not in these files.
package results

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/machine"
)

// System is a messaging system under test.
type System string

// Systems compared in the paper's §5.
const (
	Kafka    System = "kafka"
	ActiveMQ System = "activemq"
	RabbitMQ System = "rabbitmq"
)

// Phase is what a run measured: sending or receiving.
type Phase string

// Phases of a run.
const (
	Produce Phase = "produce"
	Consume Phase = "consume"
)

// Experiment names a part of the report whose runs it owns: the paper's
// comparison, an ablation or an extension. Each part declares its own.
type Experiment string

// Main is the paper's comparison (§5): the producer, consumer and storage
// tests. The other parts of the experiments (the ablations, the scale-out)
// declare their own.
const Main Experiment = "main"

// Key identifies a configuration of the experiments: the runs of one key are
// repetitions of the same measurement. In a Select, a zero field matches
// every value.
type Key struct {
	// System is kafka, activemq or rabbitmq.
	System System `json:"system"`
	// Experiment is Main or an ablation name.
	Experiment Experiment `json:"experiment"`
	// Variant is the configuration within the experiment ("batch=50",
	// "transactions of 50 messages", "sendfile=false").
	Variant Variant `json:"variant"`
	// Phase is produce or consume.
	Phase Phase `json:"phase"`
}

// ID names the run of k with repetition rep uniquely within a result set:
// "system/experiment/variant/phase/rep=N".
func (k Key) ID(rep int) string {
	return fmt.Sprintf("%s/%s/%s/%s/rep=%d", k.System, k.Experiment, k.Variant.slug(), k.Phase, rep)
}

// Matches reports whether k matches the pattern p, whose zero fields match
// anything.
func (k Key) Matches(p Key) bool {
	return (p.System == "" || k.System == p.System) && (p.Experiment == "" || k.Experiment == p.Experiment) &&
		(p.Variant.IsZero() || k.Variant == p.Variant) && (p.Phase == "" || k.Phase == p.Phase)
}

// Run is one measured execution of one configuration.
type Run struct {
	// ID names the run uniquely within a result set (Key.ID).
	ID string `json:"id"`
	// Key is the configuration the run measured.
	Key
	// Param is the numeric sweep parameter (batch size, flush interval, partitions,
	// log size in bytes); 0 when the experiment has none.
	Param float64 `json:"param,omitempty"`
	// Rep numbers the repetitions of one configuration from 1.
	Rep int `json:"rep"`
	// Config is the full configuration of the run (driver flags, broker settings).
	Config map[string]string `json:"config"`
	// Result is what the driver measured.
	Result perf.Result `json:"result"`
	// StorageBytesPerMsg is disk space allocated per message stored (0: not
	// measured).
	StorageBytesPerMsg float64 `json:"storage_bytes_per_msg,omitempty"`
	// StorageApparentBytesPerMsg is the growth of file sizes per message stored.
	StorageApparentBytesPerMsg float64 `json:"storage_apparent_bytes_per_msg,omitempty"`
	// BrokerRSSBytes is the broker's resident set size after the run (0: not
	// measured).
	BrokerRSSBytes int64 `json:"broker_rss_bytes,omitempty"`
	// BrokerDiskWriteBytes is what the broker wrote to storage during the
	// run (write_bytes of /proc/PID/io; nil: not measured). Paper §5: a
	// consumer of ActiveMQ makes its broker write delivery state, one of
	// Kafka none.
	BrokerDiskWriteBytes *int64 `json:"broker_disk_write_bytes,omitempty"`
	// BrokerCPUSeconds is the broker's user+system CPU time during the run.
	BrokerCPUSeconds float64 `json:"broker_cpu_seconds,omitempty"`
	// LinkUtilisation is the bytes on the client's testbed link in the
	// messages' direction (client to broker for a producer, broker to client
	// for a consumer), frames with their headers, over the link's capacity,
	// during the run's steady-state window: from the moment 10% of the run's
	// bytes had crossed the link to the moment 90% had (0: loopback or not
	// measured).
	LinkUtilisation float64 `json:"link_utilisation,omitempty"`
	// LinkSteadySeconds is the length of that window.
	LinkSteadySeconds float64 `json:"link_steady_seconds,omitempty"`
	// LinkUtilisationTimed is the same bytes over the driver's whole timed run
	// (start-up and drain included) over the link's capacity.
	LinkUtilisationTimed float64 `json:"link_utilisation_timed,omitempty"`
	// BrokerCoreBusy and ClientCoreBusy are the fractions of the broker
	// hosts' and the client host's cores that were busy during the run, every
	// process on them counted (/proc/stat); 0: not measured.
	BrokerCoreBusy float64 `json:"broker_core_busy,omitempty"`
	ClientCoreBusy float64 `json:"client_core_busy,omitempty"`
	// LinkBytesSent and LinkBytesReceived are the bytes the client host sent
	// and received on its link while the driver ran.
	LinkBytesSent     uint64 `json:"link_bytes_sent,omitempty"`
	LinkBytesReceived uint64 `json:"link_bytes_received,omitempty"`
	// Runtime is how the system under test ran: "process" (a plain process)
	// or "container" (its own container). The experiments set it on every
	// run; it is empty only in files written before runtimes existed, whose
	// runs were all processes.
	Runtime string `json:"runtime,omitempty"`
	// Container describes the system's container; nil in the process runtime.
	Container *Container `json:"container,omitempty"`
	// Conditions are the machine's state around the run; nil in files
	// written before they were recorded.
	Conditions *Conditions `json:"conditions,omitempty"`
	// AckLatency and EndToEndLatency are the latencies of a run that
	// measures them (the replication part): from sending a message to its
	// acknowledgement, and to a consumer receiving it; nil otherwise. They
	// are in runs.json only.
	AckLatency      *Latency `json:"ack_latency,omitempty"`
	EndToEndLatency *Latency `json:"end_to_end_latency,omitempty"`
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Error is why the run failed; empty for a good run.
	Error string `json:"error,omitempty"`
}

// Latency is the distribution of one latency over a run's messages, in
// milliseconds.
type Latency struct {
	// N is the number of messages measured.
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

// Container is the container a system under test ran in, and what its cgroup
// recorded during one run.
type Container struct {
	// Image is the image's name; ImageID its content-addressed ID.
	Image   string `json:"image"`
	ImageID string `json:"image_id,omitempty"`
	// CPUs and Memory are the container's limits (docker run --cpus, --memory).
	CPUs   string `json:"cpus"`
	Memory string `json:"memory"`
	// MemoryPeakBytes is the most memory the container was charged during
	// the run, page cache included (cgroup v2: since the container started).
	MemoryPeakBytes int64 `json:"memory_peak_bytes,omitempty"`
}

// OK reports whether the run produced a measurement.
func (r Run) OK() bool { return r.Error == "" && r.Result.Messages > 0 }

// Set is everything one invocation of the experiments produced.
type Set struct {
	// Machine describes where the runs happened, with its limits measured
	// before the first run.
	Machine machine.Machine `json:"machine"`
	// LimitsAfter is the machine's limits measured again after the last
	// run (issue 14: a shared machine's limits move); nil when not measured.
	LimitsAfter *machine.Machine `json:"limits_after,omitempty"`
	// Config is the configuration of the invocation.
	Config Config `json:"config"`
	// Testbed describes where the brokers and clients ran.
	Testbed string `json:"testbed"`
	// Started and Finished bound the whole invocation.
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Runs in execution order.
	Runs []Run `json:"runs"`
	// Pipeline is the two-datacenter pipeline of paper §4 (--pipeline).
	Pipeline *Pipeline `json:"pipeline,omitempty"`
}

// Select returns the good runs whose key matches k; a zero field of k matches
// everything.
func (s *Set) Select(k Key) []Run {
	var out []Run
	for _, r := range s.Runs {
		if r.OK() && r.Key.Matches(k) {
			out = append(out, r)
		}
	}
	return out
}

// Values extracts one number from each run.
func Values(runs []Run, f func(Run) float64) []float64 {
	out := make([]float64, 0, len(runs))
	for _, r := range runs {
		out = append(out, f(r))
	}
	return out
}

// Throughput is a Values extractor: messages per second.
func Throughput(r Run) float64 { return r.Result.MsgsPerSec }

// Storage is a Values extractor: allocated bytes per message, NaN when unmeasured.
func Storage(r Run) float64 {
	if r.StorageBytesPerMsg == 0 {
		return math.NaN()
	}
	return r.StorageBytesPerMsg
}

// Params returns the distinct sweep parameters of runs in increasing order.
func Params(runs []Run) []float64 {
	seen := map[float64]bool{}
	var out []float64
	for _, r := range runs {
		if !seen[r.Param] {
			seen[r.Param] = true
			out = append(out, r.Param)
		}
	}
	sort.Float64s(out)
	return out
}

// Variants returns the distinct variants of runs in first-seen order.
func Variants(runs []Run) []Variant {
	seen := map[Variant]bool{}
	var out []Variant
	for _, r := range runs {
		if !seen[r.Variant] {
			seen[r.Variant] = true
			out = append(out, r.Variant)
		}
	}
	return out
}

// WriteJSON writes the set to path, indented.
func (s *Set) WriteJSON(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("results: encoding %s: %w", path, err)
	}
	return writeFile(path, append(b, '\n'))
}

// ReadJSON reads a set written by WriteJSON, also by earlier versions: the
// fields are the same, and a variant is parsed from its words.
func ReadJSON(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	var s Set
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("results: decoding %s: %w", path, err)
	}
	return &s, nil
}

// CSVHeader is the first row of the CSV file.
var CSVHeader = []string{
	"id", "system", "experiment", "variant", "param", "phase", "rep",
	"messages", "bytes", "seconds", "msgs_per_sec", "mb_per_sec",
	"storage_bytes_per_msg", "storage_apparent_bytes_per_msg", "broker_rss_bytes",
	"broker_cpu_seconds", "link_utilisation", "link_steady_seconds", "link_utilisation_timed",
	"link_bytes_sent", "link_bytes_received", "broker_core_busy", "client_core_busy", "started", "error", "config",
}

// WriteCSV writes one row per run; the configuration is a JSON object in the last
// column.
func (s *Set) WriteCSV(path string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("results: closing %s: %w", path, cerr)
		}
	}()
	w := csv.NewWriter(f)
	if err := w.Write(CSVHeader); err != nil {
		return fmt.Errorf("results: writing %s: %w", path, err)
	}
	ff := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, r := range s.Runs {
		cfg, err := json.Marshal(r.Config)
		if err != nil {
			return fmt.Errorf("results: encoding config of %s: %w", r.ID, err)
		}
		row := []string{
			r.ID, string(r.System), string(r.Experiment), r.Variant.String(), ff(r.Param), string(r.Phase), strconv.Itoa(r.Rep),
			strconv.FormatInt(r.Result.Messages, 10), strconv.FormatInt(r.Result.Bytes, 10),
			ff(r.Result.Seconds), ff(r.Result.MsgsPerSec), ff(r.Result.MBPerSec),
			ff(r.StorageBytesPerMsg), ff(r.StorageApparentBytesPerMsg), strconv.FormatInt(r.BrokerRSSBytes, 10),
			ff(r.BrokerCPUSeconds), ff(r.LinkUtilisation), ff(r.LinkSteadySeconds), ff(r.LinkUtilisationTimed),
			strconv.FormatUint(r.LinkBytesSent, 10), strconv.FormatUint(r.LinkBytesReceived, 10),
			ff(r.BrokerCoreBusy), ff(r.ClientCoreBusy), r.Started.UTC().Format(time.RFC3339Nano), r.Error, string(cfg),
		}
		if err := w.Write(row); err != nil {
			return fmt.Errorf("results: writing %s: %w", path, err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("results: writing %s: %w", path, err)
	}
	return f.Sync()
}

// writeFile writes b to path through a temporary file and a rename, so a reader
// never sees half a file.
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return errors.Join(fmt.Errorf("results: writing %s: %w", path, err), os.Remove(tmp.Name()))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return errors.Join(fmt.Errorf("results: %w", err), os.Remove(tmp.Name()))
	}
	return nil
}
