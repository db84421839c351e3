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
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
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

// run is the producer side of one measurement.
type run struct {
	cfg   Config
	addr  string
	nonce [8]byte
	acked atomic.Int64

	mu   sync.Mutex
	acks []time.Duration // guarded by mu
}

// set builds a message set of n messages stamped with now.
func (r *run) set(dst []byte, n int, now time.Time) []byte {
	payload := make([]byte, r.cfg.MessageSize)
	copy(payload, r.nonce[:])
	binary.BigEndian.PutUint64(payload[8:], uint64(now.UnixNano()))
	for i := PayloadHeader; i < len(payload); i++ {
		payload[i] = 'a' + byte(i%26)
	}
	for range n {
		dst = wire.AppendMessage(dst, payload)
	}
	return dst
}

func (r *run) frame(set []byte) []byte {
	return wire.AppendProduceAcksRequest(nil, &wire.ProduceAcksRequest{Acks: r.cfg.Acks,
		TimeoutMs: int32(r.cfg.Timeout / time.Millisecond),
		Parts:     []wire.ProduceRequest{{Topic: r.cfg.Topic, Partition: r.cfg.Partition, Messages: set}}})
}

// record checks a PRODUCE_ACKS response and records its latency for n
// messages.
func (r *run) record(body []byte, n int, d time.Duration) error {
	rs, err := wire.DecodeProduceAcksResponse(body)
	if err != nil {
		return fmt.Errorf("e2e: produce response: %w", err)
	}
	if len(rs) != 1 || rs[0].Code != wire.CodeNone {
		return fmt.Errorf("e2e: produce refused: %v", rs)
	}
	r.acked.Add(int64(n))
	r.mu.Lock()
	for range n {
		r.acks = append(r.acks, d)
	}
	r.mu.Unlock()
	return nil
}

// produceAtRate sends, every Linger, the messages due at the offered rate
// since the start, in one request, on one connection; a second goroutine
// reads the acknowledgements, which come in order.
func (r *run) produceAtRate(ctx context.Context) error {
	nc, err := dial(ctx, r.addr, r.cfg.Timeout)
	if err != nil {
		return err
	}
	defer nc.Close()
	type inflight struct {
		n    int
		sent time.Time
	}
	pending := make(chan inflight, 1<<16)
	readErr := make(chan error, 1)
	go func() {
		defer close(readErr)
		rd := &reader{nc: nc}
		for f := range pending {
			_ = nc.SetReadDeadline(time.Now().Add(r.cfg.Timeout))
			code, body, err := rd.read()
			if err == nil && code != wire.CodeNone {
				err = fmt.Errorf("e2e: produce: %w", code.Err())
			}
			if err == nil {
				err = r.record(body, f.n, time.Since(f.sent))
			}
			if err != nil {
				readErr <- err
				nc.Close()
				for range pending {
				}
				return
			}
		}
	}()
	t := time.NewTicker(r.cfg.Linger)
	defer t.Stop()
	start := time.Now()
	var sent int64
	var sendErr error
	var buf []byte
loop:
	for {
		select {
		case <-ctx.Done():
			sendErr = ctx.Err()
			break loop
		case err := <-readErr:
			sendErr = err
			break loop
		case now := <-t.C:
			el := now.Sub(start)
			if el >= r.cfg.Duration {
				el = r.cfg.Duration
			}
			due := int64(r.cfg.Rate*el.Seconds()) - sent
			for due > 0 {
				n := int(min(due, 1000))
				now := time.Now()
				buf = r.frame(r.set(buf[:0], n, now))
				_ = nc.SetWriteDeadline(now.Add(r.cfg.Timeout))
				if _, err := nc.Write(buf); err != nil {
					sendErr = fmt.Errorf("e2e: produce: %w", err)
					break loop
				}
				pending <- inflight{n, now}
				sent += int64(n)
				due -= int64(n)
			}
			if el >= r.cfg.Duration {
				break loop
			}
		}
	}
	close(pending)
	if err := <-readErr; err != nil && sendErr == nil {
		sendErr = err
	}
	return sendErr
}

