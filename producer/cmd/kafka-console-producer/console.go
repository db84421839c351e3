package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/producer"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// config is what the flags set.
type config struct {
	Zookeeper      string
	BrokerList     string
	Topic          string
	BatchSize      int
	Codec          int
	Sync           bool
	QueueTime      time.Duration
	QueueSize      int
	MaxMessageSize int
	// Acks is --request-required-acks; the rest are 0.8's retry settings.
	Acks           string
	RequestTimeout int
	MaxRetries     int
	RetryBackoff   int
}

func defaultConfig() config {
	return config{BatchSize: 200, QueueTime: time.Second, QueueSize: 10000, MaxMessageSize: wire.DefaultMaxMessageSize,
		Acks: "0", RequestTimeout: 10000, MaxRetries: 3, RetryBackoff: 100}
}

func (c *config) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.BrokerList, "broker-list", c.BrokerList, "brokers to send to, as id:host:port[,id:host:port...] (0.7's broker.list); or use --zookeeper")
	fs.StringVar(&c.Zookeeper, "zookeeper", c.Zookeeper, "ZooKeeper connect string host:port[/chroot] (zk.connect): find brokers and partitions in the registry instead of --broker-list")
	fs.StringVar(&c.Topic, "topic", c.Topic, "topic to publish to; required")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "messages per request: batch.size (async), or the most lines sent together (--sync)")
	fs.IntVar(&c.Codec, "compression-codec", c.Codec, "compression.codec: 0 none, 1 gzip, 2 snappy")
	fs.BoolVar(&c.Sync, "sync", c.Sync, "send the lines at hand in one request each time, instead of through the async queue")
	fs.DurationVar(&c.QueueTime, "queue-time", c.QueueTime, "async: queue.time, the longest a line waits before it is sent")
	fs.IntVar(&c.QueueSize, "queue-size", c.QueueSize, "async: queue.size, lines that may wait to be sent")
	fs.IntVar(&c.MaxMessageSize, "max-message-size", c.MaxMessageSize, "max.message.size: the largest message, header (5 bytes) included, as the broker counts it")
	fs.StringVar(&c.Acks, "request-required-acks", c.Acks, "request.required.acks: 0 (0.7's PRODUCE, no answer), 1 (the leader appended), -1 or all (every in-sync replica has it); with 1 or -1 a line counts as delivered only once acknowledged, and the tool exits 1 if any was not")
	fs.IntVar(&c.RequestTimeout, "request-timeout-ms", c.RequestTimeout, "request.timeout.ms: how long a leader waits for the in-sync replicas (acks 1, -1)")
	fs.IntVar(&c.MaxRetries, "message-send-max-retries", c.MaxRetries, "message.send.max.retries: retries of a failed acknowledged send, after a metadata refresh (acks 1, -1)")
	fs.IntVar(&c.RetryBackoff, "retry-backoff-ms", c.RetryBackoff, "retry.backoff.ms: the wait before each retry (acks 1, -1)")
}

func (c *config) producerConfig() (producer.Config, error) {
	var errs []error
	if (c.BrokerList == "") == (c.Zookeeper == "") {
		errs = append(errs, errors.New("exactly one of --broker-list and --zookeeper is required"))
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("--topic is required"))
	}
	pc := producer.DefaultConfig()
	pc.BrokerList = c.BrokerList
	pc.ZkConnect = c.Zookeeper
	pc.CompressionCodec = wire.Codec(c.Codec)
	pc.MaxMessageSize = c.MaxMessageSize
	pc.BatchSize = c.BatchSize
	if !c.Sync {
		pc.Type = producer.Async
		pc.QueueTime = c.QueueTime
		pc.QueueSize = c.QueueSize
		pc.EnqueueTimeout = -1 // wait for room: never drop a line
	}
	if acks, err := producer.ParseAcks(c.Acks); err != nil {
		errs = append(errs, fmt.Errorf("--request-required-acks: %w", err))
	} else {
		pc.RequiredAcks = acks
	}
	pc.RequestTimeout = time.Duration(c.RequestTimeout) * time.Millisecond
	pc.MessageSendMaxRetries = c.MaxRetries
	pc.RetryBackoff = time.Duration(c.RetryBackoff) * time.Millisecond
	if len(errs) == 0 {
		errs = append(errs, pc.Validate())
	}
	return pc, errors.Join(errs...)
}

