package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// fillDisk writes the file path until its file system is full (ENOSPC) and
// fails the test on any other outcome.
func fillDisk(t *testing.T, path string, limit int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	var werr error
	for n := int64(0); n <= limit && werr == nil; n += int64(len(chunk)) {
		_, werr = f.Write(chunk)
	}
	if err := f.Close(); err != nil && werr == nil {
		werr = err
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("filling %s: %v, want ENOSPC", path, werr)
	}
}

// TestFollowerOnAFullDiskRetriesWithoutTruncating: with
// replica.truncation=hw, a follower whose disk is full (log.ErrNoSpace: the
// log wrote nothing and stays writable) retries the fetch at the same offset
// and does not truncate again; 0.8's ReplicaFetcherThread truncated only on
// becoming a follower. The follower's HW lags its log end (the leader holds
// a fetch for replica.fetch.wait.max.ms, here long, before it tells the HW
// that fetch moved), so cutting to its own HW would leave an ISR member
// below the leader's HW with no leader change: StrongIsr broken. Once space
// is freed the follower catches up and holds the leader's bytes.
//
// Before the fix (fetcher.run set truncated = false after every append
// error) it failed in 0.4 s: "the follower truncated 4 times while its disk
// was full (to [22 22 22 22]; leader HW 44, 5 failed appends ...)": it cut
// m2 (log end 44) back to its own HW 22, below the leader's HW 44, while
// still in the ISR, and truncated again at every retry.
func TestFollowerOnAFullDiskRetriesWithoutTruncating(t *testing.T) {
	const leader, follower BrokerID = 0, 1
	const diskSize = 1 << 20
	disk := brokertest.MountTmpfs(t, diskSize, false)
	var logs brokertest.Buffer
	c := startCluster(t, 0, func(id int, cfg *broker.Config, rc *Config) {
		rc.Truncation = TruncateHW
		rc.LagTime = time.Minute        // no one leaves the ISR by lag
		rc.FetchWait = 10 * time.Second // the follower learns a moved HW late
		if BrokerID(id) == follower {
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)).With("broker", id)
		}
	})

	// Truncations by the follower once its disk is full, and where to.
	var (
		mu          sync.Mutex
		filled      bool
		truncations []Offset
	)
	hook := func(topic string, point Offset, _ <-chan struct{}) {
		mu.Lock()
		defer mu.Unlock()
		if topic == "full" && filled {
			truncations = append(truncations, point)
		}
	}
	truncatedHook.Store(&hook)
	t.Cleanup(func() { truncatedHook.Store(nil) })

	c.start(leader, t.TempDir())
	c.start(follower, filepath.Join(disk, "logs"))
	c.createTopic("full", zkcoord.Assignment{0: {leader, follower}})
	if got := c.waitLeader("full", 0, 2); got != leader {
		t.Fatalf("leader %d, want %d", got, leader)
	}
	lp, _ := c.brokers[leader].layerPartition("full", 0)
	fp, _ := c.brokers[follower].layerPartition("full", 0)
	addr := c.brokers[leader].b.Addr

	// m1 is copied (acks=all) and takes the first page of the follower's
	// segment; m2, appended after the disk filled, fits in that page's
	// rest; the big sets after it do not.
	m1, m2 := wire.NewMessageSet(msg(1)), wire.NewMessageSet(msg(2))
	if r := produce(t, addr, "full", 0, wire.AcksAll, m1); r.Code != wire.CodeNone {
		t.Fatalf("produce m1: %v", r.Code)
	}
	mu.Lock()
	filled = true
	mu.Unlock()
	start := len(logs.String())
	filler := filepath.Join(disk, "filler")
	fillDisk(t, filler, diskSize)
	t.Cleanup(func() {
		// Before the brokers stop (cleanups run last first), so that a
		// failed test's follower can still write its clean-shutdown marker.
		if err := os.Remove(filler); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Error(err)
		}
	})

	if r := produce(t, addr, "full", 0, wire.AcksLeader, m2); r.Code != wire.CodeNone {
		t.Fatalf("produce m2: %v", r.Code)
	}
	wait.Within(t, clusterTimeout, "the follower to append m2", func() bool { return fp.log.WrittenEnd() == Offset(len(m1)+len(m2)) })
	t.Logf("after m2: follower log end %d, HW %d; leader HW %d", fp.log.WrittenEnd(), fp.highWatermark(), lp.highWatermark())
	var big [][]byte
	for i := 0; i < 4; i++ {
		big = append(big, wire.NewMessageSet(append([]byte(fmt.Sprintf("big-%d.", i)), bytes.Repeat([]byte{'f'}, 32<<10)...)))
	}
	produceAll(t, addr, "full", 0, wire.AcksLeader, big, "acks=1 while the follower's disk is full")
	failed := func() int { return strings.Count(logs.String()[start:], "follower append failed") }
	wait.Within(t, clusterTimeout, "the follower's appends to fail 5 times on the full disk", func() bool { return failed() >= 5 })

	mu.Lock()
	got := append([]Offset(nil), truncations...)
	mu.Unlock()
	if len(got) > 0 {
		t.Fatalf("the follower truncated %d times while its disk was full (to %v; leader HW %d, %d failed appends, %d \"follower truncated\" lines)",
			len(got), got, lp.highWatermark(), failed(), strings.Count(logs.String()[start:], "follower truncated"))
	}
	if st, _ := c.state("full", 0); len(st.ISR) != 2 {
		t.Fatalf("ISR %v while the follower's disk is full, want both replicas", st.ISR)
	}
	c.checkStrongISR("full", 0)

	// Space is freed: the follower catches up with the same bytes.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	end := lp.log.WrittenEnd()
	wait.Within(t, clusterTimeout, "the follower to catch up once space is freed", func() bool { return fp.log.WrittenEnd() == end })
	if !bytes.Equal(logBytes(t, c.dirOf(follower), "full", 0, end), logBytes(t, c.dirOf(leader), "full", 0, end)) {
		t.Fatal("the follower's bytes differ from the leader's after it caught up")
	}
	c.checkStrongISR("full", 0)
}
