package broker_test

// Tests of the faults found under adversarial use (issue 11), each
// reproducing its case against a real broker on 127.0.0.1.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// tryProduce sends a PRODUCE and an OFFSETS request on a new connection and
// reports whether the broker took the PRODUCE: it handles a connection's
// requests in order and closes it instead of appending a set it could not
// store, so the OFFSETS answer arrives only after a successful append.
func tryProduce(t *testing.T, b *brokertest.Broker, topic string, set []byte) error {
	t.Helper()
	c, err := net.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	req := wire.AppendRequest(nil, &wire.Request{Type: wire.RequestProduce, Produce: []wire.ProduceRequest{{Topic: topic, Partition: 0, Messages: set}}})
	req = wire.AppendRequest(req, &wire.Request{Type: wire.RequestOffsets, Offsets: &wire.OffsetsRequest{Topic: topic, Partition: 0, Time: wire.LatestTime, MaxOffsets: 1}})
	if _, err := c.Write(req); err != nil {
		return err
	}
	var hdr [6]byte
	_, err = c.Read(hdr[:])
	return err
}

// Case 1: a read-only log.dir is refused at start with a clear error (the
// broker used to start and log "read-only file system" for every produce).
func TestReadOnlyLogDirRefusedAtStart(t *testing.T) {
	cfg := brokertest.Config()
	cfg.Log.Dir = brokertest.MountTmpfs(t, 1<<20, true)
	cfg.Hostname = "127.0.0.1"
	cfg.Port = 0
	b, err := broker.New(cfg)
	if err == nil {
		b.Run(canceled())
		t.Fatal("broker started on a read-only log.dir")
	}
	if !errors.Is(err, log.ErrNotWritable) || !strings.Contains(err.Error(), cfg.Log.Dir) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("error %q: want ErrNotWritable naming %s and the cause", err, cfg.Log.Dir)
	}
}

// Case 4: a full disk refuses the append that does not fit (the connection
// is closed and the log line names the cause), keeps every complete
// message, and takes appends again once space is freed, without a restart;
// the shutdown is clean.
func TestDiskFullThenSpaceFreed(t *testing.T) {
	dir := brokertest.MountTmpfs(t, 2<<20, false)
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs brokertest.Buffer
	cfg := brokertest.Config()
	cfg.Log.Dir = filepath.Join(dir, "logs")
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	b := brokertest.Start(t, cfg)

	var stored []byte
	full := false
	for i := 0; i < 100 && !full; i++ {
		set := messages(500, fmt.Sprint(i)) // about 60 KB
		if err := tryProduce(t, b, "full", set); err != nil {
			full = true
			continue
		}
		stored = append(stored, set...)
	}
	if !full {
		t.Fatal("the 2 MB file system never filled up")
	}
	if !strings.Contains(logs.String(), "no space left on device") {
		t.Fatalf("no log line names the cause:\n%s", logs.String())
	}
	b.Flush(t)
	c := dial(t, b)
	if code, body := c.fetch("full", 0, 0, 4<<20); code != wire.CodeNone || !bytes.Equal(body, stored) {
		t.Fatalf("after the disk filled: code %v, %d bytes, want the %d bytes taken", code, len(body), len(stored))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	more := messages(10, "after")
	if err := tryProduce(t, b, "full", more); err != nil {
		t.Fatalf("produce once space is back: %v", err)
	}
	stored = append(stored, more...)
	b.Flush(t)
	if code, body := c.fetch("full", 0, 0, 4<<20); code != wire.CodeNone || !bytes.Equal(body, stored) {
		t.Fatalf("after space was freed: code %v, %d bytes, want %d", code, len(body), len(stored))
	}
	if err := b.Stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if !strings.Contains(logs.String(), "clean=true") {
		t.Fatalf("shutdown not reported clean:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(cfg.Log.Dir, "full-0", log.CleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}
}

// Case 5: a second broker on the same log.dir refuses to start and names
// the holder; once the first has stopped, it starts.
func TestSecondBrokerOnSameLogDirRefused(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	cfg := b.Config
	cfg.Port = 0
	second, err := broker.New(cfg)
	if err == nil {
		second.Run(canceled())
		t.Fatal("a second broker started on the same log.dir")
	}
	if !errors.Is(err, log.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid=%d", os.Getpid())) {
		t.Fatalf("error %q: want ErrLocked naming pid=%d", err, os.Getpid())
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	brokertest.Start(t, cfg)
}

// Case 7: messages stored under a larger max.message.size survive a crash
// recovery under a smaller one (they used to be truncated as a torn tail).
func TestRecoveryKeepsMessagesAfterLoweringMaxMessageSize(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	c := dial(t, b)
	var want []byte
	for i := range 20 {
		set := wire.NewMessageSet(bytes.Repeat([]byte{byte(i)}, 5000))
		c.produce("big", 0, set)
		want = append(want, set...)
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	// As after a crash: no clean-shutdown marker.
	if err := os.Remove(filepath.Join(b.Config.Log.Dir, "big-0", log.CleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
	cfg := b.Config
	cfg.Port = 0
	cfg.Log.MaxMessageSize = 1000
	b2 := brokertest.Start(t, cfg)
	if code, body := dial(t, b2).fetch("big", 0, 0, 1<<20); code != wire.CodeNone || !bytes.Equal(body, want) {
		t.Fatalf("after recovery: code %v, %d bytes, want %d", code, len(body), len(want))
	}
}

// Case 9: bytes added to a segment after a clean shutdown no longer hide
// behind the marker: the log is recovered, and new messages follow the
// last valid one.
func TestMarkerMismatchRecovers(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	c := dial(t, b)
	set := messages(5, "a")
	c.produce("m", 0, set)
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(b.Config.Log.Dir, "m-0", wire.SegmentName(0))
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0, 0, 0, 50, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := b.Config
	cfg.Port = 0
	b2 := brokertest.Start(t, cfg)
	c2 := dial(t, b2)
	more := messages(3, "b")
	c2.produce("m", 0, more)
	if code, body := c2.fetch("m", 0, 0, 1<<20); code != wire.CodeNone || !bytes.Equal(body, append(set, more...)) {
		t.Fatalf("code %v, %d bytes, want %d", code, len(body), len(set)+len(more))
	}
}

// Case 9: a FETCH at an offset inside a message gets InvalidMessage (code
// 2), not bytes from the middle of a message.
func TestFetchAtNonBoundaryOffset(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	c := dial(t, b)
	set := messages(5, "a")
	c.produce("nb", 0, set)
	first := wire.Offset(len(messages(1, "a")))
	for _, off := range []wire.Offset{1, 3, first - 1, first + 2} {
		if code, body := c.fetch("nb", 0, off, 1<<20); code != wire.CodeInvalidMessage || len(body) != 0 {
			t.Fatalf("fetch at %d: code %v, %d bytes; want InvalidMessage, none", off, code, len(body))
		}
	}
	for _, off := range []wire.Offset{0, first} {
		if code, body := c.fetch("nb", 0, off, 1<<20); code != wire.CodeNone || !bytes.Equal(body, set[off:]) {
			t.Fatalf("fetch at boundary %d: code %v, %d bytes", off, code, len(body))
		}
	}
}

// canceled returns a context that is already done: Run on it releases what
// New took and returns.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
