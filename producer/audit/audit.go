// Package audit is the producer's side of the audit of paper §4: it wraps a
// producer.Producer so that every message carries an envelope with its
// creation time and host (broker/audit draws the bytes), and publishes,
// every window, one monitoring event per topic with the number of messages
// created in that window to the audit topic. consumer/audit and
// kafka-audit count what arrives and validate it against the events.
//
// Messages sent through the wrapped producer directly, not through this
// package, stay as they are: the audit changes no payload unless it is on.
package audit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/audit"
	"github.com/netdb11/kafka/producer"
)

// Config configures the audit of a producer.
type Config struct {
	// Host is the envelope's and the events' host (default: os.Hostname).
	Host string
	// Window is the length of a counting window (default one minute).
	Window time.Duration
	// Topic is the audit topic (default audit.AuditTopic, "kafka-audit").
	Topic string
	// Now is the clock (default time.Now); tests inject one.
	Now func() time.Time
	// Logger receives publishing failures; nil discards them.
	Logger *slog.Logger
}

// Producer is a producer whose messages carry audit envelopes and whose
// counts go to the audit topic. It is safe for concurrent use.
type Producer struct {
	p       *producer.Producer
	cfg     Config
	session uint64

	mu   sync.Mutex
	seq  map[string]uint64          // next sequence number per topic; guarded by mu
	open map[windowKey]*audit.Event // counted, not yet published; guarded by mu
	due  []*audit.Event             // closed early (see SendCreated), not yet published; guarded by mu
	buf  []byte                     // scratch for envelopes; guarded by mu

	pubMu  sync.Mutex // serializes publish
	cancel context.CancelFunc
	done   chan struct{}
	closed bool // guarded by mu
}

type windowKey struct {
	topic string
	start int64
}

// New wraps p, which the returned Producer owns from now on (Close closes
// it), and starts publishing an event per topic and window once the window
// has ended.
func New(p *producer.Producer, cfg Config) (*Producer, error) {
	if cfg.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("producer/audit: host name: %w", err)
		}
		cfg.Host = h
	}
	if len(cfg.Host) > audit.MaxHost {
		return nil, fmt.Errorf("producer/audit: host %q longer than %d bytes", cfg.Host, audit.MaxHost)
	}
	if cfg.Window == 0 {
		cfg.Window = time.Minute
	}
	if cfg.Window < time.Millisecond {
		return nil, fmt.Errorf("producer/audit: window %v: must be at least 1ms", cfg.Window)
	}
	if cfg.Topic == "" {
		cfg.Topic = audit.AuditTopic
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var sb [8]byte
	if _, err := rand.Read(sb[:]); err != nil {
		return nil, fmt.Errorf("producer/audit: session id: %w", err)
	}
	a := &Producer{p: p, cfg: cfg, session: binary.BigEndian.Uint64(sb[:]),
		seq: map[string]uint64{}, open: map[windowKey]*audit.Event{}, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	go a.loop(ctx)
	return a, nil
}

// Session returns the producer's session id, as its envelopes and events carry it.
func (a *Producer) Session() uint64 { return a.session }

// Host returns the host its envelopes carry.
func (a *Producer) Host() string { return a.cfg.Host }

// Send wraps each message's value in an envelope (creation time now, the
// host, the session and the topic's next sequence number), counts it in its
// window and sends the messages with the wrapped producer. Messages are
// counted whether or not the send succeeds: a failed send shows in the
// audit as missing, which it is unless the caller sends it again (as a new
// message).
func (a *Producer) Send(ctx context.Context, topic string, msgs ...producer.Message) error {
	return a.SendCreated(ctx, topic, nil, msgs...)
}

// SendCreated is Send for a caller that queues messages before sending
// them: created[i], when created is not nil, is when msgs[i] was created,
// and its envelope and window use that time instead of now. (0.7's async
// producer queues inside the producer, where Send's time is the creation
// time.) A window's event may then be published before every message of
// the window was sent; the rest go out in a second event for the same
// window, with its own first sequence number.
func (a *Producer) SendCreated(ctx context.Context, topic string, created []time.Time, msgs ...producer.Message) error {
	if topic == a.cfg.Topic {
		return fmt.Errorf("producer/audit: topic %q is the audit topic", topic)
	}
	if created != nil && len(created) != len(msgs) {
		return fmt.Errorf("producer/audit: %d creation times for %d messages", len(created), len(msgs))
	}
	out := make([]producer.Message, len(msgs))
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return producer.ErrClosed
	}
	now := a.cfg.Now()
	size := 0
	for i := range msgs {
		size += audit.Header{Host: a.cfg.Host}.Len() + len(msgs[i].Value)
	}
	buf := make([]byte, 0, size)
	seq := a.seq[topic]
	for i := range msgs {
		at := now
		if created != nil {
			at = created[i]
		}
		k := windowKey{topic, audit.Window(at, a.cfg.Window).UnixNano()}
		ev := a.open[k]
		if ev == nil || ev.First+ev.Count != seq {
			if ev != nil {
				// Sequence numbers of one event must be contiguous: a
				// message of an older window came between; publish this
				// part now and start another.
				a.due = append(a.due, ev)
			}
			ev = &audit.Event{Topic: topic, Host: a.cfg.Host, Session: a.session, Start: time.Unix(0, k.start), Length: a.cfg.Window, First: seq}
			a.open[k] = ev
		}
		h := audit.Header{Time: at, Session: a.session, Seq: seq, Host: a.cfg.Host}
		start := len(buf)
		var err error
		if buf, err = audit.AppendEnvelope(buf, h, msgs[i].Value); err != nil {
			a.mu.Unlock()
			return err
		}
		out[i] = producer.Message{Key: msgs[i].Key, Value: buf[start:len(buf):len(buf)]}
		ev.Count++
		seq++
	}
	a.seq[topic] = seq
	a.mu.Unlock()
	return a.p.Send(ctx, topic, out...)
}

