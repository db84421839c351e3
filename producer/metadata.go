package producer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// topicMeta is what the producer knows of one topic from a METADATA
// answer (0.8's TopicMetadata): whether it is replicated and, if so, each
// partition's leader, leader epoch, replicas and ISR.
type topicMeta struct {
	// replicated is false for a topic without a 0.8 assignment (the broker
	// answered WrongPartition), or when no broker speaks the replication
	// layer's protocol: the topic is a 0.7 topic.
	replicated bool
	// parts are the partitions, sorted by number.
	parts []wire.PartitionMetadata
	// addrs are the addresses of the live brokers the answer listed.
	addrs map[wire.BrokerID]string
	// fetched is when the answer came.
	fetched time.Time
	// guessed says no broker answered: every broker reached closed the
	// connection (brokers without the replication layer, or a broker that
	// failed under the request), and the topic is taken as a 0.7 topic for
	// at most guessTTL.
	guessed bool
}

// guessTTL bounds how long a topic is taken as a 0.7 topic because no
// broker answered METADATA, so that a replicated topic taken for one while
// its brokers failed is found again soon.
const guessTTL = 10 * time.Second

// leader returns the leader of a partition and its address, or an error
// wrapping wire.ErrLeaderNotAvailable.
func (t *topicMeta) leader(partition wire.Partition) (wire.BrokerID, string, error) {
	i, ok := slices.BinarySearchFunc(t.parts, partition, func(pm wire.PartitionMetadata, p wire.Partition) int {
		return int(pm.Partition) - int(p)
	})
	if !ok {
		return -1, "", fmt.Errorf("%w: the metadata has no partition %d", wire.ErrLeaderNotAvailable, partition)
	}
	pm := &t.parts[i]
	if pm.Leader < 0 || pm.Code == wire.CodeLeaderNotAvailable {
		return pm.Leader, "", fmt.Errorf("%w (leader %d, isr %v)", wire.ErrLeaderNotAvailable, pm.Leader, pm.ISR)
	}
	addr, ok := t.addrs[pm.Leader]
	if !ok {
		return pm.Leader, "", fmt.Errorf("%w: leader %d is not among the live brokers", wire.ErrLeaderNotAvailable, pm.Leader)
	}
	return pm.Leader, addr, nil
}

// metadata caches the producer's topic metadata and refreshes it with
// METADATA requests to the bootstrap brokers (broker.list, or the live
// brokers of ZooKeeper's /brokers/ids), as 0.8's BrokerPartitionInfo does.
type metadata struct {
	p *Producer

	mu     sync.Mutex // guards topics
	topics map[string]*topicMeta

	fetching sync.Mutex // one METADATA exchange at a time
}

// get returns the topic's metadata: the cached answer unless it is older
// than topic.metadata.refresh.interval.ms or force is set (after a
// failure), else a fresh one.
func (m *metadata) get(ctx context.Context, topic string, force bool) (*topicMeta, error) {
	asked := time.Now()
	if tm := m.cached(topic); tm != nil && !force {
		maxAge := m.p.cfg.TopicMetadataRefreshInterval
		if tm.guessed {
			maxAge = min(maxAge, guessTTL)
		}
		if asked.Sub(tm.fetched) < maxAge {
			return tm, nil
		}
	}
	m.fetching.Lock()
	defer m.fetching.Unlock()
	// Another caller may have refreshed it while this one waited.
	if tm := m.cached(topic); tm != nil && tm.fetched.After(asked) {
		return tm, nil
	}
	tm, err := m.fetch(ctx, topic)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.topics[topic] = tm
	m.mu.Unlock()
	return tm, nil
}

func (m *metadata) cached(topic string) *topicMeta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.topics[topic]
}

// forget drops what is known of a topic, so that the next send asks again.
func (m *metadata) forget(topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.topics, topic)
}

// endpoint is a broker id and address to ask for metadata.
type endpoint struct {
	id   wire.BrokerID
	addr string
}

