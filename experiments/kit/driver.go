package kit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/results"
)

// DriverRun is one run of a throughput driver.
type DriverRun struct {
	// Host runs Argv, the driver's command line; LogPath receives its
	// standard error and then its standard output.
	Host    Host
	Argv    []string
	LogPath string
	// Sample, when set, starts a sampler once the PID is known; its samples
	// replace the driver's own.
	Sample func(pid int, start time.Time) *perf.Sampler
	// Link, when set, measures the testbed link while the driver runs.
	Link *LinkWatch
	// Usage, when set, receives the machine's busy CPU time and the
	// driver's own while it ran.
	Usage *results.Conditions
	// Decode, when set, reads the result from the driver's standard
	// output instead of perf.ParseLast (drivers whose JSON line holds
	// more than a perf.Result).
	Decode func(stdout []byte) (perf.Result, error)
}

// Run executes the driver and parses the JSON result on its last line.
func (d DriverRun) Run(ctx context.Context) (perf.Result, error) {
	var stdout bytes.Buffer
	log, err := os.Create(d.LogPath)
	if err != nil {
		return perf.Result{}, fmt.Errorf("kit: %w", err)
	}
	defer log.Close()
	fmt.Fprintf(log, "$ %s\n", strings.Join(d.Argv, " "))
	cmd := d.Host.Command(ctx, d.Argv...)
	cmd.Stdout, cmd.Stderr = &stdout, log
	cmd.WaitDelay = 5 * time.Second
	d.Link.begin(ctx)
	stat0, statErr := ReadCPUStat()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		d.Link.end(ctx)
		return perf.Result{}, fmt.Errorf("kit: starting %s: %w", d.Argv[0], err)
	}
	var sampler *perf.Sampler
	if d.Sample != nil {
		sampler = d.Sample(cmd.Process.Pid, start)
	}
	werr := cmd.Wait()
	d.Link.end(ctx)
	if d.Usage != nil {
		d.Usage.WallSeconds = time.Since(start).Seconds()
		if stat1, err := ReadCPUStat(); err == nil && statErr == nil {
			d.Usage.BusyCPUSeconds = BusySeconds(stat0, stat1)
		}
		if ps := cmd.ProcessState; ps != nil {
			d.Usage.ClientCPUSeconds = (ps.UserTime() + ps.SystemTime()).Seconds()
		}
	}
	var samples []perf.Sample
	if sampler != nil {
		samples = sampler.Stop(time.Now())
	}
	if _, err := log.Write(stdout.Bytes()); err != nil {
		return perf.Result{}, fmt.Errorf("kit: writing %s: %w", d.LogPath, err)
	}
	if werr != nil {
		return perf.Result{}, fmt.Errorf("kit: %s failed: %w (log: %s)%s", filepath.Base(d.Argv[0]), werr, d.LogPath, Tail(d.LogPath))
	}
	var res perf.Result
	if d.Decode != nil {
		res, err = d.Decode(stdout.Bytes())
	} else {
		res, err = perf.ParseLast(&stdout)
	}
	if err != nil {
		return perf.Result{}, fmt.Errorf("kit: %s: %w (log: %s)", filepath.Base(d.Argv[0]), err, d.LogPath)
	}
	if sampler != nil {
		res.Samples = samples
	}
	return res, nil
}

// Tail returns the last lines of a log for an error message.
func Tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return "\n  " + strings.Join(lines, "\n  ")
}
