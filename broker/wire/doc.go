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
package wire
