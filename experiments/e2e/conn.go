package e2e

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// dial connects to a broker at addr within timeout.
func dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	return nc, nil
}

// reader reads responses (size, error code, body) from one connection into
// a reused buffer.
type reader struct {
	nc   net.Conn
	resp wire.ResponseReader
}

// maxResponse bounds a response (a 1 MiB fetch and its header).
const maxResponse = 2 << 20

// read reads the next response; more requests may be in flight.
func (r *reader) read() (wire.ErrorCode, []byte, error) {
	code, body, err := r.resp.ReadResponse(r.nc, maxResponse)
	if err != nil {
		return 0, nil, fmt.Errorf("e2e: %w", err)
	}
	return code, body, nil
}

// roundTrip sends one request, the only one in flight, and reads its
// response, both before deadline.
func (r *reader) roundTrip(frame []byte, deadline time.Time) (wire.ErrorCode, []byte, error) {
	code, body, err := r.resp.RoundTrip(r.nc, frame, deadline, maxResponse)
	if err != nil {
		return 0, nil, fmt.Errorf("e2e: %w", err)
	}
	return code, body, nil
}

// roundTrip sends one request on a fresh connection.
func roundTrip(ctx context.Context, addr string, frame []byte, timeout time.Duration) (wire.ErrorCode, []byte, error) {
	nc, err := dial(ctx, addr, timeout)
	if err != nil {
		return 0, nil, err
	}
	defer nc.Close()
	rd := &reader{nc: nc}
	return rd.roundTrip(frame, time.Now().Add(timeout))
}

// findLeader asks the broker for the partition's leader, until one is
// there or the timeout passes.
func findLeader(ctx context.Context, cfg Config) (wire.BrokerID, string, error) {
	deadline := time.Now().Add(cfg.Timeout)
	for {
		id, addr, err := leaderOnce(ctx, cfg)
		if err == nil || time.Now().After(deadline) {
			return id, addr, err
		}
		select {
		case <-ctx.Done():
			return 0, "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func leaderOnce(ctx context.Context, cfg Config) (wire.BrokerID, string, error) {
	code, body, err := roundTrip(ctx, cfg.Broker, wire.AppendMetadataRequest(nil, &wire.MetadataRequest{Topics: []string{cfg.Topic}}), cfg.Timeout)
	if err != nil {
		return 0, "", err
	}
	if code != wire.CodeNone {
		return 0, "", fmt.Errorf("e2e: metadata: %w", code.Err())
	}
	md, err := wire.DecodeMetadataResponse(body)
	if err != nil {
		return 0, "", fmt.Errorf("e2e: metadata: %w", err)
	}
	for _, t := range md.Topics {
		if t.Topic != cfg.Topic {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition != cfg.Partition || p.Code != wire.CodeNone || p.Leader < 0 {
				continue
			}
			for _, b := range md.Brokers {
				if b.ID == p.Leader {
					addr := net.JoinHostPort(b.Host, fmt.Sprint(b.Port))
					return b.ID, addr, leads(ctx, addr, cfg)
				}
			}
		}
	}
	return 0, "", fmt.Errorf("e2e: %s-%d has no live leader yet", cfg.Topic, cfg.Partition)
}

// leads checks that the broker at addr has taken the leadership the
// metadata names: metadata is read from ZooKeeper, where the controller
// writes a new leader before its LEADER_AND_ISR reaches that broker, which
// until then refuses produce requests. OFFSETS changes nothing and is
// refused (NotLeaderForPartition) by a broker that does not lead the
// partition; it is a client's request, served on the client port (the
// cluster's own, such as OFFSET_FOR_LEADER_EPOCH, are not).
func leads(ctx context.Context, addr string, cfg Config) error {
	_, err := latestOffset(ctx, addr, cfg)
	if err != nil {
		return fmt.Errorf("e2e: %s-%d at %s: %w", cfg.Topic, cfg.Partition, addr, err)
	}
	return nil
}

// latestOffset asks the leader where its consumers' view ends now.
func latestOffset(ctx context.Context, addr string, cfg Config) (wire.Offset, error) {
	code, body, err := roundTrip(ctx, addr, wire.AppendRequest(nil, &wire.Request{Type: wire.RequestOffsets,
		Offsets: &wire.OffsetsRequest{Topic: cfg.Topic, Partition: cfg.Partition, Time: wire.LatestTime, MaxOffsets: 1}}), cfg.Timeout)
	if err != nil {
		return 0, err
	}
	if code != wire.CodeNone {
		return 0, fmt.Errorf("e2e: offsets: %w", code.Err())
	}
	offs, err := wire.DecodeOffsetsResponse(body)
	if err != nil {
		return 0, fmt.Errorf("e2e: offsets: %w", err)
	}
	if len(offs) == 0 {
		return 0, nil
	}
	return offs[0], nil
}
