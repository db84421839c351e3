package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperEnv selects a helper mode when the test binary is re-executed inside
// a host through Command.
const helperEnv = "TESTBED_HELPER"

// TestMain runs the helper when asked to; otherwise the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := runHelper(mode, os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runHelper: TCP programs to run inside hosts.
//
//	serve PORT     print "ready", then answer every connection with the peer's
//	               IP and print "accepted IP"
//	dial ADDR      connect, print the answer
//	sink PORT      print "ready", accept one connection, read to EOF,
//	               print "BYTES NANOS" timed from the first byte
//	send ADDR DUR  connect, write for DUR, close
func runHelper(mode string, args []string) error {
	switch {
	case mode == "serve" && len(args) == 1:
		ln, err := net.Listen("tcp", ":"+args[0])
		if err != nil {
			return err
		}
		fmt.Println("ready")
		for {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			fmt.Println("accepted", host)
			_, err = fmt.Fprintln(c, host)
			if cerr := c.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	case mode == "dial" && len(args) == 1:
		c, err := net.DialTimeout("tcp", args[0], 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		fmt.Print(line)
		return nil
	case mode == "sink" && len(args) == 1:
		ln, err := net.Listen("tcp", ":"+args[0])
		if err != nil {
			return err
		}
		fmt.Println("ready")
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		var n int64
		var start time.Time
		for {
			k, err := c.Read(buf)
			if n == 0 && k > 0 {
				start = time.Now()
			}
			n += int64(k)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
		}
		fmt.Println(n, time.Since(start).Nanoseconds())
		return nil
	case mode == "send" && len(args) == 2:
		d, err := time.ParseDuration(args[1])
		if err != nil {
			return err
		}
		c, err := net.Dial("tcp", args[0])
		if err != nil {
			return err
		}
		buf := make([]byte, 256<<10)
		for end := time.Now().Add(d); time.Now().Before(end); {
			if _, err := c.Write(buf); err != nil {
				c.Close()
				return err
			}
		}
		return c.Close()
	}
	return fmt.Errorf("bad helper call %s %q", mode, args)
}

// helper is a helper process started in a host, its output read line by line.
type helper struct {
	cmd    *exec.Cmd
	lines  chan string
	done   chan struct{}
	err    error // valid after done is closed
	stderr strings.Builder
}

// startHelper runs the test binary in mode inside host. The process is
// killed and waited for at the end of the test.
func startHelper(t *testing.T, tb *Testbed, host, mode string, args ...string) *helper {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := tb.Command(ctx, host, exe, args...)
	cmd.Env = append(cmd.Env, helperEnv+"="+mode)
	h := &helper{cmd: cmd, lines: make(chan string, 16), done: make(chan struct{})}
	cmd.Stderr = &h.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(h.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
		h.err = cmd.Wait()
	}()
	t.Cleanup(func() {
		cancel()
		<-h.done
	})
	return h
}

// line waits for the helper's next output line.
func (h *helper) line(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			<-h.done
			t.Fatalf("helper %v exited without output: %v: %s", h.cmd.Args, h.err, h.stderr.String())
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("helper %v: no output within %v", h.cmd.Args, timeout)
	}
	return ""
}

// wait waits for the helper to exit and returns its error.
func (h *helper) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-h.done:
		if h.err != nil {
			return fmt.Errorf("%w: %s", h.err, h.stderr.String())
		}
		return nil
	case <-time.After(timeout):
		t.Fatalf("helper %v still running after %v", h.cmd.Args, timeout)
	}
	return nil
}

// sinkResult parses the sink's "BYTES NANOS" line.
func sinkResult(t *testing.T, line string) (int64, time.Duration) {
	t.Helper()
	f := strings.Fields(line)
	if len(f) != 2 {
		t.Fatalf("sink printed %q", line)
	}
	n, err1 := strconv.ParseInt(f[0], 10, 64)
	ns, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || ns <= 0 {
		t.Fatalf("sink printed %q", line)
	}
	return n, time.Duration(ns)
}
