package experiments

import (
	"context"
	"fmt"
	"strconv"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
)

// The replication part's names and programs.
const (
	replicationExp results.Experiment = "replication"
	kafkaTopicsBin                    = "kafka-topics"
	e2eLatencyBin                     = "kafka-e2e-latency"
)

// replicationPart measures what replication costs (the chapter the paper's
// §3.3 left as future work, paper/replication.md): three kafka-server
// processes sharing a ZooKeeper chroot, topics created with kafka-topics with
// one and with three replicas, and kafka-e2e-latency producing to the
// leader. Throughput: as fast as 4 and 32 producer connections with one
// request of 50 messages in flight each allow, for RF=1, RF=3 with acks=1 and RF=3
// with acks=all, interleaved in every repetition so that each ratio compares
// runs made at the same moment. Latency: at fixed offered loads, the time
// from sending each message to its acknowledgement and to a consumer polling
// the leader receiving it. On the paper testbed (--testbed=paper, issue 13)
// each broker runs on a broker host of its own, with ZooKeeper and the
// clients on the client host.
var replicationPart = part{
	name:     replicationExp,
	ablation: true,
	optIn:    true,
	steps:    replicationSteps,
	binaries: func(Config) []string { return []string{kafkaTopicsBin, e2eLatencyBin} },
	section: report.Section{
		Has: func(set *results.Set) bool {
			return len(set.Select(results.Key{System: results.Kafka, Experiment: replicationExp})) > 0
		},
		Figures: []report.Figure{{File: "fig-replication.png", Title: "Replication: throughput against RF=1, and end-to-end latency at fixed offered loads", Build: replicationFigure}},
		Write:   writeReplication,
	},
}

// replConf is one configuration of the part: replicas and acks.
type replConf struct {
	rf   int
	acks int16
}

// replConfs are the part's configurations, in the order each repetition
// runs them.
var replConfs = []replConf{{1, wire.AcksLeader}, {3, wire.AcksLeader}, {3, wire.AcksAll}}

func (c replConf) acksName() string {
	if c.acks == wire.AcksAll {
		return "all"
	}
	return strconv.Itoa(int(c.acks))
}

func (c replConf) String() string { return fmt.Sprintf("RF=%d acks=%s", c.rf, c.acksName()) }

// topic is the topic of c's replication factor (both RF=3 configurations
// write to the same one).
func (c replConf) topic(phase string) string { return fmt.Sprintf("repl-%s-rf%d", phase, c.rf) }

func (c replConf) throughputVariant(conns int) results.Variant {
	return results.Setting("replicas/acks/connections", fmt.Sprintf("%d/%s/%d", c.rf, c.acksName(), conns))
}

// replicationConnections are the producer connections of the throughput
// runs, one request in flight on each: RF=1 is as fast with 4 as with more,
// while replication's longer acknowledgements need more requests in flight
// to keep the leader busy (Kreps 2014's producer pipelined its requests).
var replicationConnections = []int{4, 32}

func (c replConf) latencyVariant(rate int) results.Variant {
	return results.Setting("replicas/acks/offered", fmt.Sprintf("%d/%s/%d", c.rf, c.acksName(), rate))
}

// replicationRates are the offered loads of the latency runs (messages/s).
var replicationRates = []int{10_000, 100_000}

func replicationSteps(l *lab) []step {
	secs := l.cfg.ReplicationSeconds
	// Throughput: the comparison's flushing (every 100,000 messages or
	// second), so that the producer is not held by fsync.
	tput := &replCluster{name: "throughput", props: map[string]string{}}
	// Latency: consumers see only flushed messages (paper §3.1), so the log
	// is flushed after every append, as with log.flush.interval=1.
	lat := &replCluster{name: "latency", props: map[string]string{"log.flush.interval": "1"}}
	var p []step
	for _, c := range []*replCluster{tput, lat} {
		label := "replication, " + c.name
		p = append(p, step{label: label + ": start ZooKeeper chroot, three brokers, topics", system: results.Kafka, run: func(ctx context.Context) error {
			return l.startReplCluster(ctx, c)
		}})
		if c == tput {
			for _, conns := range replicationConnections {
				for rep := 1; rep <= l.cfg.Repeats; rep++ {
					for _, conf := range replConfs {
						run := kafkaRun(replicationExp, conf.throughputVariant(conns), float64(conns), results.Produce, rep)
						p = append(p, l.replStep(fmt.Sprintf("%s: %v, %d connections (rep %d)", label, conf, conns, rep), c, conf, 0, conns, secs, run))
					}
				}
			}
		} else {
			for _, rate := range replicationRates {
				for rep := 1; rep <= l.cfg.Repeats; rep++ {
					for _, conf := range replConfs {
						run := kafkaRun(replicationExp, conf.latencyVariant(rate), float64(rate), results.Produce, rep)
						p = append(p, l.replStep(fmt.Sprintf("%s: %v at %d msg/s (rep %d)", label, conf, rate, rep), c, conf, rate, 1, secs, run))
					}
				}
			}
		}
		p = append(p, step{label: label + ": stop brokers", system: results.Kafka, run: func(context.Context) error { return c.stop() }})
	}
	return p
}
