package zktest

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestStartGivesPrivateChroots(t *testing.T) {
	skipShort(t)
	var first, second string
	t.Run("a", func(t *testing.T) {
		first = Start(t)
		second = Start(t)
		if first == second {
			t.Fatalf("two Start calls gave the same chroot %s", first)
		}
		for _, cs := range []string{first, second} {
			if !strings.Contains(cs, Root+"/") {
				t.Fatalf("Start = %q, want a chroot under %s", cs, Root)
			}
		}
		s, err := sharedServer()
		if err != nil {
			t.Fatal(err)
		}
		chroot := first[strings.IndexByte(first, '/'):]
		if _, err := s.conn.Create(chroot+"/child", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create in chroot: %v", err)
		}
	})
	// The subtest's cleanup removed both chroots.
	s, err := sharedServer()
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range []string{first, second} {
		ok, _, err := s.conn.Exists(cs[strings.IndexByte(cs, '/'):])
		if err != nil || ok {
			t.Fatalf("chroot of %s after the test: exists=%v err=%v", cs, ok, err)
		}
	}
}

// TestPrivateServerStopsWithProcess starts a private server from a child
// process (this test binary) and checks that the server stops and its
// directory goes when the child exits, however it exits.
func TestPrivateServerStopsWithProcess(t *testing.T) {
	if os.Getenv("ZKTEST_HELPER") == "1" {
		addr, err := startPrivate()
		if err != nil {
			t.Fatal(err)
		}
		conn, err := connect(addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create("/alive", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("ADDR " + addr + "\n")
		// Exit without any cleanup, as a killed test would.
		os.Exit(0)
	}
	skipShort(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrivateServerStopsWithProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "ZKTEST_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var addr string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			addr = a
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if addr == "" {
		t.Fatal("helper printed no address")
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // stopped
		}
		if cerr := c.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the private server on %s still runs 30 s after its process exited", addr)
		}
		<-tick.C
	}
}

func TestLink(t *testing.T) {
	l := NewLink()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := l.Dial("tcp", ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.Cut()
	if _, err := c.Write([]byte("x")); err == nil {
		t.Fatal("write on a cut connection succeeded")
	}
	if _, err := l.Dial("tcp", ln.Addr().String(), time.Second); !errors.Is(err, ErrCut) {
		t.Fatalf("Dial while cut = %v, want ErrCut", err)
	}
	l.Heal()
	c2, err := l.Dial("tcp", ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
}