// loop publishes the events of ended windows every tenth of a window.
func (a *Producer) loop(ctx context.Context) {
	defer close(a.done)
	t := time.NewTicker(max(a.cfg.Window/10, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.Publish(ctx, false); err != nil {
				a.cfg.Logger.Warn("audit: publishing monitoring events failed", "err", err)
			}
		}
	}
}

// Publish sends the monitoring events of every window that has ended (all
// of them when all is set, as Close does) to the audit topic, oldest first.
// An event that cannot be sent is kept and sent again next time.
func (a *Producer) Publish(ctx context.Context, all bool) error {
	a.pubMu.Lock()
	defer a.pubMu.Unlock()
	a.mu.Lock()
	now := a.cfg.Now()
	due := a.due
	a.due = nil
	for k, ev := range a.open {
		if all || !ev.Start.Add(ev.Length).After(now) {
			due = append(due, ev)
			delete(a.open, k)
		}
	}
	a.mu.Unlock()
	slices.SortFunc(due, func(x, y *audit.Event) int { return x.Start.Compare(y.Start) })
	var errs []error
	for i, ev := range due {
		b, err := audit.AppendEvent(nil, *ev)
		if err == nil {
			err = a.p.Send(ctx, a.cfg.Topic, producer.Message{Value: b})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("event for topic %s window %s: %w", ev.Topic, ev.Start.UTC().Format(time.RFC3339Nano), err))
			a.mu.Lock()
			a.due = append(a.due, due[i:]...)
			a.mu.Unlock()
			break
		}
	}
	return errors.Join(errs...)
}

// Close stops the publisher, publishes the events of every window, the
// current one included (nothing more will be counted in it), and closes the
// wrapped producer.
func (a *Producer) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	a.cancel()
	<-a.done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := a.Publish(ctx, true)
	return errors.Join(err, a.p.Close())
}
