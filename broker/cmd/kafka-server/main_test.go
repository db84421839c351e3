package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/replica"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/spf13/pflag"
)

// The test binary runs main when asked to, so tests can run the command as
// a process and signal it.
func TestMain(m *testing.M) {
	if os.Getenv("KAFKA_SERVER_RUN_MAIN") == "1" {
		os.Args = append([]string{"kafka-server"}, strings.Fields(os.Getenv("KAFKA_SERVER_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestHelpDescribesEveryKey(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out); !errors.Is(err, pflag.ErrHelp) {
		t.Fatalf("run --help = %v", err)
	}
	for _, k := range append(broker.KeyNames(), replica.Keys.Names()...) {
		if !regexp.MustCompile(`--` + regexp.QuoteMeta(k) + `\b.*\S`).MatchString(out.String()) {
			t.Errorf("--help does not describe %s", k)
		}
	}
}

// TestLayerKeysReachReplicaConfig: the replication layer's keys, which are
// not fields of broker.Config (issue 25), reach replica.Config from the
// properties file and from flags (flags win), beside the broker's keys,
// with the layer's defaults for the rest; none is reported as unknown.
func TestLayerKeysReachReplicaConfig(t *testing.T) {
	props := filepath.Join(t.TempDir(), "server.properties")
	body := "brokerid=3\nmin.insync.replicas=2\nreplica.truncation=hw\nreplica.lag.time.max.ms=1500\n"
	if err := os.WriteFile(props, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("kafka-server", pflag.ContinueOnError)
	load := addFlags(fs)
	if err := fs.Parse([]string{"--replica.lag.time.max.ms=2500", "--unclean.leader.election.enable", "--port=0"}); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg, rc, err := load(props, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	want := replica.DefaultConfig()
	want.MinInsyncReplicas, want.Truncation = 2, replica.TruncateHW  // the file
	want.LagTime, want.UncleanElection = 2500*time.Millisecond, true // the flags, over the file
	if !reflect.DeepEqual(rc, want) {
		t.Errorf("replica.Config = %+v\nwant %+v", rc, want)
	}
	if cfg.BrokerID != 3 || cfg.Port != 0 {
		t.Errorf("broker.Config: brokerid %d port %d, want 3 and 0", cfg.BrokerID, cfg.Port)
	}
	if strings.Contains(logs.String(), "unknown") {
		t.Errorf("a layer key was reported unknown: %s", logs.String())
	}
}

func TestBadArguments(t *testing.T) {
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("num.partitions=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--log.file.size=x"}, `log.file.size="x": not an integer`},
		{[]string{"--port=-5"}, `port=-5: must be in 0..65535`},
		{[]string{"--no.such.key=1"}, `unknown flag: --no.such.key`},
		{[]string{"a.properties", "b.properties"}, `at most one properties file`},
		{[]string{filepath.Join(t.TempDir(), "missing.properties")}, `no such file or directory`},
		{[]string{props}, `server.properties:1: broker: invalid configuration: num.partitions=0`},
		{[]string{"--min.insync.replicas=0"}, `replica: invalid configuration: min.insync.replicas=0: must be in 1..2147483647`},
		{[]string{"--replica.truncation=none"}, `replica.truncation="none": must be epoch or hw`},
	}
	for _, tc := range tests {
		err := run(context.Background(), tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %q = %v; want %q", tc.args, err, tc.want)
		}
	}
}

// The command serves until SIGTERM, SIGINT or SIGHUP, then shuts down
// cleanly: exit status 0 and the clean-shutdown markers written. SIGHUP used
// to kill the broker with no clean shutdown (the next start had to recover).
func TestSignalsShutDownCleanly(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) { testShutsDownCleanly(t, sig) })
	}
}

func testShutsDownCleanly(t *testing.T, sig syscall.Signal) {
	dir := t.TempDir()
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("brokerid=1\nlog.dir="+dir+"\nenable.zookeeper=false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "KAFKA_SERVER_RUN_MAIN=1",
		"KAFKA_SERVER_ARGS="+props+" --hostname=127.0.0.1 --port=0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	started := make(chan string, 1)
	var logs bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		addr := regexp.MustCompile(`msg="broker started".* addr=(\S+)`)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if m := addr.FindStringSubmatch(sc.Text()); m != nil {
				started <- m[1]
			}
		}
		close(started)
	}()
	select {
	case addr, ok := <-started:
		if !ok {
			t.Fatalf("the broker did not start")
		}
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		req := &wire.Request{Type: wire.RequestProduce, Produce: []wire.ProduceRequest{{Topic: "t", Messages: wire.NewMessageSet([]byte("m"))}}}
		if _, err := conn.Write(wire.AppendRequest(nil, req)); err != nil {
			t.Fatal(err)
		}
		wait.Within(t, 30*time.Second, "the log directory t-0", func() bool {
			_, err := os.Stat(filepath.Join(dir, "t-0"))
			return err == nil
		})
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not start within 30 s")
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, logs.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0", log.CleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker: %v\n%s", err, logs.String())
	}
}

// A read-only log.dir stops the command at start with exit status 1 and a
// message naming the directory and the cause (issue 11, case 1: it used to
// start and refuse every produce).
func TestReadOnlyLogDirExitsNonZero(t *testing.T) {
	dir := brokertest.MountTmpfs(t, 1<<20, true)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "KAFKA_SERVER_RUN_MAIN=1",
		"KAFKA_SERVER_ARGS=--log.dir="+dir+" --enable.zookeeper=false --hostname=127.0.0.1 --port=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "not writable") || !strings.Contains(stderr.String(), dir) {
		t.Fatalf("stderr does not name the cause:\n%s", stderr.String())
	}
}
