// Package producer publishes messages to Kafka 0.7 brokers, as Kafka 0.7's
// kafka.producer.Producer does: a static broker.list (or another Cluster,
// such as the ZooKeeper registry), a pluggable Partitioner, sync and async
// modes, and gzip or snappy compression per topic.
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
// # Speed
//
// Requests are built straight into pooled buffers (no per-message
// allocation) and written with one write each.
package producer
