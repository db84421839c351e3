package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/spf13/pflag"
)

// config is what the flags set.
type config struct {
	BrokerList string
	Topic      string
	Partition  int32
	Messages   int64
	FetchSize  int
	Offset     int64
	offsetSet  bool
	Timeout    time.Duration
	BufferSize int
	JSON       bool
	Progress   bool
	CPUProfile string
}

func defaultConfig() config {
	return config{Topic: "test", Messages: 1_000_000, FetchSize: 1 << 20, Timeout: 5 * time.Second, Progress: true}
}

func (c *config) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.BrokerList, "broker-list", c.BrokerList, "broker to read from, as id:host:port (with several, the first)")
	fs.StringVar(&c.Topic, "topic", c.Topic, "topic to read")
	fs.Int32Var(&c.Partition, "partition", c.Partition, "partition to read")
	fs.Int64Var(&c.Messages, "messages", c.Messages, "number of messages to read")
	fs.IntVar(&c.FetchSize, "fetch-size", c.FetchSize, "fetch.size: bytes asked for per fetch")
	fs.Int64Var(&c.Offset, "offset", c.Offset, "start at this offset instead of the earliest one held")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "stop when no new message arrives for this long, with what was read")
	fs.IntVar(&c.BufferSize, "socket-buffer-size", c.BufferSize, "socket.buffersize: receive buffer in bytes (0: system default, auto-tuned)")
	fs.BoolVar(&c.JSON, "json", c.JSON, `print the result as one JSON object, the last line of stdout: {"messages":N,"bytes":B,"seconds":S,"msgs_per_sec":X,"mb_per_sec":Y}`)
	fs.BoolVar(&c.Progress, "progress", c.Progress, "show progress on stderr when it is a terminal")
	fs.StringVar(&c.CPUProfile, "cpuprofile", c.CPUProfile, "write a CPU profile of the run to this file (go tool pprof)")
}

func (c *config) validate() error {
	var errs []error
	if c.BrokerList == "" {
		errs = append(errs, errors.New("--broker-list is required"))
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("--topic is required"))
	}
	if c.Messages < 1 {
		errs = append(errs, fmt.Errorf("--messages=%d: must be at least 1", c.Messages))
	}
	if c.offsetSet && c.Offset < 0 {
		errs = append(errs, fmt.Errorf("--offset=%d: must not be negative", c.Offset))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout=%v: must be positive", c.Timeout))
	}
	return errors.Join(errs...)
}

func (c *config) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	if err := c.validate(); err != nil {
		return err
	}
	brokers, err := wire.ParseBrokerList(c.BrokerList)
	if err != nil {
		return err
	}
	cc := consumer.DefaultConfig()
	cc.FetchSize = c.FetchSize
	cc.BufferSize = c.BufferSize
	sc, err := consumer.NewSimpleConsumer(brokers[0].Addr(), cc)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, sc.Close()) }()
	offset := wire.Offset(c.Offset)
	if !c.offsetSet {
		offs, err := sc.OffsetsBefore(ctx, c.Topic, wire.Partition(c.Partition), wire.EarliestTime, 1)
		if err != nil {
			return err
		}
		offset = 0
		if len(offs) > 0 {
			offset = offs[0]
		}
	}
	stopProfile, err := perf.StartCPUProfile(c.CPUProfile)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProfile()) }()
	var read atomic.Int64
	stopProgress := c.startProgress(stderr, &read)
	defer stopProgress()
	start := time.Now()
	last := start
	n, b := int64(0), int64(0)
	for n < c.Messages {
		set, err := sc.Fetch(ctx, c.Topic, wire.Partition(c.Partition), offset, c.FetchSize)
		if err != nil {
			return err
		}
		it := set.Iterator()
		got := 0
		for n < c.Messages && it.Next() {
			b += int64(len(it.Payload()))
			offset = it.NextOffset()
			n++
			got++
		}
		if err := it.Err(); err != nil {
			return err
		}
		read.Store(n)
		if got > 0 {
			last = time.Now()
			continue
		}
		if time.Since(last) >= c.Timeout {
			fmt.Fprintf(stderr, "kafka-consumer-perf-test: no new message for %v; read %d of %d\n", c.Timeout, n, c.Messages)
			break
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	stopProgress()
	return perf.NewResult(n, b, last.Sub(start).Seconds(), nil).Print(stdout, c.JSON)
}

// startProgress shows a progress bar on stderr when it is a terminal and
// --progress is set, and returns the function that stops it.
func (c *config) startProgress(stderr io.Writer, done *atomic.Int64) func() {
	if !c.Progress {
		return func() {}
	}
	return perf.StartProgress(stderr, c.Messages, "consuming", done)
}
