// Package zkcoord is the ZooKeeper coordination of Paper §3.2: there is no
// master; brokers and consumers coordinate through ZooKeeper, using Kafka
// 0.7's registry layout and values exactly, so that 0.7-era clients and tools
// can share a cluster with this implementation. It is the only package that
// imports the ZooKeeper client.
//
// The registry (paths relative to the chroot of zk.connect, "host:port/chroot"):
//
//	/brokers/ids/<brokerId>                              ephemeral  "creatorId:host:port"
//	                                                                 creatorId = "<host>-<ms since epoch>"
//	/brokers/topics/<topic>/<brokerId>                   ephemeral  partition count, decimal ("4")
//	/consumers/<group>/ids/<consumerId>                  ephemeral  `{ "<topic>": <streams> }`
//	                                                                 (or 0.7 wildcards "*<n>*<regex>", "!<n>!<regex>")
//	                                                                 consumerId = "<group>_<host>-<ms>-<8 hex>"
//	/consumers/<group>/owners/<topic>/<brokerId>-<part>  ephemeral  owner thread id "<consumerId>-<n>"
//	/consumers/<group>/offsets/<topic>/<brokerId>-<part> persistent next offset to consume, decimal
//
// The replication layer (broker/replica) adds Kafka 0.8's nodes beside these:
// a topic's assignment as the data of /brokers/topics/<topic>, partition
// states under /brokers/topics/<topic>/partitions, /controller,
// /controller_epoch and /admin; see replication.go. Its writes are
// conditional on the version read (GetVersion, SetIfVersion), and a
// controller's also on its epoch and on no broker having registered since
// it read the brokers: each registration sets /brokers/ids's (empty) data
// in the transaction that creates /brokers/ids/<brokerId>, moving its
// version (Replication.SeenRegistrations). A consumer
// group names a replicated topic's partition by its number, as 0.8 does
// (/consumers/<group>/owners/<topic>/<part>, .../offsets/<topic>/<part>;
// see groupreplicated.go), since its leader moves between brokers.
//
// Pieces:
//   - Conn: one session per component. Watches and session changes are
//     delivered in order on a channel read by the component's single event
//     loop; after an expiry the component re-registers what it owns.
//   - BrokerRegistration: a broker's /brokers/ids and /brokers/topics nodes.
//   - Cluster: a producer's sorted (broker, partition) list per topic.
//   - Groups (GroupsOn): the group registry (members, ownership, offsets) and
//     Assign, the rebalance decision of Algorithm 1, for the group consumer.
//
// The package zktest starts or finds a real ZooKeeper for tests.
package zkcoord
