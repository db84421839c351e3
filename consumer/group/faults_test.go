package group

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/consumer"
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
