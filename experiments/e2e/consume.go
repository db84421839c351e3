package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

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
