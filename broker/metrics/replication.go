package metrics

import (
	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// ReplicationSource is what the replication layer (broker/replica's
// Manager) reports of itself: the partitions this broker leads with fewer
// in-sync replicas than replicas, and its counts of ISR shrinks and
// expands (as leader) and leader elections (as controller).
type ReplicationSource interface {
	ReplicationStats() (underReplicated int, isrShrinks, isrExpands, leaderElections uint64)
}

// ReplicaDetails is what the replication layer (broker/replica's Manager)
// tells of one partition: its replication state (ok false for a partition
// it does not manage).
type ReplicaDetails interface {
	ReplicaInfo(topic string, partition wire.Partition) (*admin.Replication, bool)
}

// AddReplication adds the replication layer's series, read from src at
// each scrape, and, if src is also a ReplicaDetails, each replicated
// partition's state to /admin/partitions/{topic}/{partition}. Call it at
// most once, before Handler.
func (m *Metrics) AddReplication(src ReplicationSource) {
	m.reg.MustRegister(&replicationCollector{src: src})
	if d, ok := src.(ReplicaDetails); ok {
		m.replicas = d
	}
}

var (
	underReplicatedDesc = prometheus.NewDesc(Namespace+"_replica_under_replicated_partitions", "Partitions this broker leads whose in-sync replica set is smaller than their replica set.", nil, nil)
	isrShrinksDesc      = prometheus.NewDesc(Namespace+"_replica_isr_shrinks_total", "In-sync replica sets this broker shrank as leader.", nil, nil)
	isrExpandsDesc      = prometheus.NewDesc(Namespace+"_replica_isr_expands_total", "In-sync replica sets this broker expanded as leader.", nil, nil)
	electionsDesc       = prometheus.NewDesc(Namespace+"_replica_leader_elections_total", "Leaders this broker chose as controller (a failed leader replaced, or the preferred replica restored).", nil, nil)
)

type replicationCollector struct{ src ReplicationSource }

func (c *replicationCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{underReplicatedDesc, isrShrinksDesc, isrExpandsDesc, electionsDesc} {
		ch <- d
	}
}

func (c *replicationCollector) Collect(ch chan<- prometheus.Metric) {
	under, shrinks, expands, elections := c.src.ReplicationStats()
	ch <- prometheus.MustNewConstMetric(underReplicatedDesc, prometheus.GaugeValue, float64(under))
	ch <- prometheus.MustNewConstMetric(isrShrinksDesc, prometheus.CounterValue, float64(shrinks))
	ch <- prometheus.MustNewConstMetric(isrExpandsDesc, prometheus.CounterValue, float64(expands))
	ch <- prometheus.MustNewConstMetric(electionsDesc, prometheus.CounterValue, float64(elections))
}