// produceClosedLoop runs Connections connections, each sending BatchSize
// messages and waiting for the acknowledgement, for Duration.
func (r *run) produceClosedLoop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Duration)
	defer cancel()
	errs := make([]error, r.cfg.Connections)
	var wg sync.WaitGroup
	for i := range r.cfg.Connections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := dial(ctx, r.addr, r.cfg.Timeout)
			if err != nil {
				errs[i] = err
				return
			}
			defer nc.Close()
			rd := &reader{nc: nc}
			var buf []byte
			for ctx.Err() == nil {
				now := time.Now()
				buf = r.frame(r.set(buf[:0], r.cfg.BatchSize, now))
				code, body, err := rd.roundTrip(buf, now.Add(r.cfg.Timeout))
				if err == nil && code != wire.CodeNone {
					err = fmt.Errorf("e2e: produce: %w", code.Err())
				}
				if err == nil {
					err = r.record(body, r.cfg.BatchSize, time.Since(now))
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// consumer polls the leader with 0.7's FETCH and records, for each message
// of this run, the time since it was sent.
type consumer struct {
	run    *run
	offset wire.Offset
	done   chan struct{} // closed when loop ends

	mu  sync.Mutex
	lat []time.Duration // guarded by mu
	err error           // guarded by mu: why loop ended early
}

func (c *consumer) loop(ctx context.Context) {
	defer close(c.done)
	fail := func(err error) {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
	}
	nc, err := dial(ctx, c.run.addr, c.run.cfg.Timeout)
	if err != nil {
		fail(err)
		return
	}
	defer nc.Close()
	go func() { <-ctx.Done(); nc.Close() }()
	rd := &reader{nc: nc}
	var req []byte
	for ctx.Err() == nil {
		req = wire.AppendRequest(req[:0], &wire.Request{Type: wire.RequestFetch, Fetch: []wire.FetchRequest{{
			Topic: c.run.cfg.Topic, Partition: c.run.cfg.Partition, Offset: c.offset, MaxSize: 1 << 20}}})
		code, body, err := rd.roundTrip(req, time.Now().Add(c.run.cfg.Timeout))
		if err == nil && code != wire.CodeNone {
			err = fmt.Errorf("e2e: fetch at %d: %w", c.offset, code.Err())
		}
		if err != nil {
			if ctx.Err() == nil {
				fail(err)
			}
			return
		}
		now := time.Now()
		it := wire.NewIterator(body, c.offset)
		got := 0
		c.mu.Lock()
		for it.Next() {
			p := it.Message().Payload
			if len(p) >= PayloadHeader && [8]byte(p[:8]) == c.run.nonce {
				sent := time.Unix(0, int64(binary.BigEndian.Uint64(p[8:])))
				c.lat = append(c.lat, now.Sub(sent))
			}
			c.offset = it.NextOffset()
			got++
		}
		c.mu.Unlock()
		if err := it.Err(); err != nil {
			fail(fmt.Errorf("e2e: fetched messages: %w", err))
			return
		}
		if got == 0 && c.run.cfg.Poll > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(c.run.cfg.Poll):
			}
		}
	}
}

