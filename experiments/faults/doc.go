// Package faults breaks a cluster on purpose and checks what it promised:
// the fault suite behind kafka-faults (paper/faults.md).
//
// The 2011 paper promises little when things break (§3.3): at-least-once
// delivery, and a broker that is down takes its partitions, and what it had
// not flushed, with it. The replication layer (broker/replica) promises that,
// with acks=all, min.insync.replicas=2 and clean elections, no acknowledged
// message is lost. A suite run is a matrix of trials, nemesis × configuration
// (SuiteConfig, RunSuite); each trial (RunTrial) is:
//
//   - a fresh emulated testbed (scripts/testbed.sh: one network namespace per
//     host) with ZooKeeper and kafka-server processes started through
//     experiments/kit (Cluster, cluster.go);
//   - a workload of producers and consumers that records every send,
//     acknowledgement and poll (workload.go, record.go);
//   - a nemesis, one fault or a compound schedule of several (nemesis.go,
//     compound.go): kills, pauses, network splits and one-way cuts (iptables
//     in the namespaces), ZooKeeper outages, power loss (the unflushed tail
//     of a log dropped, power.go), full disks, retention jumps and admin
//     operations under load;
//   - while it runs, the replication invariants of the TLA+ model (StrongIsr,
//     a high watermark that never goes back within an epoch, one leader per
//     epoch) polled from ZooKeeper and the brokers' admin endpoints
//     (invariant.go);
//   - after the heal, final reads of every partition from every replica, and
//     the checker (package check) over the history, which names anomalies as
//     Jepsen's Kafka workload does (lost-write, duplicate, nonmonotonic-send,
//     inconsistent-offsets, ...) and counts a trial whose final reads did not
//     finish as invalid, never valid.
//
// Reports (report.go, figure.go) give per cell the anomaly counts and the
// availability; a trial replays from its seed.
package faults
