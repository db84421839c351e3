// Package rabbitperf drives RabbitMQ through its own Go client
// (github.com/rabbitmq/amqp091-go) for the paper's producer and consumer tests
// (paper §5): one producer sending persistent 200-byte messages to a durable queue
// one message per publish without waiting for acknowledgements, optionally grouped
// into AMQP transactions; one consumer with a prefetch window and automatic
// acknowledgement.
package rabbitperf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/netdb11/kafka/broker/cli/perf"
)

// Config describes one producer or consumer run.
type Config struct {
	// URL is the AMQP URL, e.g. amqp://guest:guest@127.0.0.1:5672/.
	URL string
	// Queue is the durable queue to use; it is declared when missing.
	Queue string
	// Messages is how many messages to send or receive.
	Messages int64
	// MessageSize is the payload size in bytes (paper: 200).
	MessageSize int
	// TxSize groups this many publishes into one AMQP transaction (tx.select /
	// tx.commit); 0 publishes outside transactions. A transaction is RabbitMQ's
	// nearest notion of a producer batch, not a batch on the wire: every message is
	// still its own basic.publish.
	TxSize int
	// Prefetch is the consumer's basic.qos prefetch count (paper: ~1000 messages).
	Prefetch int
	// Duration caps the run; 0 means no cap. A capped run reports what it moved.
	Duration time.Duration
	// SampleInterval is how often throughput is sampled (default 250 ms).
	SampleInterval time.Duration
	// Logger receives progress and errors; nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns the paper's settings for a local broker.
func DefaultConfig() Config {
	return Config{
		URL:            "amqp://guest:guest@127.0.0.1:5672/",
		Queue:          "perf",
		Messages:       100_000,
		MessageSize:    200,
		Prefetch:       1000,
		SampleInterval: 250 * time.Millisecond,
	}
}

// Validate reports the first invalid field with a precise message.
func (c Config) Validate() error {
	switch {
	case c.URL == "":
		return errors.New("rabbitperf: URL is empty")
	case c.Queue == "":
		return errors.New("rabbitperf: Queue is empty")
	case c.Messages <= 0:
		return fmt.Errorf("rabbitperf: Messages = %d, want > 0", c.Messages)
	case c.MessageSize <= 0 || c.MessageSize > 128<<20:
		return fmt.Errorf("rabbitperf: MessageSize = %d, want 1..%d", c.MessageSize, 128<<20)
	case c.TxSize < 0:
		return fmt.Errorf("rabbitperf: TxSize = %d, want >= 0", c.TxSize)
	case c.Prefetch < 0 || c.Prefetch > 65535:
		return fmt.Errorf("rabbitperf: Prefetch = %d, want 0..65535", c.Prefetch)
	case c.Duration < 0:
		return fmt.Errorf("rabbitperf: Duration = %v, want >= 0", c.Duration)
	}
	return nil
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Payload returns size bytes of fixed pseudo-random content; RabbitMQ does not
// compress, so the content only has to be the right size.
func Payload(size int) []byte {
	r := rand.New(rand.NewPCG(200, 11))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// dial connects and opens one channel; the caller closes the connection.
func dial(cfg Config) (*amqp.Connection, *amqp.Channel, error) {
	conn, err := amqp.Dial(cfg.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("rabbitperf: dial %s: %w", redact(cfg.URL), err)
	}
	ch, err := conn.Channel()
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("rabbitperf: open channel: %w", err), conn.Close())
	}
	return conn, ch, nil
}

// declare makes the durable queue the paper's tests use.
func declare(ch *amqp.Channel, queue string) error {
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("rabbitperf: declare durable queue %q: %w", queue, err)
	}
	return nil
}

// Reset deletes the queue (and every message in it) and declares it again empty,
// so that each run starts from the same state.
func Reset(cfg Config) (err error) {
	conn, ch, err := dial(cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeConn(conn)) }()
	if _, err := ch.QueueDelete(cfg.Queue, false, false, false); err != nil {
		return fmt.Errorf("rabbitperf: delete queue %q: %w", cfg.Queue, err)
	}
	return declare(ch, cfg.Queue)
}

// Depth returns the number of ready messages in the queue.
func Depth(cfg Config) (n int, err error) {
	conn, ch, err := dial(cfg)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, closeConn(conn)) }()
	q, err := ch.QueueDeclarePassive(cfg.Queue, true, false, false, false, nil)
	if err != nil {
		return 0, fmt.Errorf("rabbitperf: inspect queue %q: %w", cfg.Queue, err)
	}
	return q.Messages, nil
}

