package group

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"
)

// recorder is a slog handler that keeps the records at WARN and above.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recs {
		if rec.Message == msg {
			n++
		}
	}
	return n
}

func (r *recorder) countContaining(part string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recs {
		if strings.Contains(rec.Message, part) {
			n++
		}
	}
	return n
}

// countingBroker counts the fetches made through it.
type countingBroker struct {
	Broker
	fetches *atomic.Int64
}

func (b countingBroker) MultiFetch(ctx context.Context, reqs ...consumer.FetchRequest) ([]consumer.MessageSet, error) {
	b.fetches.Add(1)
	return b.Broker.MultiFetch(ctx, reqs...)
}

// Issue 11, case 9: while a broker is down, a group consumer used to log two
// WARN lines per retry (every fetcher.backoff.ms); now the first failure is
// logged, then ever more rarely.
func TestFetchFailureLoggingBacksOff(t *testing.T) {
	e := newEnv(t)
	b := e.startBroker(0, 1)
	e.produce("t", 0, 1, payloads("m", 10))
	cfg := e.consumerConfig("g")
	cfg.FetcherBackoff = 5 * time.Millisecond
	rec := &recorder{}
	cfg.Logger = slog.New(rec)
	var fetches atomic.Int64
	cfg.DialBroker = func(addr string) (Broker, error) {
		scfg := consumer.DefaultConfig()
		scfg.Logger = cfg.Logger // as the group's own connections log
		sc, err := consumer.NewSimpleConsumer(addr, scfg)
		if err != nil {
			return nil, err
		}
		return countingBroker{Broker: sc, fetches: &fetches}, nil
	}
	c := e.start(cfg, map[string]int{"t": 1})
	s := c.Streams("t")[0]
	for range 10 {
		if _, err := s.Next(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// The broker goes down but stays registered (its ZooKeeper session
	// lives on): the fetcher keeps retrying.
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	base := fetches.Load()
	e.waitFor("50 failed fetches", func() bool { return fetches.Load() >= base+50 })
	if n := rec.count("fetch failed; retrying"); n < 1 || n > 3 {
		t.Fatalf("%d WARN lines for %d failed fetches, want 1 to 3", n, fetches.Load()-base)
	}
	if n := rec.count("consumer: request failed, reconnecting and retrying once"); n != 0 {
		t.Fatalf("%d WARN lines from the simple consumer's retry, want none", n)
	}
}

// Issue 11, case 6: a partition whose committed offset retention deleted
// restarts where autooffset.reset says, and the reset is logged at WARN
// with the bytes it skips.
func TestOffsetOutOfRangeFollowsAutoOffsetReset(t *testing.T) {
	for _, reset := range []string{OffsetSmallest, OffsetLargest} {
		t.Run(reset, func(t *testing.T) {
			e := newEnv(t)
			b := e.startBrokerWith(0, 1, func(c *broker.Config) {
				c.Log.FileSize, c.Log.RetentionSize, c.Log.CleanupInterval = 1000, 2000, 20*time.Millisecond
			})
			msgs := payloads("m", 200)
			for i := 0; i < len(msgs); i += 10 { // requests smaller than a segment, so segments roll
				e.produce("t", 0, 1, msgs[i:i+10])
			}
			b.Flush(t)
			sc, err := consumer.NewSimpleConsumer(b.Addr, consumer.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			var earliest, end wire.Offset
			e.waitFor("retention to delete the first segments", func() bool {
				lo, err1 := sc.OffsetsBefore(t.Context(), "t", 0, wire.EarliestTime, 1)
				hi, err2 := sc.OffsetsBefore(t.Context(), "t", 0, wire.LatestTime, 1)
				if err1 != nil || err2 != nil || len(lo) == 0 || len(hi) == 0 {
					return false
				}
				earliest, end = lo[0], hi[0]
				return earliest > 0
			})
			bp := wire.BrokerPartition{Broker: 0, Partition: 0}
			if err := zkcoord.GroupsOn(e.obs).CommitOffset("g", "t", bp, 0); err != nil {
				t.Fatal(err)
			}
			cfg := e.consumerConfig("g")
			cfg.AutoOffsetReset = reset
			rec := &recorder{}
			cfg.Logger = slog.New(rec)
			c := e.start(cfg, map[string]int{"t": 1})
			s := c.Streams("t")[0]
			size := wire.Offset(len(wire.AppendMessage(nil, msgs[0])))
			wantDeleted, wantSkipped := earliest, wire.Offset(0)
			if reset == OffsetSmallest {
				ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
				defer cancel()
				m, err := s.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if want := msgs[earliest/size]; string(m.Payload) != string(want) {
					t.Fatalf("first message %q, want %q, the earliest held", m.Payload, want)
				}
			} else {
				wantSkipped = end - earliest
				// After the reset to the log end, a new message is the first.
				e.waitFor("the reset", func() bool { return rec.countContaining("is out of range") > 0 })
				e.produce("t", 0, 1, [][]byte{[]byte("after")})
				ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
				defer cancel()
				m, err := s.Next(ctx)
				if err != nil || string(m.Payload) != "after" {
					t.Fatalf("first message %q, %v; want the one produced after the reset", m.Payload, err)
				}
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			var got []string
			for _, r := range rec.recs {
				if r.Level != slog.LevelWarn || !strings.Contains(r.Message, "is out of range") {
					continue
				}
				r.Attrs(func(a slog.Attr) bool {
					if a.Key == "deleted_bytes" || a.Key == "skipped_bytes" {
						got = append(got, fmt.Sprintf("%s=%v", a.Key, a.Value))
					}
					return true
				})
			}
			if want := fmt.Sprintf("[deleted_bytes=%d skipped_bytes=%d]", wantDeleted, wantSkipped); fmt.Sprint(got) != want {
				t.Fatalf("reset logged at WARN with %v, want %s", got, want)
			}
		})
	}
}
