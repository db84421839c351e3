package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest"
)

// buildTools builds the client tools into a temporary directory.
func buildTools(t *testing.T) string {
	t.Helper()
	return brokertest.Build(t,
		"github.com/netdb11/kafka/producer/cmd/kafka-producer-perf-test",
		"github.com/netdb11/kafka/consumer/cmd/kafka-consumer-perf-test")
}

type perfResult struct {
	Messages   int64   `json:"messages"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
	Acks       *int    `json:"acks"` // the producer's request.required.acks
}

// runJSON runs a tool and decodes the JSON object on its last stdout line.
func runJSON(t *testing.T, bin string, args ...string) perfResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\n%s", filepath.Base(bin), args, err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	var r perfResult
	dec := json.NewDecoder(strings.NewReader(lines[len(lines)-1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("last line %q is not the result object: %v", lines[len(lines)-1], err)
	}
	return r
}

func TestPerfToolsJSON(t *testing.T) {
	dir := buildTools(t)
	b := brokertest.Start(t, brokertest.Config())
	brokers := "--broker-list=0:" + b.Addr
	produced := int64(0)
	for _, args := range [][]string{
		{"--batch-size=50"},
		{"--batch-size=1", "--threads=2"},
		{"--batch-size=20", "--async"},
		{"--batch-size=50", "--compression-codec=2"},
		{"--batch-size=50", "--compression-codec=1", "--async", "--tcp-nodelay=false"},
		{"--batch-size=50", "--confirm=send"},
		{"--batch-size=20", "--async", "--confirm=send"},
	} {
		args = append(args, brokers, "--topic=perf", "--messages=1000", "--message-size=100", "--json")
		r := runJSON(t, filepath.Join(dir, "kafka-producer-perf-test"), args...)
		if r.Messages != 1000 || r.Bytes != 100*1000 || r.Seconds <= 0 || r.MsgsPerSec <= 0 || r.MBPerSec <= 0 || r.Acks == nil || *r.Acks != 0 {
			t.Errorf("producer %q: %+v", args, r)
		}
		produced += r.Messages
	}
	r := runJSON(t, filepath.Join(dir, "kafka-consumer-perf-test"), brokers, "--topic=perf",
		"--messages="+strconv.FormatInt(produced, 10), "--fetch-size=65536", "--json")
	if r.Messages != produced || r.Bytes != 100*produced || r.MsgsPerSec <= 0 || r.Acks != nil {
		t.Errorf("consumer: %+v, want %d messages of 100 bytes", r, produced)
	}
}

// Issue 11: a run whose messages the broker refuses exits 1 with one line
// counting them, in every mode.
func TestPerfToolReportsLoss(t *testing.T) {
	dir := buildTools(t)
	cfg := brokertest.Config()
	cfg.Log.MaxMessageSize = 100
	b := brokertest.Start(t, cfg)
	for _, args := range [][]string{
		{"--batch-size=50"},
		{"--batch-size=50", "--confirm=send"},
		{"--batch-size=20", "--async"},
		{"--batch-size=20", "--async", "--confirm=send"},
	} {
		args = append(args, "--broker-list=0:"+b.Addr, "--topic=refused", "--messages=200", "--message-size=200", "--json")
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(dir, "kafka-producer-perf-test"), args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err == nil || stdout.Len() != 0 {
			t.Fatalf("%q: err %v, stdout %q: want a failure and no result", args, err, stdout.String())
		}
		if line := strings.TrimSpace(stderr.String()); strings.Count(line, "\n") != 0 || !strings.Contains(line, " of 200 messages not delivered") {
			t.Fatalf("%q: stderr %q, want one line: N of 200 messages not delivered", args, line)
		}
	}
}

func TestHelp(t *testing.T) {
	dir := buildTools(t)
	for _, tool := range []string{"kafka-producer-perf-test", "kafka-consumer-perf-test"} {
		out, err := exec.Command(filepath.Join(dir, tool), "--help").CombinedOutput()
		if err != nil {
			t.Errorf("%s --help: %v", tool, err)
		}
		for _, flag := range []string{"--broker-list", "--topic", "--messages", "--json"} {
			if !strings.Contains(string(out), flag) {
				t.Errorf("%s --help does not describe %s:\n%s", tool, flag, out)
			}
		}
	}
}
