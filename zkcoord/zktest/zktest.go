// Package zktest gives tests a real Apache ZooKeeper, the way net/http/httptest
// gives them a real HTTP server.
//
// Start(t) returns a zk.connect string with a private chroot
// ("127.0.0.1:2181/zktest/<test>-<random>") on a shared server, so that tests of
// many packages can run at once against one ZooKeeper without seeing each
// other's nodes; the chroot is deleted when the test ends.
//
// The shared server is the one named by the environment variable KAFKA_TEST_ZK
// (host:port), else 127.0.0.1:2181 (what `scripts/zookeeper.sh start` runs, and
// what CI starts). When KAFKA_TEST_ZK is unset and nothing answers on
// 127.0.0.1:2181, zktest starts a private server with scripts/zookeeper.sh on a
// free port in a temporary directory, shared by every test of the process and
// stopped when the process exits. A test never skips for want of a server:
// if no ZooKeeper can be reached or started, it fails (in CI, where the
// variable CI is set, too). Only -short skips it, on purpose: `make
// test-short` runs the tests that need no ZooKeeper.
//
// Like the rest of zkcoord, zktest is allowed to import github.com/go-zookeeper/zk.
package zktest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// EnvServer names the environment variable that points tests at a running
// ZooKeeper (host:port).
const EnvServer = "KAFKA_TEST_ZK"

// DefaultServer is where tests look for a shared ZooKeeper when EnvServer is unset.
const DefaultServer = "127.0.0.1:2181"

// Root is the parent of every test chroot on the shared server.
const Root = "/zktest"

const (
	// probeTimeout bounds the TCP probe of the default server.
	probeTimeout = time.Second
	// sessionWait bounds the wait for a first ZooKeeper session.
	sessionWait = 20 * time.Second
	// adminSessionTimeout is the session timeout of zktest's own connection.
	adminSessionTimeout = 20 * time.Second
)

var (
	sharedOnce sync.Once
	shared     *server
	sharedErr  error
)

// server is the ZooKeeper the process's tests share and zktest's own session on it.
type server struct {
	addr string
	conn *zk.Conn
	// started is true when zktest started the server itself.
	started bool
}

// Start returns a zk.connect string ("host:port/chroot") for a fresh, empty
// chroot on a real ZooKeeper. The chroot node itself is created (zkcoord would
// create it too) and is removed with everything below it when the test and its
// cleanups finish. Start fails the test when no ZooKeeper is available.
func Start(t testing.TB) string {
	t.Helper()
	skipShort(t)
	s, err := sharedServer()
	if err != nil {
		t.Fatalf("zktest: no ZooKeeper for the test: %v", err)
	}
	chroot := path.Join(Root, chrootName(t.Name()))
	if err := createAll(s.conn, chroot); err != nil {
		t.Fatalf("zktest: create chroot %s on %s: %v", chroot, s.addr, err)
	}
	t.Cleanup(func() {
		if err := deleteAll(s.conn, chroot); err != nil {
			t.Errorf("zktest: delete chroot %s on %s: %v", chroot, s.addr, err)
		}
	})
	return s.addr + chroot
}

// Server returns the host:port of the shared ZooKeeper, starting one if needed.
func Server(t testing.TB) string {
	t.Helper()
	skipShort(t)
	s, err := sharedServer()
	if err != nil {
		t.Fatalf("zktest: no ZooKeeper for the test: %v", err)
	}
	return s.addr
}

func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("zktest: needs a real ZooKeeper; skipped by -short")
	}
}

func sharedServer() (*server, error) {
	sharedOnce.Do(func() { shared, sharedErr = findServer() })
	return shared, sharedErr
}

func findServer() (*server, error) {
	if addr := os.Getenv(EnvServer); addr != "" {
		conn, err := connect(addr)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", EnvServer, addr, err)
		}
		return &server{addr: addr, conn: conn}, nil
	}
	if probe(DefaultServer) {
		conn, err := connect(DefaultServer)
		if err == nil {
			return &server{addr: DefaultServer, conn: conn}, nil
		}
		// Something answers on the default port but is not usable; start our own.
	}
	addr, err := startPrivate()
	if err != nil {
		msg := "nothing answers on " + DefaultServer + " and starting a private ZooKeeper failed"
		if os.Getenv("CI") != "" {
			msg += " (CI is set: CI must start ZooKeeper with scripts/zookeeper.sh start)"
		}
		return nil, fmt.Errorf("%s: %w", msg, err)
	}
	conn, err := connect(addr)
	if err != nil {
		return nil, fmt.Errorf("private ZooKeeper on %s: %w", addr, err)
	}
	return &server{addr: addr, conn: conn, started: true}, nil
}

