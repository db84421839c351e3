package group

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"
)

// variedPayloads returns n payloads of 1 B to 10 KiB, each starting with
// prefix and its index (so each is distinct), sizes drawn from seed.
func variedPayloads(prefix string, n int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([][]byte, n)
	for i := range out {
		p := fmt.Appendf(nil, "%s-%d", prefix, i)
		size := 1 + r.IntN(10<<10)
		for len(p) < size {
			p = append(p, byte('a'+len(p)%26))
		}
		out[i] = p
	}
	return out
}

// insideMessage returns a byte offset 5 bytes into message k of a log
// holding payloads from offset 0 (no message is shorter than
// wire.Overhead+1 bytes, so no message starts there).
func insideMessage(payloads [][]byte, k int) wire.Offset {
	return wire.Offset(len(wire.NewMessageSet(payloads[:k]...)) + 5)
}

// errReader reads every stream of c into col and keeps the first error
// other than ErrClosed that a stream returns.
type errReader struct {
	mu  sync.Mutex
	err error
}

func (r *errReader) start(t *testing.T, c *Consumer, topic string, col *collector) {
	t.Helper()
	var wg sync.WaitGroup
	for _, s := range c.Streams(topic) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := s.Next(context.Background())
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					r.mu.Lock()
					if r.err == nil {
						r.err = err
					}
					r.mu.Unlock()
					continue
				}
				col.add(string(m.Payload))
			}
		}()
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		wg.Wait()
	})
}

// check fails the test with the stream's error, if any.
func (r *errReader) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		t.Fatalf("a stream failed: %v", r.err)
	}
}

// testMisplacedPosition: a group whose committed offset of a partition
// lies inside a message (as after an unclean or high-watermark election
// truncated the log below it and other messages were written there) is
// refused InvalidMessage by the broker; it must reset by autooffset.reset,
// count it, and go on consuming. With smallest it reads the whole log
// again, with largest only what is written after the reset.
//
// Before the fix (w7-groupreset), a 0.7 partition was stopped: Next
// returned "offset N is not a message boundary" once and the partition was
// never fetched again; a replicated partition was stopped the same way by
// its leader fetcher (the fault suite saw its members poll the failure
// 173-225 times, 5,280 and 15,690 unseen). Either way this test failed
// with "a stream failed: ... is not a message boundary" and Resets 0.
func testMisplacedPosition(t *testing.T, replicated bool, reset string) {
	e := newEnv(t)
	topic := "m"
	bp := wire.BrokerPartition{Broker: 0, Partition: 0}
	first := variedPayloads("first", 60, 1)
	if replicated {
		ids := []wire.BrokerID{0, 1, 2}
		for _, id := range ids {
			e.startReplicaBroker(id)
		}
		e.createReplicated(topic, 1, ids)
		bp.Broker = zkcoord.ReplicatedBroker
		e.produceAcks(topic, 0, first)
	} else {
		e.startBroker(0, 1)
		e.produce(topic, 0, 1, first)
	}
	bad := insideMessage(first, 25)
	if err := zkcoord.GroupsOn(e.obs).CommitOffset("g", topic, bp, bad); err != nil {
		t.Fatal(err)
	}

	cfg := e.consumerConfig("g")
	cfg.AutoOffsetReset = reset
	c := e.start(cfg, map[string]int{topic: 1})
	col := newCollector()
	var r errReader
	r.start(t, c, topic, col)
	e.waitFor("the position reset", func() bool {
		r.check(t)
		return c.Resets().NotBoundary > 0
	})
	if got := c.Resets(); got != (Resets{NotBoundary: 1}) {
		t.Fatalf("Resets = %+v, want one NotBoundary", got)
	}

	second := variedPayloads("second", 40, 2)
	if replicated {
		e.produceAcks(topic, 0, second)
	} else {
		e.produce(topic, 0, 1, second)
	}
	want := second
	if reset == OffsetSmallest {
		want = append(append([][]byte{}, first...), second...)
	}
	e.waitFor("every message after the reset", func() bool {
		r.check(t)
		return col.has(want)
	})
	if reset == OffsetLargest {
		if d, _, _ := col.stats(first); d != 0 {
			t.Fatalf("%d messages written before a reset to the log end were delivered", d)
		}
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	end := wire.Offset(len(wire.NewMessageSet(first...)) + len(wire.NewMessageSet(second...)))
	e.waitFor("the log end committed", func() bool {
		off, ok, err := zkcoord.GroupsOn(e.obs).Offset("g", topic, bp)
		return err == nil && ok && off == end
	})
	r.check(t)
	if got := c.Resets(); got != (Resets{NotBoundary: 1}) {
		t.Fatalf("Resets = %+v after consuming, want one NotBoundary", got)
	}
}

func TestMisplacedPositionResetsSmallest(t *testing.T) {
	testMisplacedPosition(t, false, OffsetSmallest)
}

func TestMisplacedPositionResetsLargest(t *testing.T) {
	testMisplacedPosition(t, false, OffsetLargest)
}

func TestReplicatedMisplacedPositionResetsLargest(t *testing.T) {
	testMisplacedPosition(t, true, OffsetLargest)
}

func TestReplicatedMisplacedPositionResetsSmallest(t *testing.T) {
	testMisplacedPosition(t, true, OffsetSmallest)
}

// TestDamagedMessageStopsAfterOneReset: a position at a message whose bytes
// are damaged on disk is also refused InvalidMessage. With smallest, the
// reset reads the log again up to that message and is refused there once
// more: the partition must stop with the error (once), not read the log
// again and again. (Before the fix the partition stopped at the first
// refusal, with no reset and no message delivered.)
func TestDamagedMessageStopsAfterOneReset(t *testing.T) {
	e := newEnv(t)
	b := e.startBroker(0, 1)
	first := variedPayloads("first", 30, 3)
	e.produce("m", 0, 1, first)
	const k = 20
	at := wire.Offset(len(wire.NewMessageSet(first[:k]...)))
	segs, err := filepath.Glob(filepath.Join(b.Config.Log.Dir, "m-0", "*.kafka"))
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	f, err := os.OpenFile(segs[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The payload's first byte, so the message's CRC no longer matches.
	if _, err := f.WriteAt([]byte{'X'}, int64(at)+wire.Overhead); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	bp := wire.BrokerPartition{Broker: 0, Partition: 0}
	if err := zkcoord.GroupsOn(e.obs).CommitOffset("g", "m", bp, at); err != nil {
		t.Fatal(err)
	}
	c := e.start(e.consumerConfig("g"), map[string]int{"m": 1}) // smallest
	col := newCollector()
	var r errReader
	r.start(t, c, "m", col)
	e.waitFor("the partition stopped", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.err != nil
	})
	if !strings.Contains(r.err.Error(), "damaged") || !errors.Is(r.err, consumer.ErrNotBoundary) {
		t.Fatalf("error %v", r.err)
	}
	if got := c.Resets(); got != (Resets{NotBoundary: 1}) {
		t.Fatalf("Resets = %+v, want one NotBoundary", got)
	}
	e.waitFor("the messages before the damaged one", func() bool { return col.has(first[:k]) })
	if _, _, d := col.stats(first[:k]); d != 0 {
		t.Fatalf("%d messages delivered twice: the log was read again", d)
	}
}
