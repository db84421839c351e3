// Package payloadperf is a Kafka producer throughput driver that sends given
// payloads (log-like lines for the compression ablation) instead of the perf
// tool's random letters, through this repository's producer library: sync mode,
// one PRODUCE request per batch, optionally compressed (Kafka 0.7's
// compression.codec). Its result is a perf.Result with samples over time.
package payloadperf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/producer"
)

// Config is one producer run.
type Config struct {
	// BrokerList is 0.7's broker.list, "id:host:port".
	BrokerList string
	// Topic to publish to.
	Topic string
	// Messages to send; payloads are used round-robin.
	Messages int64
	// BatchSize is the number of messages per request.
	BatchSize int
	// Codec is compression.codec: 0 none, 1 gzip, 2 snappy.
	Codec int
	// Payloads are the message values.
	Payloads [][]byte
	// SampleInterval is the throughput sampling interval (default 250 ms).
	SampleInterval time.Duration
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.BrokerList == "":
		return errors.New("payloadperf: BrokerList is empty")
	case c.Topic == "":
		return errors.New("payloadperf: Topic is empty")
	case c.Messages < 1:
		return fmt.Errorf("payloadperf: Messages = %d, want >= 1", c.Messages)
	case c.BatchSize < 1:
		return fmt.Errorf("payloadperf: BatchSize = %d, want >= 1", c.BatchSize)
	case c.Codec < 0 || c.Codec > 2:
		return fmt.Errorf("payloadperf: Codec = %d, want 0 (none), 1 (gzip) or 2 (snappy)", c.Codec)
	case len(c.Payloads) == 0:
		return errors.New("payloadperf: no payloads")
	}
	return nil
}

// ReadPayloads reads one payload per line (without the newline).
func ReadPayloads(r io.Reader) ([][]byte, error) {
	var out [][]byte
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("payloadperf: reading payloads: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("payloadperf: the payload file has no non-empty line")
	}
	return out, nil
}

// Produce sends the messages and reports the rate; bytes count uncompressed
// payload, as Kafka's perf tools do.
func Produce(ctx context.Context, cfg Config) (res perf.Result, err error) {
	if err := cfg.Validate(); err != nil {
		return perf.Result{}, err
	}
	pc := producer.DefaultConfig()
	pc.BrokerList = cfg.BrokerList
	pc.CompressionCodec = wire.Codec(cfg.Codec)
	pc.Confirm = producer.ConfirmClose // as kafka-producer-perf-test: one round trip at the end
	for _, p := range cfg.Payloads {
		pc.MaxMessageSize = max(pc.MaxMessageSize, wire.HeaderLenV0+len(p))
	}
	if err := pc.Validate(); err != nil {
		return perf.Result{}, fmt.Errorf("payloadperf: %w", err)
	}
	p, err := producer.New(pc)
	if err != nil {
		return perf.Result{}, fmt.Errorf("payloadperf: %w", err)
	}
	defer func() {
		if cerr := p.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("payloadperf: closing the producer: %w", cerr)
		}
	}()
	var sent, bytes atomic.Int64
	start := time.Now()
	sampler := perf.StartSampler(start, cfg.SampleInterval, sent.Load)
	msgs := make([]producer.Message, cfg.BatchSize)
	next := 0
	for left := cfg.Messages; left > 0; {
		k := int(min(int64(cfg.BatchSize), left))
		var b int64
		for i := range k {
			msgs[i].Value = cfg.Payloads[next%len(cfg.Payloads)]
			b += int64(len(msgs[i].Value))
			next++
		}
		if err := p.Send(ctx, cfg.Topic, msgs[:k]...); err != nil {
			sampler.Stop(time.Now())
			return perf.Result{}, fmt.Errorf("payloadperf: send after %d messages: %w", sent.Load(), err)
		}
		left -= int64(k)
		sent.Add(int64(k))
		bytes.Add(b)
	}
	end := time.Now()
	samples := sampler.Stop(end)
	return perf.NewResult(sent.Load(), bytes.Load(), end.Sub(start).Seconds(), samples), nil
}
