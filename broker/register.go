package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
)

// topicQueue holds topics created on this broker that still have to be
// registered. The log manager reports a new topic from a producer's
// goroutine; registration (a ZooKeeper round trip) happens on the broker's
// own goroutine so that the produce request does not wait for it, as Kafka
// 0.7's LogManager hands new topics to its zkActor.
type topicQueue struct {
	mu      sync.Mutex
	pending []newTopic    // guarded by mu
	wake    chan struct{} // capacity 1: pending is not empty
}

type newTopic struct {
	name       string
	partitions int
}

func (q *topicQueue) push(t newTopic) {
	q.mu.Lock()
	q.pending = append(q.pending, t)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *topicQueue) take() []newTopic {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.pending
	q.pending = nil
	return out
}

// registering reports whether the broker registers itself.
func (b *Broker) registering() bool {
	return b.cfg.UsesZookeeper() && b.cfg.Registrar != nil
}

// onNewTopic is the log manager's OnNewTopic.
func (b *Broker) onNewTopic(topic string, partitions int) {
	if b.registering() {
		b.topics.push(newTopic{topic, partitions})
	}
}

// registeredHost is the host put in the registry: hostname, or this
// machine's name (Kafka 0.7 uses InetAddress.getLocalHost).
func (b *Broker) registeredHost() string {
	if b.cfg.Hostname != "" {
		return b.cfg.Hostname
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}

// register registers the broker and the topics already on disk, then starts
// the goroutine (owned by wg, stopped by ctx) that registers new topics.
// Paper §3.2: each broker registers itself in the broker registry with its
// host name and port, and the topics and partitions it stores.
func (b *Broker) register(ctx context.Context, wg *sync.WaitGroup) error {
	if !b.cfg.UsesZookeeper() {
		return nil
	}
	r := b.cfg.Registrar
	if r == nil {
		b.log.Warn("enable.zookeeper is true but no registrar is configured; the broker is not registered", "zk.connect", b.cfg.ZkConnect)
		return nil
	}
	host := b.registeredHost()
	port := b.ln.Addr().(*net.TCPAddr).Port
	if err := r.Register(b.cfg.BrokerID, host, port); err != nil {
		return fmt.Errorf("broker: registering broker %d at %s:%d: %w", b.cfg.BrokerID, host, port, err)
	}
	topics := b.logs.Topics()
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		if err := r.RegisterTopic(t, topics[t]); err != nil {
			return fmt.Errorf("broker: registering topic %q: %w", t, err)
		}
	}
	b.log.Info("registered", "brokerid", b.cfg.BrokerID, "host", host, "port", port, "topics", len(names))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-b.topics.wake:
			}
			for _, t := range b.topics.take() {
				// As Kafka 0.7: log it and let it go.
				if err := r.RegisterTopic(t.name, t.partitions); err != nil {
					b.log.Error("registering a new topic", "topic", t.name, "err", err)
				}
			}
		}
	}()
	return nil
}