// Produce sends cfg.Messages persistent messages to the durable queue, one
// basic.publish per message, without publisher confirms (paper §5: the producer
// does not wait for acknowledgements). To time the broker's work rather than the
// client's socket buffer, the run ends when the queue's message count (a passive
// queue.declare, polled) shows every message sent: the broker has enqueued them
// all, as ActiveMQ has when it answers the driver's final synchronous send.
func Produce(ctx context.Context, cfg Config) (res perf.Result, err error) {
	if err := cfg.Validate(); err != nil {
		return perf.Result{}, err
	}
	conn, ch, err := dial(cfg)
	if err != nil {
		return perf.Result{}, err
	}
	defer func() { err = errors.Join(err, closeConn(conn)) }()
	if err := declare(ch, cfg.Queue); err != nil {
		return perf.Result{}, err
	}
	before, err := ch.QueueDeclarePassive(cfg.Queue, true, false, false, false, nil)
	if err != nil {
		return perf.Result{}, fmt.Errorf("rabbitperf: inspect queue %q: %w", cfg.Queue, err)
	}
	if cfg.TxSize > 0 {
		if err := ch.Tx(); err != nil {
			return perf.Result{}, fmt.Errorf("rabbitperf: tx.select: %w", err)
		}
	}
	msg := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream", Body: Payload(cfg.MessageSize)}

	var sent atomic.Int64
	start := time.Now()
	sampler := perf.StartSampler(start, cfg.SampleInterval, sent.Load)
	stopped := false
	defer func() {
		if !stopped {
			sampler.Stop(time.Now())
		}
	}()
	deadline := deadlineOf(start, cfg.Duration)
	inTx := 0
	for i := int64(0); i < cfg.Messages; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return perf.Result{}, err
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				break
			}
		}
		if err := ch.PublishWithContext(ctx, "", cfg.Queue, false, false, msg); err != nil {
			return perf.Result{}, fmt.Errorf("rabbitperf: publish message %d: %w", i, err)
		}
		sent.Add(1)
		if cfg.TxSize > 0 {
			if inTx++; inTx == cfg.TxSize {
				if err := ch.TxCommit(); err != nil {
					return perf.Result{}, fmt.Errorf("rabbitperf: tx.commit after message %d: %w", i, err)
				}
				inTx = 0
			}
		}
	}
	if inTx > 0 {
		if err := ch.TxCommit(); err != nil {
			return perf.Result{}, fmt.Errorf("rabbitperf: final tx.commit: %w", err)
		}
	}
	count := sent.Load()
	if err := waitEnqueued(ctx, ch, cfg.Queue, int64(before.Messages)+count); err != nil {
		return perf.Result{}, err
	}
	end := time.Now()
	samples := sampler.Stop(end)
	stopped = true
	cfg.logger().Info("rabbitmq produce done", "messages", count, "seconds", end.Sub(start).Seconds())
	return perf.NewResult(count, count*int64(cfg.MessageSize), end.Sub(start).Seconds(), samples), nil
}

// enqueueTimeout bounds the wait for the broker to enqueue what was sent.
const enqueueTimeout = 5 * time.Minute

// waitEnqueued polls the queue's message count until it reaches want.
func waitEnqueued(ctx context.Context, ch *amqp.Channel, queue string, want int64) error {
	deadline := time.Now().Add(enqueueTimeout)
	for {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			return fmt.Errorf("rabbitperf: inspect queue %q: %w", queue, err)
		}
		if int64(q.Messages) >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rabbitperf: queue %q holds %d messages after %v, want %d", queue, q.Messages, enqueueTimeout, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Consume receives up to cfg.Messages messages from the queue with a prefetch
// window of cfg.Prefetch and automatic acknowledgement (paper §5 consumer test).
func Consume(ctx context.Context, cfg Config) (res perf.Result, err error) {
	if err := cfg.Validate(); err != nil {
		return perf.Result{}, err
	}
	conn, ch, err := dial(cfg)
	if err != nil {
		return perf.Result{}, err
	}
	defer func() { err = errors.Join(err, closeConn(conn)) }()
	if err := declare(ch, cfg.Queue); err != nil {
		return perf.Result{}, err
	}
	if err := ch.Qos(cfg.Prefetch, 0, false); err != nil {
		return perf.Result{}, fmt.Errorf("rabbitperf: basic.qos prefetch %d: %w", cfg.Prefetch, err)
	}
	var got, bytes atomic.Int64
	start := time.Now()
	deliveries, err := ch.ConsumeWithContext(ctx, cfg.Queue, "perf-consumer", true, false, false, false, nil)
	if err != nil {
		return perf.Result{}, fmt.Errorf("rabbitperf: basic.consume %q: %w", cfg.Queue, err)
	}
	sampler := perf.StartSampler(start, cfg.SampleInterval, got.Load)
	var timeout <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		timeout = t.C
	}
	var loopErr error
loop:
	for got.Load() < cfg.Messages {
		select {
		case d, ok := <-deliveries:
			if !ok {
				loopErr = errors.New("rabbitperf: delivery channel closed by the broker")
				break loop
			}
			got.Add(1)
			bytes.Add(int64(len(d.Body)))
		case <-timeout:
			break loop
		case <-ctx.Done():
			loopErr = ctx.Err()
			break loop
		}
	}
	end := time.Now()
	samples := sampler.Stop(end)
	if loopErr != nil {
		return perf.Result{}, loopErr
	}
	if err := ch.Cancel("perf-consumer", false); err != nil {
		return perf.Result{}, fmt.Errorf("rabbitperf: basic.cancel: %w", err)
	}
	cfg.logger().Info("rabbitmq consume done", "messages", got.Load(), "seconds", end.Sub(start).Seconds())
	return perf.NewResult(got.Load(), bytes.Load(), end.Sub(start).Seconds(), samples), nil
}

func deadlineOf(start time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return start.Add(d)
}

func closeConn(conn *amqp.Connection) error {
	if conn.IsClosed() {
		return nil
	}
	if err := conn.Close(); err != nil && !errors.Is(err, amqp.ErrClosed) {
		return fmt.Errorf("rabbitperf: close connection: %w", err)
	}
	return nil
}

// redact hides the password of an AMQP URL in error messages.
func redact(raw string) string {
	u, err := amqp.ParseURI(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.Password = "xxx"
	return u.String()
}
