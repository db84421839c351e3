package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/netdb11/kafka/broker/wire"
)

// maxMetadataResponse bounds a METADATA answer.
const maxMetadataResponse = 16 << 20

// ErrNotReplicated: the topic has no replica assignment (a 0.7 topic, or
// none at all); its partitions are read from the brokers that hold them.
var ErrNotReplicated = errors.New("consumer: topic is not replicated")

// Metadata asks the broker, with the replication layer's METADATA request
// (0.8's TopicMetadataRequest, type 10), for the live brokers and each
// topic's partitions, leaders, replicas and ISRs (every replicated topic
// when topics is empty). A topic without a replica assignment comes back
// with Code WrongPartition. A broker without the replication layer (the
// 2011 broker, or a 0.7 one) closes the connection, as for any request
// type it does not know: the error then says so.
func (c *SimpleConsumer) Metadata(ctx context.Context, topics ...string) (*wire.MetadataResponse, error) {
	for _, t := range topics {
		if err := wire.ValidateTopic(t); err != nil {
			return nil, fmt.Errorf("consumer: %w", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	c.out = wire.AppendMetadataRequest(c.out[:0], &wire.MetadataRequest{Topics: topics})
	code, body, err := c.sendLocked(ctx, maxMetadataResponse)
	if err != nil {
		return nil, fmt.Errorf("consumer: metadata from %s (a broker without the replication layer closes the connection): %w", c.addr, err)
	}
	if code != wire.CodeNone {
		return nil, fmt.Errorf("consumer: metadata from %s: broker answered %v: %w", c.addr, code, code.Err())
	}
	md, err := wire.DecodeMetadataResponse(body)
	if err != nil {
		c.dropLocked("malformed response")
		return nil, fmt.Errorf("consumer: metadata from %s: %w: %v", c.addr, ErrProtocol, err)
	}
	return md, nil
}

// LeaderAddr finds a replicated partition's leader in a METADATA answer
// and returns its id and host:port. It fails with ErrNotReplicated when the
// topic has no assignment, and with wire.ErrLeaderNotAvailable when the
// partition has no live leader now.
func LeaderAddr(md *wire.MetadataResponse, topic string, partition wire.Partition) (wire.BrokerID, string, error) {
	for _, tm := range md.Topics {
		if tm.Topic != topic {
			continue
		}
		if tm.Code != wire.CodeNone || len(tm.Partitions) == 0 {
			return -1, "", fmt.Errorf("%w: %s (%v)", ErrNotReplicated, topic, tm.Code)
		}
		for _, pm := range tm.Partitions {
			if pm.Partition != partition {
				continue
			}
			if pm.Code != wire.CodeNone || pm.Leader < 0 {
				return -1, "", fmt.Errorf("consumer: %s-%d: %w", topic, partition, wire.ErrLeaderNotAvailable)
			}
			for _, b := range md.Brokers {
				if b.ID == pm.Leader {
					return b.ID, b.Addr(), nil
				}
			}
			return -1, "", fmt.Errorf("consumer: %s-%d: leader %d is not among the live brokers: %w", topic, partition, pm.Leader, wire.ErrLeaderNotAvailable)
		}
		return -1, "", fmt.Errorf("consumer: %s has no partition %d: %w", topic, partition, wire.ErrWrongPartition)
	}
	return -1, "", fmt.Errorf("%w: %s (not in the answer)", ErrNotReplicated, topic)
}