// bootstrap lists the brokers to ask for a topic's metadata, in random
// order (0.8 shuffles broker.list): the Cluster's brokers (broker.list, or
// the live brokers of /brokers/ids), then those the last answers named.
func (m *metadata) bootstrap(topic string) []endpoint {
	seen := map[wire.BrokerID]bool{}
	var out []endpoint
	add := func(id wire.BrokerID, addr string) {
		if !seen[id] && addr != "" {
			seen[id] = true
			out = append(out, endpoint{id, addr})
		}
	}
	if l, ok := m.p.cluster.(interface{ Brokers() []wire.Broker }); ok {
		for _, b := range l.Brokers() {
			add(b.ID, b.Addr())
		}
	} else {
		for _, bp := range m.p.cluster.Partitions(topic) {
			addr, _ := m.p.cluster.BrokerAddr(bp.Broker)
			add(bp.Broker, addr)
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	m.mu.Lock()
	for _, tm := range m.topics {
		for id, addr := range tm.addrs {
			add(id, addr)
		}
	}
	m.mu.Unlock()
	return out
}

// fetch asks the bootstrap brokers, one after the other, for the topic's
// metadata until one answers. A broker that closes the connection instead
// of answering has no replication layer (a 2011 broker); when every broker
// reached does so, the topic is a 0.7 topic.
func (m *metadata) fetch(ctx context.Context, topic string) (*topicMeta, error) {
	frame := wire.AppendMetadataRequest(nil, &wire.MetadataRequest{Topics: []string{topic}})
	brokers := m.bootstrap(topic)
	if len(brokers) == 0 {
		return nil, fmt.Errorf("%w %q (no broker to ask for its metadata)", ErrNoBrokers, topic)
	}
	var errs []error
	reached, noLayer := 0, 0
	for _, b := range brokers {
		code, body, err := m.p.reqConn(b.id, b.addr).roundTrip(ctx, b.addr, frame, m.p.cfg.SocketTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			if !errors.Is(err, errConnect) {
				reached++
			}
			if errors.Is(err, errNoAnswer) {
				noLayer++
			}
			errs = append(errs, err)
			continue
		}
		reached++
		if code != wire.CodeNone {
			errs = append(errs, fmt.Errorf("producer: broker %d (%s) refused METADATA: %w", b.id, b.addr, code.Err()))
			continue
		}
		tm, err := parseMetadata(topic, body)
		if err != nil {
			errs = append(errs, fmt.Errorf("producer: broker %d (%s): %w", b.id, b.addr, err))
			continue
		}
		m.p.log.Debug("producer: metadata", "topic", topic, "from", b.id, "replicated", tm.replicated, "partitions", len(tm.parts))
		return tm, nil
	}
	if reached > 0 && noLayer == reached {
		m.p.log.Info("producer: no broker answers METADATA; taking the topic as a 0.7 topic", "topic", topic)
		return &topicMeta{fetched: time.Now(), guessed: true}, nil
	}
	return nil, fmt.Errorf("producer: no broker answered METADATA for topic %s: %w", topic, errors.Join(errs...))
}

// parseMetadata decodes a METADATA answer's body and takes out the topic.
func parseMetadata(topic string, body []byte) (*topicMeta, error) {
	md, err := wire.DecodeMetadataResponse(body)
	if err != nil {
		return nil, fmt.Errorf("bad METADATA answer: %w", err)
	}
	tm := &topicMeta{addrs: make(map[wire.BrokerID]string, len(md.Brokers)), fetched: time.Now()}
	for _, e := range md.Brokers {
		tm.addrs[e.ID] = e.Addr()
	}
	for _, t := range md.Topics {
		if t.Topic != topic {
			continue
		}
		switch t.Code {
		case wire.CodeNone:
		case wire.CodeWrongPartition:
			return tm, nil // no 0.8 assignment: a 0.7 topic
		default:
			return nil, fmt.Errorf("METADATA for topic %s: %w", topic, t.Code.Err())
		}
		if len(t.Partitions) == 0 {
			return nil, fmt.Errorf("METADATA for topic %s: %w: no partitions", topic, wire.ErrLeaderNotAvailable)
		}
		tm.replicated = true
		tm.parts = slices.Clone(t.Partitions)
		slices.SortFunc(tm.parts, func(a, b wire.PartitionMetadata) int { return int(a.Partition) - int(b.Partition) })
		for i := 1; i < len(tm.parts); i++ {
			if tm.parts[i].Partition == tm.parts[i-1].Partition {
				return nil, fmt.Errorf("METADATA for topic %s lists partition %d twice", topic, tm.parts[i].Partition)
			}
		}
		return tm, nil
	}
	return nil, fmt.Errorf("METADATA answer does not mention topic %s", topic)
}
