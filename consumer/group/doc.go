// Package group is the high-level consumer of Kafka 0.7
// (ZookeeperConsumerConnector): consumers sharing a group id divide the
// partitions of their topics among themselves, each partition consumed by
// exactly one of them, and every group receives every message.
//
// Paper §3.2: each consumer registers itself in the consumer registry, and
// watches the broker and consumer registries; a change there starts the
// rebalance process, Algorithm 1, in which every consumer, from the same
// registry, sorts the partitions and the consumer threads and takes its
// range. The registry layout, the values and the algorithm are 0.7's (see
// package zkcoord); a 0.7 consumer can join the same group.
//
//	cfg := group.DefaultConfig()
//	cfg.GroupID, cfg.ZkConnect = "clicks-audit", "127.0.0.1:2181"
//	c, err := group.New(ctx, cfg, map[string]int{"clicks": 2}) // 2 streams
//	for _, s := range c.Streams("clicks") {
//		go func() {
//			for {
//				m, err := s.Next(ctx)
//				if err != nil { return }
//				use(m.Payload)
//			}
//		}()
//	}
//	...
//	c.Close()
//
// Wildcard subscriptions (0.7's createMessageStreamsByFilter) consume every
// topic a regular expression takes, topics created later included:
//
//	c, err := group.NewByFilter(ctx, cfg, group.Whitelist("clicks,views-.*"), 2)
//	for _, s := range c.FilterStreams() { // 2 streams, each of any topic
//		go func() { m, err := s.Next(ctx); use(m.Topic, m.Payload) }()
//	}
//
// Blacklist(regex) takes every topic that does not match. The consumer
// registers 0.7's "*2*clicks|views-.*" (or "!n!regex"), watches
// /brokers/topics, and a new topic the filter takes starts a rebalance that
// splits its partitions among the group's threads.
//
// Replicated topics (issue 12: 0.8's layout, /brokers/topics/<topic>
// holding the replica assignment) are consumed the same way. Each partition
// is one partition to Algorithm 1, named by its number as in 0.8
// (/consumers/<group>/offsets/<topic>/<partition>). Such partitions are
// fetched as Kafka 0.8's high-level consumer fetches them
// (ConsumerFetcherManager): a leader finder asks a broker for the leaders
// with METADATA, and one fetcher per leader broker pulls every partition
// that broker leads in one MULTIFETCH, on the consumer's one connection to
// it. When the leader fails or moves (a connection error, a refused fetch:
// NotLeaderForPartition, or an offset beyond that replica's end), the
// partition goes back to the finder, which hands it to its new leader's
// fetcher; it continues from its own position, without a rebalance. 0.7
// topics keep 0.7's fetchers: one per broker of the registry, for the
// partitions on it. See leaders.go for how this departs from 0.8.
//
// Delivery is at least once: offsets are committed to ZooKeeper every
// autocommit.interval.ms (and by Commit, at rebalances and at Close); after a
// crash a partition's next owner resumes from its last committed offset, so
// the messages consumed since are delivered again. A consumer beyond the
// number of partitions idles. Rewinding a group is resetting its offsets
// while it is stopped (kafka-offset-reset), paper §3.1.
package group
