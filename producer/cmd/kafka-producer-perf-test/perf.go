package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/producer"
	"github.com/spf13/pflag"
)

// config is what the flags set.
type config struct {
	Zookeeper   string
	BrokerList  string
	Topic       string
	Messages    int64
	MessageSize int
	BatchSize   int
	Codec       int
	Threads     int
	Async       bool
	QueueSize   int
	QueueTime   time.Duration
	NoDelay     bool
	BufferSize  int
	JSON        bool
	Progress    bool // show progress when stderr is a terminal
	CPUProfile  string
	Confirm     string
	// ConfirmSet says --confirm was given (else acks 1 and -1 confirm by
	// their answers).
	ConfirmSet bool
	// Acks is --request-required-acks; the rest are 0.8's retry settings.
	Acks           string
	RequestTimeout int
	MaxRetries     int
	RetryBackoff   int
}

func defaultConfig() config {
	return config{
		Topic: "test", Messages: 1_000_000, MessageSize: 200, BatchSize: 200, Threads: 1,
		QueueSize: 10000, QueueTime: 5000 * time.Millisecond, NoDelay: false, BufferSize: 100 * 1024,
		Progress: true, Confirm: string(producer.ConfirmClose),
		Acks: "0", RequestTimeout: 10000, MaxRetries: 3, RetryBackoff: 100,
	}
}

func (c *config) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.BrokerList, "broker-list", c.BrokerList, "brokers to send to, as id:host:port[,id:host:port...] (0.7's broker.list); or use --zookeeper")
	fs.StringVar(&c.Zookeeper, "zookeeper", c.Zookeeper, "ZooKeeper connect string host:port[/chroot] (zk.connect): find brokers and partitions in the registry instead of --broker-list")
	fs.StringVar(&c.Topic, "topic", c.Topic, "topic to publish to")
	fs.Int64Var(&c.Messages, "messages", c.Messages, "number of messages to send, over all threads")
	fs.IntVar(&c.MessageSize, "message-size", c.MessageSize, "payload size of each message, in bytes")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "messages per request: per Send in sync mode, batch.size in async mode")
	fs.IntVar(&c.Codec, "compression-codec", c.Codec, "compression.codec: 0 none, 1 gzip, 2 snappy")
	fs.IntVar(&c.Threads, "threads", c.Threads, "sending threads, each with its own producer and connection")
	fs.BoolVar(&c.Async, "async", c.Async, "use the async producer (producer.type=async) instead of one Send per batch")
	fs.IntVar(&c.QueueSize, "queue-size", c.QueueSize, "async: queue.size, messages waiting per broker")
	fs.DurationVar(&c.QueueTime, "queue-time", c.QueueTime, "async: queue.time, longest wait before a partial batch is sent")
	fs.BoolVar(&c.NoDelay, "tcp-nodelay", c.NoDelay, "set TCP_NODELAY on broker connections (default false: Nagle's algorithm on, as 0.7's SyncProducer leaves it)")
	fs.IntVar(&c.BufferSize, "socket-buffer-size", c.BufferSize, "buffer.size: socket send buffer in bytes (0: system default)")
	fs.BoolVar(&c.JSON, "json", c.JSON, `print the result as one JSON object, the last line of stdout: {"messages":N,"bytes":B,"seconds":S,"msgs_per_sec":X,"mb_per_sec":Y,"acks":A}`)
	fs.BoolVar(&c.Progress, "progress", c.Progress, "show progress on stderr when it is a terminal")
	fs.StringVar(&c.CPUProfile, "cpuprofile", c.CPUProfile, "write a CPU profile of the run to this file (go tool pprof)")
	fs.StringVar(&c.Confirm, "confirm", c.Confirm, "when to prove the broker took the messages, with a round trip: close (once per connection, at the end of the run, timed) or send (after every Send, or every async batch); only with --request-required-acks=0")
	fs.StringVar(&c.Acks, "request-required-acks", c.Acks, "request.required.acks: 0 (0.7's PRODUCE, no answer), 1 (the leader appended), -1 or all (every in-sync replica has it); 1 and -1 send a replicated topic's messages to its leaders in PRODUCE_ACKS requests")
	fs.IntVar(&c.RequestTimeout, "request-timeout-ms", c.RequestTimeout, "request.timeout.ms: how long a leader waits for the in-sync replicas (acks 1, -1)")
	fs.IntVar(&c.MaxRetries, "message-send-max-retries", c.MaxRetries, "message.send.max.retries: retries of a failed acknowledged send, after a metadata refresh (acks 1, -1)")
	fs.IntVar(&c.RetryBackoff, "retry-backoff-ms", c.RetryBackoff, "retry.backoff.ms: the wait before each retry (acks 1, -1)")
}

