// Package replica is the replication layer: each partition of a replicated
// topic has a leader and followers, an in-sync replica set (ISR) and a high
// watermark (HW), leaders are elected by a controller through ZooKeeper, and
// diverged followers truncate by leader epoch (KIP-101), all over the
// 2011 design's byte-offset logs.
//
// The paper's Kafka keeps one copy of each partition (paper §3.3 names
// replication as future work). This package adds the design of Kafka 0.8
// and later as a separate layer: the 2011 broker never imports it, and a
// topic with replication factor 1 behaves byte for byte as before.
//
// # Byte offsets stay
//
// Followers copy the leader's bytes verbatim, so every replica's log is
// byte-identical up to its end and an offset names the same message on
// every replica (as Kafka's first replication, KAFKA-46, did). Every fetch
// position and truncation point is a message boundary: a follower appends
// only complete messages, so its log end is a boundary; epoch starts are log
// ends; the HW is a follower's log end. The leader checks the message at a
// replica fetch's position and refuses one that does not start a message.
//
// # Pieces
//
//   - Epochs: the durable (leader epoch, start offset) list of a partition.
//   - LeaderState: the leader's follower LEOs, ISR and HW; pure logic.
//   - TruncationPoint: where a follower cuts its log for a new leader
//     (replica.truncation=epoch|hw).
//   - Manager: a broker's replicated partitions; the server's Extension
//     for requests 10-15 (METADATA, PRODUCE_ACKS, REPLICA_FETCH,
//     OFFSET_FOR_LEADER_EPOCH, LEADER_AND_ISR, STOP_REPLICA), the produce
//     gate and the HW bound on fetches; ISR shrinking and HW checkpoints.
//   - fetcher: a follower's copy loop for one partition.
//   - Candidate: the broker's controller candidate (package
//     broker/controller: elected through /controller; leader elections,
//     preferred replica elections and reassignments, as conditional writes
//     and orders), run by the Manager on the broker's one ZooKeeper session.
//   - AssignReplicas: 0.8's spreading of replicas for kafka-topics.
//
// # Who may send the cluster's requests
//
// REPLICA_FETCH, OFFSET_FOR_LEADER_EPOCH, LEADER_AND_ISR and STOP_REPLICA
// come only through the broker's inter-broker listener (replica.port,
// published at /brokers/interbroker/<id>; the client port refuses them
// with ClusterAuthorizationFailed). The controller's senders and the
// followers dial it (broker/controller, peer.For),
// over mutual TLS when Config.TLS is set (ssl.keystore.location,
// ssl.truststore.location; broker/clustertls), and the peer's certificate
// must name the broker a request claims to come from (Manager.authorize).
//
// paper/replication.md maps each rule to its code and tests.
package replica
