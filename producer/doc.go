// Package producer publishes messages to Kafka 0.7 brokers, as Kafka 0.7's
// kafka.producer.Producer does: a static broker.list (or another Cluster,
// such as the ZooKeeper registry), a pluggable Partitioner, sync and async
// modes, and gzip or snappy compression per topic; and, with 0.8's
// request.required.acks, to the leaders of replicated topics
// (broker/replica), waiting for their acknowledgements.
//
// Paper §3 and §3.1: a producer can send a set of messages in a single
// publish request; the broker appends the set as it is. A PRODUCE request has no
// response, so a send is complete when its bytes are written to the socket.
//
// # Sync mode (producer.type=sync)
//
// Each Send writes one request per broker it touches: PRODUCE when all its
// messages go to one partition, MULTIPRODUCE otherwise. Errors are returned.
//
// # Async mode (producer.type=async)
//
// Send puts the messages on a bounded queue per broker (queue.size) and
// returns. A goroutine per broker sends a MULTIPRODUCE, grouped by (topic,
// partition), as soon as batch.size messages wait or queue.time has passed
// since its last send. A full queue makes Send fail with ErrQueueFull
// (queue.enqueueTimeout.ms=0), wait (>0) or block (<0). Send errors go to
// Config.ErrorHandler, and Close returns the first one.
//
// # Choosing a partition (0.7's Producer.zkSend and configSend)
//
// Cluster.Partitions gives the sorted (broker, partition) list of a topic.
// The unkeyed messages of one Send go together to one entry picked at random
// (0.7 sends a ProducerData with a null key to one random partition); a keyed
// message goes to entry Partitioner.Partition(key, len(list)). With a static
// broker.list every broker has the single entry (id, -1): 0.7's configSend
// picks a broker at random, key or not, and lets it choose the partition
// (-1); this package does the same.
//
// # Acknowledgements (request.required.acks; Kafka 0.8)
//
// The paper's Kafka keeps one copy of a partition and its PRODUCE has no
// answer (§3.3 leaves replication to future work). The replication layer
// (broker/replica) keeps each partition of a replicated topic on a leader and
// followers; Config.RequiredAcks says how much of that a send waits for, with
// 0.8's values (producer configs, kafka.apache.org/082/configuration):
//
//   - 0, the default: no acknowledgement. It is this package's 0.7 producer,
//     unchanged: no metadata, 0.7's PRODUCE and MULTIPRODUCE, the Confirm
//     round trip. What it guarantees is 0.7's: a server that fails may lose
//     what it took (0.8's docs: "the weakest durability guarantees").
//   - 1: the leader appended the messages. A leader that dies before its
//     followers copy them loses them ("only messages that were written to
//     the now-dead leader but not yet replicated will be lost").
//   - -1 (or "all"): every replica in the ISR holds them; the leader answers
//     once the high watermark passes their end. They survive as long as one
//     in-sync replica does, and the modern design summary
//     (shared/paper/000_*) pairs it with min.insync.replicas=2, so that a
//     write lives on two brokers before it counts: the leader refuses an
//     acks=-1 send, before appending, while the ISR is smaller
//     (NotEnoughReplicas).
//
// With 1 or -1, the producer asks a broker for the topic's METADATA
// (partitions, leaders, replicas, ISR, leader epochs): one of broker.list,
// or with zk.connect one of the live brokers of /brokers/ids, tried in
// random order as 0.8 does with metadata.broker.list. A topic with a 0.8
// assignment (/brokers/topics/T holding {"partitions":...}) is sent to each
// partition's leader in PRODUCE_ACKS requests, one per leader per Send (or
// async batch), whose answer is the send's confirmation, in place of the
// OFFSETS round trip of Config.Confirm. A topic without one (the broker
// answers WrongPartition) is a 0.7 topic: its one copy is its ISR, so the
// 0.7 path with the round trip after every request gives what acks 1 and
// -1 ask; so it does when no broker speaks the replication layer's
// protocol (a 2011 broker closes the connection of a METADATA request).
// As the user asked for copies and gets one, the producer says so once per
// topic (Config.OnNotReplicated, and a warning in its log).
// With acks=0 and zk.connect, a topic ZooKeeper shows replicated is sent to
// its leaders too (PRODUCE_ACKS with acks 0, which this broker answers after
// the append), since 0.7's registry does not list its partitions.
//
// A partition is chosen as in 0.7: the unkeyed messages of a Send go
// together to one partition picked at random among those that have a
// leader; a keyed one to Partitioner.Partition(key, number of partitions).
//
// # Retries (message.send.max.retries, retry.backoff.ms)
//
// A part of a request that fails with NotLeaderForPartition,
// LeaderNotAvailable, a fenced or unknown leader epoch, NotEnoughReplicas or
// RequestTimedOut, or whose leader cannot be reached or closes the
// connection, is sent again after retry.backoff.ms and a metadata refresh,
// to the leader the new metadata names, up to message.send.max.retries
// times (0.8's DefaultEventHandler). Then the Send fails with a
// *ProduceError naming the broker, topic, partition, attempts and cause
// (errors.Is(err, wire.ErrNotEnoughReplicas) and so on); in async mode the
// messages are counted as not delivered (Stats, Close's *LossError) and
// reported to Config.ErrorHandler. Retrying a request whose answer was
// lost or timed out may write it twice: an acknowledged message is never
// lost while an in-sync replica lives, but it may appear more than once
// (at least once, as in 0.8).
//
// NotEnoughReplicas is retried (0.8.2's producer takes it as retriable
// too): the leader appended nothing, so a retry cannot duplicate, and the
// ISR may grow back meanwhile; after the retries the caller gets it.
// Deviation: NotEnoughReplicasAfterAppend is not retried, though 0.8.2's
// Java producer retries it: the messages are in the leader's log and the
// caller is told so, rather than have them written twice.
//
// Deviation: 0.8's acks=0 sends to the leaders the metadata names. Here
// acks=0 with broker.list is the 0.7 producer, which asks no metadata (a 0.7
// PRODUCE that reaches a follower of a replicated partition is refused,
// the connection closed, and the Send fails with ErrNotConfirmed under
// confirm=send); use zk.connect, or acks 1 or -1, for replicated topics.
//
// # Speed
//
// Requests are built straight into pooled buffers (no per-message
// allocation) and written with one write each.
package producer
