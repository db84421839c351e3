package replica

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/zkcoord"
)

// Which topics are replicated: the layer's answer to the 2011 broker's
// question (broker.Layer.Owns, the produce gate), kept off the request path.

// Owns reports whether topic is replicated as far as this broker knows
// (broker.Layer): it holds a replica of it or was told about it.
func (m *Manager) Owns(topic string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.replicated[topic] {
		return true
	}
	for k := range m.parts {
		if k.topic == topic {
			return true
		}
	}
	return false
}

// plainTopicRefresh is how often the topics found without an assignment in
// ZooKeeper are looked up again (refreshReplicated), so that a replicated
// topic created under a name this broker keeps as a plain log is noticed.
const plainTopicRefresh = time.Second

// assignmentHook, when set (by tests), is called before the layer reads a
// topic's assignment from ZooKeeper.
var assignmentHook atomic.Pointer[func(topic string)]

// topicAssignment reads whether topic has a replica assignment in ZooKeeper.
func topicAssignment(zk *zkcoord.Conn, topic string) (bool, error) {
	if h := assignmentHook.Load(); h != nil {
		(*h)(topic)
	}
	_, ok, err := zkcoord.ReplicationOn(zk).TopicAssignment(topic)
	return ok, err
}

// isReplicated reports whether topic has a replica assignment in ZooKeeper
// (so a partition of it that this broker has not been told about must not
// be written as a plain 0.7 log). Only a topic the layer has not seen yet
// is looked up here; the answer for one seen is kept, and refreshed for one
// seen without an assignment by refreshReplicated, off the request path: a
// 0.7 PRODUCE to a plain topic never waits on ZooKeeper, as in 0.7 (paper
// §3.3: a broker serves producers whatever ZooKeeper does).
func (m *Manager) isReplicated(topic string) bool {
	m.mu.Lock()
	replicated, known := m.replicated[topic]
	zk := m.zk
	m.mu.Unlock()
	if known {
		return replicated
	}
	if zk == nil {
		return false
	}
	ok, err := topicAssignment(zk, topic)
	if err != nil {
		// ZooKeeper is unreachable. A topic this broker already keeps as a
		// plain 0.7 log stays writable, as in 0.7; for any other, refuse
		// rather than start an unreplicated copy of a replicated topic.
		_, local := m.cfg.Logs.Topics()[topic]
		return !local
	}
	m.noteAssignment(topic, ok)
	return ok
}

// noteAssignment records whether topic has a replica assignment; a topic
// once known replicated stays so.
func (m *Manager) noteAssignment(topic string, assigned bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replicated[topic] = m.replicated[topic] || assigned
}

// refreshReplicated looks up, every plainTopicRefresh until ctx ends, the
// topics seen without an assignment; a failed read keeps the last answer.
func (m *Manager) refreshReplicated(ctx context.Context, zk *zkcoord.Conn) {
	tick := time.NewTicker(plainTopicRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m.mu.Lock()
		var plain []string
		for topic, replicated := range m.replicated {
			if !replicated {
				plain = append(plain, topic)
			}
		}
		m.mu.Unlock()
		for _, topic := range plain {
			if ctx.Err() != nil {
				return
			}
			if ok, err := topicAssignment(zk, topic); err == nil {
				m.noteAssignment(topic, ok)
			}
		}
	}
}