// wait waits until the consumer has received n messages of this run.
func (c *consumer) wait(ctx context.Context, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		got, err := int64(len(c.lat)), c.err
		c.mu.Unlock()
		switch {
		case err != nil:
			return err
		case got >= n:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("e2e: the consumer received %d of %d acknowledged messages within %v", got, n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	return nc, nil
}

// reader reads responses (size, error code, body) from one connection into
// a reused buffer.
type reader struct {
	nc   net.Conn
	resp wire.ResponseReader
}

// maxResponse bounds a response (a 1 MiB fetch and its header).
const maxResponse = 2 << 20

// read reads the next response; more requests may be in flight.
func (r *reader) read() (wire.ErrorCode, []byte, error) {
	code, body, err := r.resp.ReadResponse(r.nc, maxResponse)
	if err != nil {
		return 0, nil, fmt.Errorf("e2e: %w", err)
	}
	return code, body, nil
}

// roundTrip sends one request, the only one in flight, and reads its
// response, both before deadline.
func (r *reader) roundTrip(frame []byte, deadline time.Time) (wire.ErrorCode, []byte, error) {
	code, body, err := r.resp.RoundTrip(r.nc, frame, deadline, maxResponse)
	if err != nil {
		return 0, nil, fmt.Errorf("e2e: %w", err)
	}
	return code, body, nil
}

// roundTrip sends one request on a fresh connection.
func roundTrip(ctx context.Context, addr string, frame []byte, timeout time.Duration) (wire.ErrorCode, []byte, error) {
	nc, err := dial(ctx, addr, timeout)
	if err != nil {
		return 0, nil, err
	}
	defer nc.Close()
	rd := &reader{nc: nc}
	return rd.roundTrip(frame, time.Now().Add(timeout))
}

// findLeader asks the broker for the partition's leader, until one is
// there or the timeout passes.
func findLeader(ctx context.Context, cfg Config) (wire.BrokerID, string, error) {
	deadline := time.Now().Add(cfg.Timeout)
	for {
		id, addr, err := leaderOnce(ctx, cfg)
		if err == nil || time.Now().After(deadline) {
			return id, addr, err
		}
		select {
		case <-ctx.Done():
			return 0, "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func leaderOnce(ctx context.Context, cfg Config) (wire.BrokerID, string, error) {
	code, body, err := roundTrip(ctx, cfg.Broker, wire.AppendMetadataRequest(nil, &wire.MetadataRequest{Topics: []string{cfg.Topic}}), cfg.Timeout)
	if err != nil {
		return 0, "", err
	}
	if code != wire.CodeNone {
		return 0, "", fmt.Errorf("e2e: metadata: %w", code.Err())
	}
	md, err := wire.DecodeMetadataResponse(body)
	if err != nil {
		return 0, "", fmt.Errorf("e2e: metadata: %w", err)
	}
	for _, t := range md.Topics {
		if t.Topic != cfg.Topic {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition != cfg.Partition || p.Code != wire.CodeNone || p.Leader < 0 {
				continue
			}
			for _, b := range md.Brokers {
				if b.ID == p.Leader {
					addr := net.JoinHostPort(b.Host, fmt.Sprint(b.Port))
					return b.ID, addr, leads(ctx, addr, cfg)
				}
			}
		}
	}
	return 0, "", fmt.Errorf("e2e: %s-%d has no live leader yet", cfg.Topic, cfg.Partition)
}

// leads checks that the broker at addr has taken the leadership the
// metadata names: metadata is read from ZooKeeper, where the controller
// writes a new leader before its LEADER_AND_ISR reaches that broker, which
// until then refuses produce requests. OFFSETS changes nothing and is
// refused (NotLeaderForPartition) by a broker that does not lead the
// partition; it is a client's request, served on the client port (the
// cluster's own, such as OFFSET_FOR_LEADER_EPOCH, are not).
func leads(ctx context.Context, addr string, cfg Config) error {
	_, err := latestOffset(ctx, addr, cfg)
	if err != nil {
		return fmt.Errorf("e2e: %s-%d at %s: %w", cfg.Topic, cfg.Partition, addr, err)
	}
	return nil
}

// latestOffset asks the leader where its consumers' view ends now.
func latestOffset(ctx context.Context, addr string, cfg Config) (wire.Offset, error) {
	code, body, err := roundTrip(ctx, addr, wire.AppendRequest(nil, &wire.Request{Type: wire.RequestOffsets,
		Offsets: &wire.OffsetsRequest{Topic: cfg.Topic, Partition: cfg.Partition, Time: wire.LatestTime, MaxOffsets: 1}}), cfg.Timeout)
	if err != nil {
		return 0, err
	}
	if code != wire.CodeNone {
		return 0, fmt.Errorf("e2e: offsets: %w", code.Err())
	}
	offs, err := wire.DecodeOffsetsResponse(body)
	if err != nil {
		return 0, fmt.Errorf("e2e: offsets: %w", err)
	}
	if len(offs) == 0 {
		return 0, nil
	}
	return offs[0], nil
}