func (c *config) producerConfig() (producer.Config, error) {
	pc := producer.DefaultConfig()
	pc.BrokerList = c.BrokerList
	pc.ZkConnect = c.Zookeeper
	pc.CompressionCodec = wire.Codec(c.Codec)
	pc.NoDelay = c.NoDelay
	pc.BufferSize = c.BufferSize
	if c.Async {
		pc.Type = producer.Async
		pc.BatchSize = c.BatchSize
		pc.QueueSize = c.QueueSize
		pc.QueueTime = c.QueueTime
		pc.EnqueueTimeout = -1 // block: a benchmark drops nothing
	}
	pc.Confirm = producer.Confirm(c.Confirm)
	acks, err := producer.ParseAcks(c.Acks)
	if err != nil {
		return pc, fmt.Errorf("--request-required-acks: %w", err)
	}
	pc.RequiredAcks = acks
	if acks != wire.AcksNone && !c.ConfirmSet {
		pc.Confirm = "" // each send is confirmed by its answer
	}
	pc.RequestTimeout = time.Duration(c.RequestTimeout) * time.Millisecond
	pc.MessageSendMaxRetries = c.MaxRetries
	pc.RetryBackoff = time.Duration(c.RetryBackoff) * time.Millisecond
	if size := c.MessageSize + wire.HeaderLenV0; size > pc.MaxMessageSize {
		pc.MaxMessageSize = size
	}
	return pc, pc.Validate()
}

func (c *config) validate() error {
	var errs []error
	if (c.BrokerList == "") == (c.Zookeeper == "") {
		errs = append(errs, errors.New("exactly one of --broker-list and --zookeeper is required"))
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("--topic is required"))
	}
	if c.Messages < 1 {
		errs = append(errs, fmt.Errorf("--messages=%d: must be at least 1", c.Messages))
	}
	if c.MessageSize < 0 {
		errs = append(errs, fmt.Errorf("--message-size=%d: must not be negative", c.MessageSize))
	}
	if c.Threads < 1 {
		errs = append(errs, fmt.Errorf("--threads=%d: must be at least 1", c.Threads))
	}
	return errors.Join(errs...)
}

// payloads returns n distinct payloads of random lowercase letters, so that
// compression sees text-like data rather than zeros.
func payloads(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		p := make([]byte, size)
		for j := range p {
			p[j] = byte('a' + rand.IntN(26))
		}
		out[i] = p
	}
	return out
}

func (c *config) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	if err := c.validate(); err != nil {
		return err
	}
	stopProfile, err := perf.StartCPUProfile(c.CPUProfile)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProfile()) }()
	pc, err := c.producerConfig()
	if err != nil {
		return err
	}
	if stderr != nil {
		// The user asked for copies and gets one: say so once, whichever
		// thread's producer finds it out (as kafka-console-producer does).
		var once sync.Once
		pc.OnNotReplicated = func(topic string) {
			once.Do(func() {
				fmt.Fprintf(stderr, "kafka-producer-perf-test: topic %s is not replicated: acknowledged by its one broker (request.required.acks=%d asked for more; kafka-topics --create makes a replicated topic)\n",
					topic, pc.RequiredAcks)
			})
		}
	}
	pool := payloads(1024, c.MessageSize)
	producers := make([]*producer.Producer, c.Threads)
	for i := range producers {
		if producers[i], err = producer.New(pc); err != nil {
			return err
		}
	}
	var sent atomic.Int64
	stopProgress := c.startProgress(stderr, &sent)
	start := time.Now()
	errs := make([]error, c.Threads)
	var wg sync.WaitGroup
	for i, p := range producers {
		share := c.Messages / int64(c.Threads)
		if int64(i) < c.Messages%int64(c.Threads) {
			share++
		}
		wg.Go(func() {
			errs[i] = c.send(ctx, p, share, pool, i, &sent)
			if err := p.Close(); err != nil && errs[i] == nil {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	// Every message not known to be delivered is counted: those no Send
	// accepted, and those the producers could not deliver.
	lost := c.Messages
	var cause error
	for i, p := range producers {
		st := p.Stats()
		lost -= st.Accepted - st.NotDelivered
		if cause == nil {
			cause = errs[i]
			if loss := (*producer.LossError)(nil); errors.As(cause, &loss) {
				cause = loss.First
			}
		}
	}
	if lost > 0 {
		return fmt.Errorf("%d of %d messages not delivered (%v)", lost, c.Messages, cause)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	n := sent.Load()
	res := perf.NewResult(n, n*int64(c.MessageSize), elapsed.Seconds(), nil)
	acks := int(pc.RequiredAcks)
	res.Acks = &acks
	return res.Print(stdout, c.JSON)
}

// send publishes n messages with one producer: Sends of BatchSize messages
// in sync mode, one message per Send in async mode.
func (c *config) send(ctx context.Context, p *producer.Producer, n int64, pool [][]byte, thread int, sent *atomic.Int64) error {
	batch := c.BatchSize
	if c.Async || batch < 1 {
		batch = 1
	}
	msgs := make([]producer.Message, batch)
	next := thread * 97
	// A signal stops the loop between Sends; each Send itself is bounded by
	// socket.timeout.ms, which spares it watching a cancellable context.
	stop, ctx := ctx, context.WithoutCancel(ctx)
	for n > 0 {
		if err := stop.Err(); err != nil {
			return err
		}
		k := int(min(int64(batch), n))
		for i := range k {
			msgs[i].Value = pool[next%len(pool)]
			next++
		}
		if err := p.Send(ctx, c.Topic, msgs[:k]...); err != nil {
			return err
		}
		n -= int64(k)
		sent.Add(int64(k))
	}
	return nil
}

// startProgress shows a progress bar on stderr when it is a terminal and
// --progress is set, and returns the function that stops it.
func (c *config) startProgress(stderr io.Writer, done *atomic.Int64) func() {
	if !c.Progress {
		return func() {}
	}
	return perf.StartProgress(stderr, c.Messages, "producing", done)
}
