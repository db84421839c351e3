// Package e2e measures a replicated partition as a producer and a consumer
// see it: the producer's throughput with request.required.acks 1 or -1,
// the time from sending a message to its acknowledgement, and the time from
// sending it to a consumer polling the leader receiving it (end-to-end
// latency), at a fixed offered load or as fast as the producer can go.
// kafka-e2e-latency is its command, and the replication part of
// kafka-experiments runs it.
//
// Kreps 2014 ("Benchmarking Apache Kafka: 2 million writes per second on
// three cheap machines") reports 2 ms median and 3 ms 99th percentile end
// to end with three brokers and 3x replication; those are the anchors.
//
// It speaks the wire protocol itself (METADATA to find the leader,
// PRODUCE_ACKS, 0.7's FETCH and OFFSETS), so that one program measures
// every configuration the same way.
package e2e

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/broker/wire"
)

// Config is one measurement.
type Config struct {
	// Broker is any broker of the cluster, host:port; METADATA finds the
	// partition's leader.
	Broker string
	// Topic and Partition are the replicated partition.
	Topic     string
	Partition wire.Partition
	// Acks is request.required.acks: 1 (the leader appended) or -1 (every
	// in-sync replica has the messages).
	Acks int16
	// Rate is the offered load in messages per second; 0 sends as fast as
	// Connections closed loops allow.
	Rate float64
	// Duration is how long the producer sends.
	Duration time.Duration
	// MessageSize is the payload size in bytes (at least PayloadHeader).
	MessageSize int
	// Linger is, at a fixed rate, how often the producer sends the messages
	// due since its last request (one request each time).
	Linger time.Duration
	// BatchSize is, as fast as possible, the messages per request.
	BatchSize int
	// Connections is, as fast as possible, the number of producer
	// connections, each with one request in flight.
	Connections int
	// Consume starts a consumer polling the leader with 0.7's FETCH and
	// measures end-to-end latency.
	Consume bool
	// Poll is how long the consumer waits after a fetch that brought
	// nothing new (0.7's FETCH does not wait at the broker).
	Poll time.Duration
	// Timeout bounds one request and the consumer's wait for the last
	// messages.
	Timeout time.Duration
}

// DefaultConfig returns 200-byte messages, acks=1, 10,000 msg/s for 5 s,
// sent every millisecond, with a consumer polling every 100 µs.
func DefaultConfig() Config {
	return Config{Acks: wire.AcksLeader, Rate: 10_000, Duration: 5 * time.Second, MessageSize: 200,
		Linger: time.Millisecond, BatchSize: 50, Connections: 4, Consume: true, Poll: 100 * time.Microsecond,
		Timeout: 30 * time.Second}
}

// PayloadHeader is the bytes at the start of each payload: a run's random
// nonce (8) and the send time in Unix nanoseconds (8).
const PayloadHeader = 16

// Validate reports the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Broker == "":
		return errors.New("e2e: no broker (--broker-list)")
	case wire.ValidateTopic(c.Topic) != nil:
		return fmt.Errorf("e2e: %w", wire.ValidateTopic(c.Topic))
	case c.Acks != wire.AcksLeader && c.Acks != wire.AcksAll:
		return fmt.Errorf("e2e: request.required.acks=%d: want 1 or -1", c.Acks)
	case c.Rate < 0:
		return fmt.Errorf("e2e: rate %v must not be negative", c.Rate)
	case c.Duration <= 0:
		return fmt.Errorf("e2e: duration %v must be positive", c.Duration)
	case c.MessageSize < PayloadHeader || c.MessageSize > wire.DefaultMaxMessageSize:
		return fmt.Errorf("e2e: message size %d must be in [%d, %d]", c.MessageSize, PayloadHeader, wire.DefaultMaxMessageSize)
	case c.Rate > 0 && c.Linger <= 0:
		return fmt.Errorf("e2e: linger %v must be positive at a fixed rate", c.Linger)
	case c.Rate == 0 && (c.BatchSize < 1 || c.Connections < 1):
		return fmt.Errorf("e2e: batch size %d and connections %d must be at least 1", c.BatchSize, c.Connections)
	case c.Poll < 0 || c.Timeout <= 0:
		return fmt.Errorf("e2e: poll %v must not be negative and timeout %v must be positive", c.Poll, c.Timeout)
	}
	return nil
}

// Percentiles summarises latencies in milliseconds.
type Percentiles struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

// Summarize returns the percentiles of ds (sorted in place).
func Summarize(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		i := int(q * float64(len(ds)))
		if i >= len(ds) {
			i = len(ds) - 1
		}
		return float64(ds[i]) / 1e6
	}
	return Percentiles{N: len(ds), P50: at(0.5), P99: at(0.99), P999: at(0.999), Max: float64(ds[len(ds)-1]) / 1e6}
}

// Result is what one measurement found.
type Result struct {
	// Result is the producer's: messages acknowledged, payload bytes,
	// the sending time, the rate.
	perf.Result
	// Offered is the configured rate (0: as fast as possible).
	Offered float64 `json:"offered_msgs_per_sec"`
	// Leader is the broker the producer and consumer used.
	Leader wire.BrokerID `json:"leader"`
	// Ack is the time from sending a request to its acknowledgement, one
	// value per message.
	Ack Percentiles `json:"ack"`
	// EndToEnd is the time from sending a message to the consumer
	// receiving it (empty without Consume).
	EndToEnd Percentiles `json:"end_to_end"`
	// Received is how many of the acknowledged messages the consumer got.
	Received int64 `json:"received"`
}

// Run measures once.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	leader, addr, err := findLeader(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	r := &run{cfg: cfg, addr: addr, nonce: nonce}
	var cons *consumer
	if cfg.Consume {
		start, err := latestOffset(ctx, addr, cfg)
		if err != nil {
			return nil, err
		}
		cons = &consumer{run: r, offset: start, done: make(chan struct{})}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go cons.loop(cctx)
	}
	begin := time.Now()
	if cfg.Rate > 0 {
		err = r.produceAtRate(ctx)
	} else {
		err = r.produceClosedLoop(ctx)
	}
	elapsed := time.Since(begin)
	if err != nil {
		return nil, err
	}
	acked := r.acked.Load()
	res := &Result{Result: perf.NewResult(acked, acked*int64(cfg.MessageSize), elapsed.Seconds(), nil),
		Offered: cfg.Rate, Leader: leader}
	r.mu.Lock()
	res.Ack = Summarize(r.acks)
	r.mu.Unlock()
	if cons != nil {
		if err := cons.wait(ctx, acked, cfg.Timeout); err != nil {
			return nil, err
		}
		cons.mu.Lock()
		res.EndToEnd = Summarize(cons.lat)
		res.Received = int64(len(cons.lat))
		cons.mu.Unlock()
	}
	return res, nil
}
