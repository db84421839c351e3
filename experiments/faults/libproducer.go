package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/experiments/faults/check"
	"github.com/netdb11/kafka/producer"
)

// Clients: which clients a replicated trial's workload runs
// (TrialConfig.Clients).
const (
	// ClientsWire: the harness's own wire client (client.go) only, as
	// before issue 23: one producer per partition that never retries, the
	// live reader, no library consumers.
	ClientsWire = "wire"
	// ClientsLibrary: the client libraries only: the producer library with
	// retries on, and the consumers (consumers.go).
	ClientsLibrary = "library"
	// ClientsBoth: both, side by side: per partition one wire producer
	// (ids 1..N) and one library producer (ids N+1..2N), and the
	// consumers. The default of a replicated trial.
	ClientsBoth = "both"
)

// Library producer settings: message.send.max.retries and retry.backoff.ms
// as users run them (0.8's defaults).
const (
	libRetries = 3
	libBackoff = 100 * time.Millisecond
)

// usesWire and usesLibrary tell which producers a workload runs.
func (w *workload) usesWire() bool { return w.clients != ClientsLibrary || !w.setup.Replicated() }
func (w *workload) usesLibrary() bool {
	return w.setup.Replicated() && (w.clients == ClientsLibrary || w.clients == ClientsBoth)
}

// clientsMeta names the producers in the history's meta event.
func (w *workload) clientsMeta() string {
	n := len(w.parts)
	var s []string
	if w.usesWire() {
		s = append(s, fmt.Sprintf("wire producers 1-%d", n))
	}
	if w.usesLibrary() {
		s = append(s, fmt.Sprintf("producer library (message.send.max.retries=%d, retry.backoff.ms=%d) producers %d-%d",
			libRetries, libBackoff.Milliseconds(), n+1, 2*n))
	}
	return strings.Join(s, ", ")
}

// libDial adapts the cluster's dialer (the client host's namespace) to the
// libraries' Config.Dial.
func (w *workload) libDial(ctx context.Context, _, addr string) (net.Conn, error) {
	return w.cl.Dial(ctx, addr)
}

// attempts hears the producer library's log for the causes of the attempts
// it retried ("producer: retrying"), so that a Send whose every attempt was
// refused (NotEnoughReplicas: nothing appended) is told from one where an
// earlier attempt may have appended.
type attempts struct {
	mu   sync.Mutex
	errs []error
}

func (a *attempts) Enabled(context.Context, slog.Level) bool { return true }
func (a *attempts) WithAttrs([]slog.Attr) slog.Handler       { return a }
func (a *attempts) WithGroup(string) slog.Handler            { return a }
func (a *attempts) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "producer: retrying" {
		return nil
	}
	r.Attrs(func(at slog.Attr) bool {
		if err, ok := at.Value.Any().(error); ok && at.Key == "err" {
			a.mu.Lock()
			a.errs = append(a.errs, err)
			a.mu.Unlock()
		}
		return true
	})
	return nil
}

// take returns the causes heard since the last take.
func (a *attempts) take() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	errs := a.errs
	a.errs = nil
	return errs
}

// newLibProducer is a producer library client of the trial's cluster:
// request.required.acks as the setup's, retries on, every connection made
// from the client host; its retries' causes go to heard.
func (w *workload) newLibProducer(heard *attempts) (*producer.Producer, error) {
	cfg := producer.DefaultConfig()
	var list []string
	for b := 1; b <= w.cl.cfg.Brokers; b++ {
		list = append(list, fmt.Sprintf("%d:%s", b, w.cl.BrokerAddr(b)))
	}
	cfg.BrokerList = strings.Join(list, ",")
	cfg.RequiredAcks = w.setup.wireAcks()
	cfg.MessageSendMaxRetries, cfg.RetryBackoff = libRetries, libBackoff
	cfg.RequestTimeout, cfg.SocketTimeout, cfg.ConnectTimeout = w.timeout, w.timeout, w.timeout
	cfg.TopicMetadataRefreshInterval = time.Second
	// The key is the partition's number: each library producer writes one
	// partition, as the wire producers do.
	cfg.Partitioner = producer.PartitionerFunc(func(key []byte, n int) int {
		p, err := strconv.Atoi(string(key))
		if err != nil {
			return -1
		}
		return p
	})
	cfg.Dial = w.libDial
	cfg.Logger = slog.New(heard)
	return producer.New(cfg)
}

// produceLib writes sequence-numbered messages to p as producer id through
// the producer library, batch by batch, every interval. The library
// retries (libRetries, libBackoff): a request whose answer was lost may be
// appended twice, and the checker reports the second copy as a duplicate.
// A send's outcome: ok when Send returned nil; failed (refused) when the
// leader answered NotEnoughReplicas to every attempt (it appends nothing
// then); unknown otherwise, since an attempt may have appended.
func (w *workload) produceLib(ctx context.Context, id int, p partition) {
	heard := &attempts{}
	pr, err := w.newLibProducer(heard)
	if err != nil {
		w.note("library producer %d: %v", id, err)
		return
	}
	defer pr.Close()
	seq := int64(0)
	sizes := rand.New(rand.NewPCG(uint64(w.seed), uint64(id)))
	key := []byte(strconv.Itoa(int(p.part)))
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ids, payloads, ok := w.nextBatch(id, p, &seq, sizes, 0)
		if !ok {
			return
		}
		msgs := make([]producer.Message, len(payloads))
		for i, v := range payloads {
			msgs[i] = producer.Message{Key: key, Value: v}
		}
		heard.take()
		err := pr.Send(ctx, p.topic, msgs...)
		done := time.Now()
		retried := heard.take()
		w.attempted(ids, 1+len(retried))
		// The retries' copies may be in the log too. Charged after the
		// fact: the budget's margin below the limit (two segments) covers
		// the last batch's.
		w.spend(p, int64(len(retried))*batchBytes(payloads))
		var pe *producer.ProduceError
		switch {
		case err == nil:
			w.settle(ids, check.OK, done, nil)
		case errors.As(err, &pe) && errors.Is(err, wire.ErrNotEnoughReplicas) && allRefused(retried, pe.Attempts):
			w.settle(ids, check.Failed, done, err)
			w.refuse(ids)
		default:
			w.settle(ids, check.Unknown, done, err)
		}
	}
}

// allRefused reports whether the n-1 retried attempts' causes (the last
// attempt's is the Send's error) were all NotEnoughReplicas.
func allRefused(retried []error, n int) bool {
	if len(retried) != n-1 {
		return false
	}
	for _, err := range retried {
		if !errors.Is(err, wire.ErrNotEnoughReplicas) {
			return false
		}
	}
	return true
}

// attempted records how many times the library sent ids (Event.Attempts).
func (w *workload) attempted(ids []check.ID, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if e := w.sends[id]; e != nil {
			e.Attempts = n
		}
	}
}