func probe(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return false
	}
	return c.Close() == nil
}

// connect opens zktest's own session and waits until it is established.
func connect(addr string) (*zk.Conn, error) {
	established := make(chan struct{})
	var once sync.Once
	conn, _, err := zk.Connect([]string{addr}, adminSessionTimeout,
		zk.WithLogInfo(false),
		zk.WithLogger(quietLogger{}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				once.Do(func() { close(established) })
			}
		}))
	if err != nil {
		return nil, err
	}
	select {
	case <-established:
		return conn, nil
	case <-time.After(sessionWait):
		conn.Close()
		return nil, fmt.Errorf("no ZooKeeper session with %s within %v", addr, sessionWait)
	}
}

// quietLogger drops go-zookeeper's reconnection chatter from test output.
type quietLogger struct{}

// Printf drops the message.
func (quietLogger) Printf(string, ...any) {}

// startPrivate starts a ZooKeeper with scripts/zookeeper.sh on a free port in
// a temporary directory. A reaper process, holding the read end of a pipe
// whose write end only this process holds, stops the server and removes the
// directory when this process exits, however it exits.
func startPrivate() (string, error) {
	script, err := findScript()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "zktest-")
	if err != nil {
		return "", err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		cmd := exec.Command(script, "start", strconv.Itoa(port), dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			lastErr = fmt.Errorf("%s start %d %s: %v\n%s", script, port, dir, err, out)
			stop := exec.Command(script, "stop", strconv.Itoa(port), dir)
			_ = stop.Run() // best effort after a failed start; the start error is reported
			continue
		}
		if err := startReaper(script, port, dir); err != nil {
			stop := exec.Command(script, "stop", strconv.Itoa(port), dir)
			if serr := stop.Run(); serr != nil {
				err = errors.Join(err, serr)
			}
			return "", err
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
	}
	if rerr := os.RemoveAll(dir); rerr != nil {
		lastErr = errors.Join(lastErr, rerr)
	}
	return "", lastErr
}

// reaperWriter keeps the write end of the reaper's pipe open for the life of
// the process; it is never closed explicitly.
var reaperWriter *os.File

func startReaper(script string, port int, dir string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	sh := `read -r _ || true; "$0" stop "$1" "$2" >/dev/null 2>&1; rm -rf -- "$2"`
	cmd := exec.Command("/bin/sh", "-c", sh, script, strconv.Itoa(port), dir)
	cmd.Stdin = r
	// Its own process group: a ^C to the test run must not kill the reaper
	// before it has stopped the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return errors.Join(err, r.Close(), w.Close())
	}
	if err := r.Close(); err != nil {
		return err
	}
	reaperWriter = w
	// The reaper outlives this process by design; Release frees our handle
	// without waiting for it.
	return cmd.Process.Release()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// findScript locates scripts/zookeeper.sh: upwards from the working directory
// (go test runs in the package directory), then next to this source file.
func findScript() (string, error) {
	const rel = "scripts/zookeeper.sh"
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			p := filepath.Join(d, rel)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		p := filepath.Join(filepath.Dir(file), "..", "..", rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("cannot find " + rel + " above the working directory")
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// chrootName makes a node name from the test name and a random suffix.
func chrootName(testName string) string {
	name := unsafeChars.ReplaceAllString(testName, "_")
	name = strings.Trim(name, "._")
	if len(name) > 60 {
		name = name[:60]
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; fall back to the clock anyway.
		return fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	}
	return name + "-" + hex.EncodeToString(b[:])
}

func createAll(conn *zk.Conn, p string) error {
	cur := ""
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		cur += "/" + part
		_, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// deleteAll removes p and everything below it, retrying while other sessions
// still create or remove nodes under it.
func deleteAll(conn *zk.Conn, p string) error {
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = deleteTree(conn, p); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

func deleteTree(conn *zk.Conn, p string) error {
	children, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := deleteTree(conn, p+"/"+c); err != nil {
			return err
		}
	}
	err = conn.Delete(p, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}
