package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/netdb11/kafka/broker/audit"
	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/producer"
	paudit "github.com/netdb11/kafka/producer/audit"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-audit-producer",
	Usage: "Usage: kafka-audit-producer (--zookeeper=Z | --broker-list=L) --topic=T --rate=N [--duration=D] [options]\n\n" +
		"Sends messages at a steady rate through an audited producer (paper §4's audit), queued as 0.7's\n" +
		"async producer queues them, and prints how long they waited in the queue.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		c := config{Rate: 100, MessageSize: 200, BatchSize: 200, QueueTime: 5 * time.Second, Window: 10 * time.Second, AuditTopic: audit.AuditTopic}
		fs.StringVar(&c.Zookeeper, "zookeeper", "", "ZooKeeper of the cluster (zk.connect); or --broker-list")
		fs.StringVar(&c.BrokerList, "broker-list", "", "brokers as id:host:port,... (broker.list)")
		fs.StringVar(&c.Topic, "topic", "", "topic to send to; required")
		fs.Float64Var(&c.Rate, "rate", c.Rate, "messages per second")
		fs.DurationVar(&c.Duration, "duration", 0, "stop after this long (0: at SIGTERM)")
		fs.IntVar(&c.MessageSize, "message-size", c.MessageSize, "payload bytes per message, envelope not counted")
		fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "batch.size: a batch leaves when this many messages wait")
		fs.DurationVar(&c.QueueTime, "queue-time", c.QueueTime, "queue.time: or when the oldest waited this long")
		fs.DurationVar(&c.Window, "audit-window", c.Window, "length of the audit's counting windows")
		fs.StringVar(&c.AuditTopic, "audit-topic", c.AuditTopic, "topic of the monitoring events")
		fs.StringVar(&c.Host, "host", "", "the host name in the envelopes and events (default: the machine's)")
		fs.BoolVar(&c.JSON, "json", false, "print the summary as one JSON object")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error { return c.run(ctx, std) }
	},
}

type config struct {
	Zookeeper, BrokerList, Topic string
	Rate                         float64
	Duration                     time.Duration
	MessageSize, BatchSize       int
	QueueTime, Window            time.Duration
	AuditTopic, Host             string
	JSON                         bool
}

