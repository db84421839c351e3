package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

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
