// Package consumer reads messages from Kafka 0.7 brokers. SimpleConsumer is
// 0.7's kafka.javaapi.consumer.SimpleConsumer: one connection to one broker,
// FETCH, MULTIFETCH and OFFSETS requests, and message sets whose iterator
// decompresses, checks every CRC and yields each message with the offset to
// fetch next. The group consumer (ZooKeeper, rebalancing) lives in
// consumer/group and is built on it.
//
// Paper §3.1: the broker keeps no state about consumers; "a consumer always
// consumes messages from a particular partition sequentially", each pull
// request giving "the offset of the message from which the consumption
// begins and an acceptable number of bytes to fetch", and the consumer
// computes the next offset itself. Rewinding is fetching from an earlier
// offset (paper §3.1, stateless broker).
//
//	c, err := consumer.NewSimpleConsumer("127.0.0.1:9092", consumer.DefaultConfig())
//	offset := int64(0)
//	for {
//		set, err := c.Fetch(ctx, "clicks", 0, offset, 0) // 0: fetch.size
//		if err != nil { ... }
//		it := set.Iterator()
//		for it.Next() {
//			use(it.Payload())
//			offset = it.NextOffset()
//		}
//		if err := it.Err(); err != nil { ... } // corrupt, or too large
//	}
//
// # Replicated topics
//
// Against brokers with the replication layer (issue 12), Metadata sends
// 0.8's METADATA request and LeaderAddr picks a partition's leader from the
// answer; FETCH and OFFSETS work on a replicated partition's leader as on
// any broker (the leader serves up to the high watermark). A SimpleConsumer
// does not follow leaders by itself: kafka-console-consumer and the group
// consumer do.
//
// # Speed
//
// A SimpleConsumer reads each response into one reused buffer, and the
// iterator's payloads alias it: no copy and no allocation per message. The
// price is that a MessageSet is valid only until the next request on the
// same SimpleConsumer; Clone it to keep it longer.
package consumer
