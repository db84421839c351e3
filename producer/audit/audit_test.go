package audit

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/audit"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/consumer"
	caudit "github.com/netdb11/kafka/consumer/audit"
	"github.com/netdb11/kafka/producer"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func readAll(t *testing.T, b *brokertest.Broker, topic string) [][]byte {
	t.Helper()
	b.Flush(t)
	sc, err := consumer.NewSimpleConsumer(b.Addr, consumer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	set, err := sc.Fetch(context.Background(), topic, 0, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for it := set.Iterator(); it.Next(); {
		out = append(out, append([]byte(nil), it.Payload()...))
	}
	return out
}

// w0 is the start of the window the audited producers of the tests begin in.
var w0 = time.Unix(1_800_000_000, 0)

// startAudited starts a broker, a producer to it and the audited producer
// (host fe-7) over that, whose clock stands 2 s into window w0. The window
// is long, so that the background publisher has nothing to do until the
// test moves the clock and calls Publish itself.
func startAudited(t *testing.T) (*brokertest.Broker, *producer.Producer, *Producer, *clock) {
	t.Helper()
	b := brokertest.Start(t, brokertest.Config())
	pcfg := producer.DefaultConfig()
	pcfg.BrokerList = fmt.Sprintf("0:%s", b.Addr)
	p, err := producer.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: w0.Add(2 * time.Second)}
	a, err := New(p, Config{Host: "fe-7", Window: time.Hour, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return b, p, a, clk
}

// TestEnvelopesAndEvents: every message carries its creation time, host,
// session and sequence number; each ended window's count goes to the audit
// topic once; messages sent around the audit stay as they are.
func TestEnvelopesAndEvents(t *testing.T) {
	b, p, a, clk := startAudited(t)
	ctx := context.Background()
	if err := a.Send(ctx, "pv", producer.Message{Value: []byte("a")}, producer.Message{Value: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(ctx, "pv", producer.Message{Value: []byte("c")}); err != nil {
		t.Fatal(err)
	}
	clk.Set(w0.Add(time.Hour + time.Second))
	if err := a.Send(ctx, "pv", producer.Message{Value: []byte("d")}); err != nil {
		t.Fatal(err)
	}
	if err := p.Send(ctx, "pv", producer.Message{Value: []byte("plain")}); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(ctx, audit.AuditTopic, producer.Message{Value: []byte("x")}); err == nil {
		t.Fatal("sending to the audit topic through the audit was accepted")
	}
	if err := a.Publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	events := readAll(t, b, audit.AuditTopic)
	if len(events) != 1 {
		t.Fatalf("%d events after the first window ended, want 1", len(events))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	events = readAll(t, b, audit.AuditTopic)
	if len(events) != 2 {
		t.Fatalf("%d events after Close, want 2", len(events))
	}
	want := []audit.Event{
		{Topic: "pv", Host: "fe-7", Session: a.Session(), Start: w0, Length: time.Hour, Count: 3, First: 0},
		{Topic: "pv", Host: "fe-7", Session: a.Session(), Start: w0.Add(time.Hour), Length: time.Hour, Count: 1, First: 3},
	}
	for i, raw := range events {
		e, err := audit.DecodeEvent(raw)
		if err != nil {
			t.Fatal(err)
		}
		w := want[i]
		if e.Topic != w.Topic || e.Host != w.Host || e.Session != w.Session || !e.Start.Equal(w.Start) || e.Length != w.Length || e.Count != w.Count || e.First != w.First {
			t.Errorf("event %d = %+v, want %+v", i, e, w)
		}
	}
	msgs := readAll(t, b, "pv")
	if len(msgs) != 5 {
		t.Fatalf("%d messages, want 5", len(msgs))
	}
	for i, m := range msgs[:4] {
		h, payload, err := audit.DecodeEnvelope(m)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		created := w0.Add(2 * time.Second)
		if i == 3 {
			created = w0.Add(time.Hour + time.Second)
		}
		if h.Seq != uint64(i) || h.Host != "fe-7" || h.Session != a.Session() || !h.Time.Equal(created) || string(payload) != string(rune('a'+i)) {
			t.Errorf("message %d: %+v %q", i, h, payload)
		}
	}
	if string(msgs[4]) != "plain" {
		t.Errorf("plain message became %q", msgs[4])
	}
	if err := a.Send(ctx, "pv", producer.Message{Value: []byte("late")}); err != producer.ErrClosed {
		t.Errorf("Send after Close: %v", err)
	}
}

// TestSendCreatedLateMessagesGetAnotherEvent: a message created in a window
// whose event was already published goes out in a second event for that
// window, and the consumer's count of the window is still exact.
func TestSendCreatedLateMessagesGetAnotherEvent(t *testing.T) {
	b, _, a, clk := startAudited(t)
	ctx := context.Background()
	m := producer.Message{Value: []byte("v")}
	if err := a.SendCreated(ctx, "pv", []time.Time{w0, w0.Add(time.Second)}, m, m); err != nil {
		t.Fatal(err)
	}
	clk.Set(w0.Add(time.Hour + time.Second))
	if err := a.Publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	// Queued in the caller while the window ended; then one of the next window.
	if err := a.SendCreated(ctx, "pv", []time.Time{w0.Add(time.Hour - time.Millisecond), w0.Add(time.Hour)}, m, m); err != nil {
		t.Fatal(err)
	}
	if err := a.SendCreated(ctx, "pv", []time.Time{w0}, m, m); err == nil {
		t.Fatal("SendCreated with fewer times than messages was accepted")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c := caudit.NewCounter()
	for _, e := range readAll(t, b, audit.AuditTopic) {
		if err := c.AddEventPayload(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, msg := range readAll(t, b, "pv") {
		if err := c.AddMessage("pv", msg, w0.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	rows := c.Report()
	// One producer, though it announced window 0 in two events: the
	// producers column counts producers, not their events (issue 26 item 5).
	if len(rows) != 2 || rows[0].Sent != 3 || rows[0].Producers != 1 || rows[0].Missing != 0 || rows[1].Sent != 1 || rows[1].Missing != 0 {
		t.Fatalf("rows %+v: want window 0 with 3 sent in two events of one producer, window 1 with 1, none missing", rows)
	}
}
