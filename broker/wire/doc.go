// Package wire is Kafka 0.7's byte format: messages, message sets, the request
// and response frames, and the table of error codes. It only deals in []byte
// and io; it knows nothing of files or sockets.
//
// Paper §3.1: "Each message is addressed by its logical offset in the log":
// the offset is a byte position, and the next message starts at
// offset + 4 + size. A message set is nothing but messages laid end to end, so
// the broker can store what the producer sent and send what it stored.
//
// # Message, magic 0 (uncompressed; 9 bytes of overhead, the paper's figure)
//
//	 0               4       5                9
//	+---------------+-------+---------------+----------------- - -
//	| size: int32   | magic | crc: uint32   | payload ...
//	| = 5 + len(p)  | = 0   | CRC-32 IEEE   | (size - 5 bytes)
//	+---------------+-------+---------------+----------------- - -
//
// # Message, magic 1 (carries attributes; used for compressed messages)
//
//	 0               4       5       6               10
//	+---------------+-------+-------+---------------+--------- - -
//	| size: int32   | magic | attrs | crc: uint32   | payload ...
//	| = 6 + len(p)  | = 1   | int8  | CRC-32 IEEE   | (size - 6 bytes)
//	+---------------+-------+-------+---------------+--------- - -
//
// The low two bits of attrs are the codec: 0 none, 1 gzip, 2 snappy. A
// compressed message's payload is a whole message set, compressed. The CRC
// covers the payload only. All integers are big-endian.
//
// # Message set
//
//	+-----------+-----------+-----------+- - -
//	| message 0 | message 1 | message 2 |
//	+-----------+-----------+-----------+- - -
//	^offset o   ^o+4+size0
//
// A fetch response may end in the middle of a message; the reader stops
// cleanly there and fetches again from the last complete message's end.
//
// # Request frame (client to broker)
//
//	+--------------+--------------+----------------- - -
//	| size: int32  | type: int16  | body (size - 2 bytes)
//	+--------------+--------------+----------------- - -
//
// Strings are an int16 length followed by UTF-8 bytes. The bodies:
//
//	0 PRODUCE       topic:string partition:int32 setSize:int32 set   (no response)
//	1 FETCH         topic:string partition:int32 offset:int64 maxSize:int32
//	2 MULTIFETCH    count:int16 then count FETCH bodies
//	3 MULTIPRODUCE  count:int16 then count PRODUCE bodies             (no response)
//	4 OFFSETS       topic:string partition:int32 time:int64 maxOffsets:int32
//
// # Response frame (broker to client)
//
//	+--------------+--------------+----------------- - -
//	| size: int32  | error: int16 | body (size - 2 bytes)
//	+--------------+--------------+----------------- - -
//
//	FETCH       body = message set bytes
//	MULTIFETCH  body = per fetch: size:int32 error:int16 set (size - 2 bytes)
//	OFFSETS     body = count:int32 then count int64 offsets
//
// Every client reads response frames with one ResponseReader (roundtrip.go):
// the size field bounded by what the request can bring back, one buffer
// reused, and RoundTrip's deadline over the write and the read. A broker
// answers one connection's requests in order, so a client may pipeline them
// (ReadResponse) or send one at a time (Exchange, which reads ahead).
//
// # Replication requests (broker/replica; not in 0.7)
//
// The replication layer adds request types 10 to 15 in the same frames. Every
// one of them has a response whose error code says what went wrong
// (NotLeaderForPartition, NotEnoughReplicas, StaleControllerEpoch, ...). An
// array is a count (int16, or int32 where marked [32]) and its elements.
//
//	10 METADATA          topics:[string]
//	11 PRODUCE_ACKS      acks:int16 timeoutMs:int32 parts:[PRODUCE body]
//	12 REPLICA_FETCH     replicaId:int32 maxWaitMs:int32 topic:string partition:int32
//	                     leaderEpoch:int32 offset:int64 maxSize:int32
//	13 OFFSET_FOR_LEADER_EPOCH  topic:string partition:int32 currentLeaderEpoch:int32 leaderEpoch:int32
//	14 LEADER_AND_ISR    controllerId:int32 controllerEpoch:int32
//	                     partitions:[topic:string partition:int32 leader:int32 leaderEpoch:int32
//	                                 zkVersion:int32 isr:[32]int32 replicas:[32]int32]
//	                     leaders:[id:int32 host:string port:int32]
//	15 STOP_REPLICA      controllerId:int32 controllerEpoch:int32 delete:int8
//	                     partitions:[topic:string partition:int32]
//
// Response bodies (after size and error):
//
//	METADATA          brokers:[32](id:int32 host:string port:int32)
//	                  topics:[32](topic:string error:int16
//	                      partitions:[32](partition:int32 error:int16 leader:int32 leaderEpoch:int32
//	                                      replicas:[32]int32 isr:[32]int32))
//	PRODUCE_ACKS      results:[topic:string partition:int32 error:int16 offset:int64]
//	REPLICA_FETCH     hw:int64 leo:int64 epochs:[epoch:int32 start:int64] set
//	OFFSET_FOR_LEADER_EPOCH  epoch:int32 endOffset:int64
//	LEADER_AND_ISR, STOP_REPLICA  partitions:[topic:string partition:int32 error:int16]
//
// A REPLICA_FETCH response is laid out like a FETCH response with a fixed
// part before the set, so the leader sends the set with sendfile:
//
//	+-----------+-----------+---------+---------+-----------+- - - - - - - -+---------- - -
//	| size:int32| error:int16| hw:int64| leo:int64| n:int16  | n × (epoch,   | message set
//	|           |           |         |         |           |  start) 12 B  | (may end mid-message)
//	+-----------+-----------+---------+---------+-----------+- - - - - - - -+---------- - -
//
// The epoch marks are the leader's (epoch, start offset) pairs that start
// inside the returned bytes, plus the one covering their first byte: the
// follower records them in its own leader-epoch file as it appends.
package wire