func (c *config) validate() error {
	var errs []error
	if (c.Zookeeper == "") == (c.BrokerList == "") {
		errs = append(errs, errors.New("exactly one of --zookeeper and --broker-list is required"))
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("--topic is required"))
	}
	if c.Rate <= 0 || c.MessageSize < 0 || c.BatchSize < 1 || c.QueueTime <= 0 || c.Window < time.Millisecond || c.Duration < 0 {
		errs = append(errs, errors.New("--rate, --batch-size, --queue-time and --audit-window must be positive, --message-size and --duration not negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return &cli.UsageError{Err: err}
	}
	return nil
}

// Summary is what the tool prints at the end.
type Summary struct {
	Host        string   `json:"host"`
	Topic       string   `json:"topic"`
	Sent        int64    `json:"sent"`
	Seconds     float64  `json:"seconds"`
	QueueP50ms  float64  `json:"queue_p50_ms"`
	QueueP99ms  float64  `json:"queue_p99_ms"`
	QueueMeanms float64  `json:"queue_mean_ms"`
	SendMeanms  float64  `json:"send_mean_ms"`
	Windows     []Window `json:"windows"`
}

// Window is the queue time of the messages created in one audit window.
type Window struct {
	Unix        float64 `json:"window_unix"`
	Messages    int64   `json:"messages"`
	QueueMeanms float64 `json:"queue_mean_ms"`
	SendMeanms  float64 `json:"send_mean_ms"`
}

type windowAcc struct {
	n            int64
	queue, sendT time.Duration
}

// run sends at the configured rate until the duration or ctx ends.
//
// Deviation: 0.7's async producer queues inside the producer; here the tool
// queues with the same rule (a batch leaves when batch.size messages wait or
// the oldest waited queue.time) and sends each batch with a confirmed sync
// send, stamping each message with its creation time (SendCreated), so that
// its time in the queue is measured rather than inferred.
func (c *config) run(ctx context.Context, std cli.IO) error {
	if err := c.validate(); err != nil {
		return err
	}
	if c.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		c.Host = h
	}
	pc := producer.DefaultConfig()
	pc.ZkConnect, pc.BrokerList = c.Zookeeper, c.BrokerList
	pc.Confirm = producer.ConfirmSend
	p, err := producer.New(pc)
	if err != nil {
		return err
	}
	ap, err := paudit.New(p, paudit.Config{Host: c.Host, Window: c.Window, Topic: c.AuditTopic})
	if err != nil {
		return errors.Join(err, p.Close())
	}
	payload := make([]byte, c.MessageSize)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	var (
		queue   []time.Time
		waits   []time.Duration
		sendSum time.Duration
		batches int64
		windows = map[int64]*windowAcc{}
		sent    int64
		sendErr error
	)
	msgs := make([]producer.Message, c.BatchSize)
	for i := range msgs {
		msgs[i] = producer.Message{Value: payload}
	}
	flush := func(all bool) {
		for len(queue) > 0 && (all || len(queue) >= c.BatchSize || time.Since(queue[0]) >= c.QueueTime) {
			n := min(len(queue), c.BatchSize)
			batch := queue[:n]
			start := time.Now()
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := ap.SendCreated(sctx, c.Topic, batch, msgs[:n]...)
			cancel()
			took := time.Since(start)
			if err != nil && sendErr == nil {
				sendErr = err
				fmt.Fprintf(std.Stderr, "kafka-audit-producer: %v\n", err)
			}
			sendSum += took
			batches++
			for _, created := range batch {
				w := start.Sub(created)
				waits = append(waits, w)
				k := audit.Window(created, c.Window).UnixNano()
				a := windows[k]
				if a == nil {
					a = &windowAcc{}
					windows[k] = a
				}
				a.n++
				a.queue += w
				a.sendT += took
			}
			sent += int64(n)
			queue = queue[n:]
		}
	}
	began := time.Now()
	var stop <-chan time.Time
	if c.Duration > 0 {
		t := time.NewTimer(c.Duration)
		defer t.Stop()
		stop = t.C
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var made int64
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-stop:
			break loop
		case now := <-tick.C:
			due := int64(c.Rate*now.Sub(began).Seconds()) - made
			for ; due > 0; due-- {
				queue = append(queue, time.Now())
				made++
			}
			flush(false)
		}
	}
	flush(true)
	elapsed := time.Since(began)
	err = ap.Close()
	s := Summary{Host: c.Host, Topic: c.Topic, Sent: sent, Seconds: elapsed.Seconds()}
	if len(waits) > 0 {
		slices.Sort(waits)
		var sum time.Duration
		for _, w := range waits {
			sum += w
		}
		s.QueueP50ms = ms(waits[(len(waits)-1)/2])
		s.QueueP99ms = ms(waits[min(len(waits)-1, len(waits)*99/100)])
		s.QueueMeanms = ms(sum / time.Duration(len(waits)))
		s.SendMeanms = ms(sendSum / time.Duration(batches))
	}
	keys := make([]int64, 0, len(windows))
	for k := range windows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a := windows[k]
		s.Windows = append(s.Windows, Window{Unix: float64(k) / 1e9, Messages: a.n, QueueMeanms: ms(a.queue / time.Duration(a.n)), SendMeanms: ms(a.sendT / time.Duration(a.n))})
	}
	printSummary(std.Stdout, s, c.JSON)
	return errors.Join(sendErr, err)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func printSummary(w io.Writer, s Summary, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(s)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	fmt.Fprintf(w, "sent %d messages to %s in %.1f s; queue time p50 %.0f ms, p99 %.0f ms, mean %.0f ms; a confirmed send took %.1f ms on average\n",
		s.Sent, s.Topic, s.Seconds, s.QueueP50ms, s.QueueP99ms, s.QueueMeanms, s.SendMeanms)
}
