package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/brokertest"
	"golang.org/x/sys/unix"
)

// buildTools builds the console tools into a temporary directory.
func buildTools(t *testing.T) string {
	t.Helper()
	return brokertest.Build(t,
		"github.com/netdb11/kafka/producer/cmd/kafka-console-producer",
		"github.com/netdb11/kafka/consumer/cmd/kafka-console-consumer")
}

func runTool(t *testing.T, bin string, stdin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\n%s", filepath.Base(bin), args, err, stderr.String())
	}
	return stdout.String()
}

func TestConsoleProducerAndConsumer(t *testing.T) {
	dir := buildTools(t)
	prod, cons := filepath.Join(dir, "kafka-console-producer"), filepath.Join(dir, "kafka-console-consumer")
	b := brokertest.Start(t, brokertest.Config())
	brokers := "--broker-list=0:" + b.Addr
	var want []string
	for i, args := range [][]string{
		{},                                    // async, batch.size 200
		{"--sync", "--batch-size=3"},          // lines at hand, 3 per request
		{"--compression-codec=1"},             // gzip
		{"--sync", "--compression-codec=2"},   // snappy
		{"--batch-size=2", "--queue-time=1h"}, // batches, then the rest at EOF
	} {
		var in strings.Builder
		for j := range 7 {
			line := fmt.Sprintf("run %d line %d %s", i, j, strings.Repeat("x", j*10))
			want = append(want, line)
			in.WriteString(line + "\n")
		}
		in.WriteString("last line without newline, with CR\r\n")
		want = append(want, "last line without newline, with CR")
		runTool(t, prod, in.String(), append(args, brokers, "--topic=console")...)
	}
	out := runTool(t, cons, "", brokers, "--topic=console", "--from-beginning", fmt.Sprintf("--max-messages=%d", len(want)))
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("consumed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// --offset: skip the first message ("run 0 line 0 ": 13 bytes + 9).
	out = runTool(t, cons, "", brokers, "--topic=console", "--offset=22", "--max-messages=2")
	if out != want[1]+"\n"+want[2]+"\n" {
		t.Errorf("--offset=22 gave %q", out)
	}
	// --timeout: stop at the end of the log.
	out = runTool(t, cons, "", brokers, "--topic=console", "--from-beginning", "--timeout=200ms")
	if n := strings.Count(out, "\n"); n != len(want) {
		t.Errorf("--timeout read %d messages, want %d", n, len(want))
	}
}

func TestConsoleToolsFollowAndStopOnSignal(t *testing.T) {
	dir := buildTools(t)
	b := brokertest.Start(t, brokertest.Config())
	brokers := "--broker-list=0:" + b.Addr

	// A consumer following the log from its start: it may start after the
	// first lines are in (a consumer starting at the log end would miss them).
	cons := exec.Command(filepath.Join(dir, "kafka-console-consumer"), brokers, "--topic=follow", "--offset=0", "--backoff=5ms")
	consOut, err := cons.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var consErr bytes.Buffer
	cons.Stderr = &consErr
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(consOut)
		for s.Scan() {
			lines <- s.Text()
		}
	}()

	// An interactive producer, with batches of 2 and an hour of queue.time.
	prod := exec.Command(filepath.Join(dir, "kafka-console-producer"), brokers, "--topic=follow",
		"--batch-size=2", "--queue-time=1h")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	prod.Stdin = r
	var prodErr bytes.Buffer
	prod.Stderr = &prodErr
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	expect := func(want ...string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for _, m := range want {
			select {
			case l, ok := <-lines:
				if !ok || l != m {
					t.Fatalf("consumer printed %q, %v; want %q\n%s", l, ok, m, consErr.String())
				}
			case <-timeout:
				t.Fatalf("consumer did not print %q", m)
			}
		}
	}
	// A full batch goes at once; it also shows the producer is running.
	if _, err := io.WriteString(w, "m0\nm1\n"); err != nil {
		t.Fatal(err)
	}
	expect("m0", "m1")
	// A lone line waits for queue.time, or for the producer to stop: once
	// the producer has read it (the pipe is empty), SIGINT must send it.
	if _, err := io.WriteString(w, "m2\n"); err != nil {
		t.Fatal(err)
	}
	wait.Within(t, 10*time.Second, "the producer to read all of its input", func() bool {
		n, err := unix.IoctlGetInt(int(w.Fd()), unix.TIOCINQ) // FIONREAD
		return err == nil && n == 0
	})
	if err := prod.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := prod.Wait(); err != nil {
		t.Fatalf("producer after SIGINT: %v\n%s", err, prodErr.String())
	}
	expect("m2")
	if err := cons.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cons.Wait(); err != nil {
		t.Errorf("consumer after SIGTERM: %v\n%s", err, consErr.String())
	}
}

func TestConsoleToolsHelpAndErrors(t *testing.T) {
	dir := buildTools(t)
	for _, tool := range []string{"kafka-console-producer", "kafka-console-consumer"} {
		out, err := exec.Command(filepath.Join(dir, tool), "--help").CombinedOutput()
		if err != nil {
			t.Errorf("%s --help: %v", tool, err)
		}
		for _, flag := range []string{"--broker-list", "--topic"} {
			if !strings.Contains(string(out), flag) {
				t.Errorf("%s --help does not describe %s", tool, flag)
			}
		}
		out, err = exec.Command(filepath.Join(dir, tool)).CombinedOutput()
		if err == nil || !regexp.MustCompile(`--broker-list.* required`).Match(out) {
			t.Errorf("%s without flags: %v, %s", tool, err, out)
		}
	}
	out, err := exec.Command(filepath.Join(dir, "kafka-console-consumer"), "--broker-list=0:h:1", "--topic=t",
		"--from-beginning", "--offset=5").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "exclude each other") {
		t.Errorf("--from-beginning with --offset: %v, %s", err, out)
	}
}

// Issue 11, cases 1 and 2: a console producer whose lines the broker
// refuses used to exit 0 (sync) or print one line about one batch (async);
// now it exits 1 with one summary line counting every line not delivered.
func TestConsoleProducerReportsLoss(t *testing.T) {
	dir := buildTools(t)
	prod := filepath.Join(dir, "kafka-console-producer")
	cfg := brokertest.Config()
	cfg.Log.MaxMessageSize = 100
	b := brokertest.Start(t, cfg)
	var in strings.Builder
	for i := range 11 {
		if i == 5 {
			in.WriteString(strings.Repeat("L", 150) + "\n") // over the broker's limit, not the tool's
			continue
		}
		fmt.Fprintf(&in, "line %d\n", i)
	}
	for _, args := range [][]string{{"--sync"}, {}} {
		cmd := exec.Command(prod, append(args, "--broker-list=0:"+b.Addr, "--topic=refused", "--max-message-size=1000")...)
		cmd.Stdin = strings.NewReader(in.String())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("%v: exit %v, want status 1; stderr:\n%s", args, err, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "11 of 11 messages not delivered") || !strings.Contains(lines[0], "topic refused") && len(args) > 0 {
			t.Fatalf("%v: stderr %q, want one line: 11 of 11 messages not delivered, naming the topic", args, stderr.String())
		}
	}
}