// run publishes stdin's lines until end of input or until ctx ends, then
// sends what is queued. Sends are not cut short by ctx: the lines read are
// delivered. It fails, with one line "N of M messages not delivered (...)",
// when any line it was given was not delivered, or not confirmed: a refused
// Send stops the sending, and the async producer's losses are counted at
// Close. After a refused Send the rest of the input is read and counted,
// not sent, so that M counts every line given and the line adds ", K never
// sent" (until a signal: lines after it are not counted). With
// --request-required-acks 1 or -1 a line is delivered when its leader
// acknowledged it, and the line says "N of M messages not acknowledged[, K
// never sent] (request.required.acks=A; cause)", the cause naming the
// broker, topic, partition and the broker's error (e.g. NotEnoughReplicas).
//
// With --request-required-acks 1 or -1 to a topic that is not replicated,
// it says once on stderr that the topic is not replicated and that its one
// broker acknowledges the lines: the user asked for copies and gets one.
func (c *config) run(ctx context.Context, stdin io.Reader, stderr io.Writer) (err error) {
	pc, err := c.producerConfig()
	if err != nil {
		return err
	}
	if stderr != nil {
		pc.OnNotReplicated = func(topic string) {
			fmt.Fprintf(stderr, "kafka-console-producer: topic %s is not replicated: acknowledged by its one broker (request.required.acks=%d asked for more; kafka-topics --create makes a replicated topic)\n",
				topic, pc.RequiredAcks)
		}
	}
	p, err := producer.New(pc)
	if err != nil {
		return err
	}
	given, handed := 0, 0 // lines read, lines handed to Send
	if f, ok := stdin.(*os.File); ok {
		stdin = &ctxReader{ctx: ctx, f: f}
	}
	r := bufio.NewReaderSize(stdin, 64<<10)
	stop := ctx
	defer func() {
		if err != nil && stop.Err() == nil {
			// A refused Send: the rest of the input is never sent; count it.
			given += countLines(r)
		}
		closeErr := p.Close()
		st := p.Stats()
		if lost := int64(given) - st.Accepted + st.NotDelivered; lost > 0 {
			cause := err
			var loss *producer.LossError
			if errors.As(closeErr, &loss) {
				closeErr = nil
				if cause == nil {
					cause = loss.First
				}
			}
			never := ""
			if n := given - handed; n > 0 {
				never = fmt.Sprintf(", %d never sent", n)
			}
			if pc.RequiredAcks != wire.AcksNone {
				err = errors.Join(fmt.Errorf("%d of %d messages not acknowledged%s (request.required.acks=%d; %v)", lost, given, never, pc.RequiredAcks, cause), closeErr)
				return
			}
			err = errors.Join(fmt.Errorf("%d of %d messages not delivered%s (%v)", lost, given, never, cause), closeErr)
			return
		}
		err = errors.Join(err, closeErr)
	}()
	ctx = context.WithoutCancel(ctx)
	batch := make([]producer.Message, 0, c.BatchSize)
	var arena []byte // the batch's lines
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		handed += len(batch)
		err := p.Send(ctx, c.Topic, batch...)
		batch, arena = batch[:0], arena[:0]
		return err
	}
	for line := 1; ; line++ {
		text, err := readLine(r, c.MaxMessageSize)
		if err != nil {
			if err == io.EOF || stop.Err() != nil {
				return flush() // end of input, or a signal
			}
			return errors.Join(fmt.Errorf("line %d: %w", line, err), flush())
		}
		given++
		if !c.Sync {
			handed++
			if err := p.Send(ctx, c.Topic, producer.Message{Value: text}); err != nil {
				return err
			}
			continue
		}
		// Sync: gather the lines already read, up to --batch-size.
		if cap(arena)-len(arena) < len(text) {
			if err := flush(); err != nil {
				return err
			}
			arena = make([]byte, 0, max(64<<10, len(text)))
		}
		start := len(arena)
		arena = append(arena, text...)
		batch = append(batch, producer.Message{Value: arena[start:len(arena):len(arena)]})
		if len(batch) >= c.BatchSize || r.Buffered() == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// countLines reads r to its end and returns how many lines it held (a last
// line without "\n" counts); it stops at the first read error (a signal).
func countLines(r *bufio.Reader) int {
	n, partial := 0, false
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			n, partial = n+1, false
		} else if len(line) > 0 {
			partial = true
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if partial {
				n++
			}
			return n
		}
	}
}

// readLine returns the next line without its "\n" (or "\r\n"); the bytes
// are valid until the next call. A line that does not fit a message of
// maxMessageSize (its size field: the header and the line) is an error.
func readLine(r *bufio.Reader, maxMessageSize int) ([]byte, error) {
	max := maxMessageSize - wire.HeaderLenV0
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) && len(long) <= max+2 {
			line, err = r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil && err != io.EOF {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("line longer than %d bytes, the most --max-message-size=%d allows", max, maxMessageSize)
		}
		return nil, err
	}
	if err == io.EOF && len(line) == 0 {
		return nil, io.EOF
	}
	line = trimEOL(line)
	if len(line) > max {
		return nil, fmt.Errorf("line of %d bytes is longer than %d bytes, the most --max-message-size=%d allows (a message's size counts its %d-byte header)",
			len(line), max, maxMessageSize, wire.HeaderLenV0)
	}
	return line, nil
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// ctxReader reads a file (standard input) until ctx ends: it polls before
// each read, so a signal stops a tool waiting for input without closing the
// file or leaving a goroutine blocked in read.
type ctxReader struct {
	ctx context.Context
	f   *os.File
}

func (r *ctxReader) Read(p []byte) (int, error) {
	fds := []unix.PollFd{{Fd: int32(r.f.Fd()), Events: unix.POLLIN}}
	for {
		if err := r.ctx.Err(); err != nil {
			return 0, err
		}
		n, err := unix.Poll(fds, 100)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("poll %s: %w", r.f.Name(), err)
		}
		if n > 0 {
			return r.f.Read(p)
		}
	}
}
