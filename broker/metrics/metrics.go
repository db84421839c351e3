// Package metrics is the broker's view from outside: Prometheus series of
// what it does (bytes and messages in, bytes out, requests and their
// latency, flushes, segments, connections), and a read-only admin endpoint
// describing each partition's segment files and offsets, both served on one
// HTTP listener (metrics.listen).
//
// Kafka 0.7 exposed its counters as JMX MBeans (BrokerTopicStat,
// SocketServerStats, LogFlushStats); these are their counterparts in the
// form today's monitoring scrapes.
//
// # Cost
//
// Metrics implements server.Observer and log.Observer. The request path
// pays, per request, one lookup of the topic's counters in a copy-on-write
// map (no lock, no label hashing) and a few atomic adds; the per-topic
// counters are plain atomics turned into series only when scraped. A broker
// without metrics.listen has no Metrics: its server and logs test a nil
// observer and read no clock.
package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace prefixes every series.
const Namespace = "kafka"

// requestSlots is how many request types have their own series: 0.7's
// (0-4) and the replication layer's (10-15); any other type counts as
// "other" (slot requestSlots).
const requestSlots = 16

// Metrics collects a broker's series. Create it with New, give it to the
// server and the log manager as their Observer, and serve Handler.
type Metrics struct {
	reg *prometheus.Registry

	topicsMu sync.Mutex                             // serializes additions to topics
	topics   atomic.Pointer[map[string]*topicStats] // copy on write; never nil

	requests [requestSlots + 1]atomic.Pointer[requestStats] // created on first use

	conns      atomic.Int64 // open connections
	connsTotal atomic.Uint64

	latency *prometheus.HistogramVec // by request
	flushes prometheus.Histogram

	// replicas, set by AddReplication before Handler, adds the replication
	// state to a partition's admin answer.
	replicas ReplicaDetails

	descs descs
}

// topicStats are one topic's counters, as 0.7's BrokerTopicStat.
type topicStats struct {
	messagesIn, bytesIn, bytesOut atomic.Uint64
}

// requestStats are one request type's series.
type requestStats struct {
	count, failed atomic.Uint64
	latency       prometheus.Histogram
}

// descs describe the series Metrics collects itself.
type descs struct {
	messagesIn, bytesIn, bytesOut *prometheus.Desc
	requests, failed              *prometheus.Desc
	conns, connsTotal             *prometheus.Desc
}

// New returns Metrics with its own registry, which also holds the Go
// runtime's and the process's standard series.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	empty := map[string]*topicStats{}
	m.topics.Store(&empty)
	topic := []string{"topic"}
	req := []string{"request"}
	m.descs = descs{
		messagesIn: prometheus.NewDesc(Namespace+"_server_messages_in_total", "Messages appended for clients: by PRODUCE and MULTIPRODUCE requests and by the replication layer's PRODUCE_ACKS (on the leader; a follower's copies are not counted).", topic, nil),
		bytesIn:    prometheus.NewDesc(Namespace+"_server_bytes_in_total", "Bytes of message sets appended for clients, as messages_in_total counts them.", topic, nil),
		bytesOut:   prometheus.NewDesc(Namespace+"_server_bytes_out_total", "Bytes of message sets sent in answer to FETCH and MULTIFETCH requests.", topic, nil),
		requests:   prometheus.NewDesc(Namespace+"_server_requests_total", "Requests handled (PRODUCE requests pipelined and appended together count one each).", req, nil),
		failed:     prometheus.NewDesc(Namespace+"_server_request_errors_total", "Requests that failed and closed their connection.", req, nil),
		conns:      prometheus.NewDesc(Namespace+"_server_connections", "Open client connections.", nil, nil),
		connsTotal: prometheus.NewDesc(Namespace+"_server_connections_total", "Connections accepted.", nil, nil),
	}
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "server", Name: "request_duration_seconds",
		Help:    "Time from a request's frame being read to its response being written (PRODUCE: appended).",
		Buckets: prometheus.ExponentialBuckets(10e-6, 4, 10),
	}, req)
	m.flushes = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "log", Name: "flush_duration_seconds",
		Help:    "Time of each fsync that made appended messages durable and visible (flushes and rolls); its _count is the number of flushes.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10),
	})
	m.reg.MustRegister(m, m.latency, m.flushes,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry the series are in, for callers that add
// their own (the replication layer's).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// topic returns the counters of topic, creating them on first use.
func (m *Metrics) topic(name string) *topicStats {
	if t := (*m.topics.Load())[name]; t != nil {
		return t
	}
	m.topicsMu.Lock()
	defer m.topicsMu.Unlock()
	old := *m.topics.Load()
	if t := old[name]; t != nil {
		return t
	}
	next := make(map[string]*topicStats, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	t := &topicStats{}
	next[name] = t
	m.topics.Store(&next)
	return t
}

// request returns the series of request type t, creating them on first use.
func (m *Metrics) request(t wire.RequestType) *requestStats {
	slot := int(t)
	if slot < 0 || slot >= requestSlots {
		slot = requestSlots
	}
	if r := m.requests[slot].Load(); r != nil {
		return r
	}
	r := &requestStats{latency: m.latency.WithLabelValues(requestName(slot)).(prometheus.Histogram)}
	if m.requests[slot].CompareAndSwap(nil, r) {
		return r
	}
	return m.requests[slot].Load()
}

// requestName is the label of a request slot: "produce", "fetch", ...
func requestName(slot int) string {
	if slot == requestSlots {
		return "other"
	}
	return lower(wire.RequestType(slot).String())
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// ConnOpened implements server.Observer.
func (m *Metrics) ConnOpened() { m.conns.Add(1); m.connsTotal.Add(1) }

// ConnClosed implements server.Observer.
func (m *Metrics) ConnClosed() { m.conns.Add(-1) }

// Request implements server.Observer.
func (m *Metrics) Request(t wire.RequestType, n int, took time.Duration, err error) {
	r := m.request(t)
	r.count.Add(uint64(n))
	if err != nil {
		r.failed.Add(1)
	}
	r.latency.Observe(took.Seconds())
}

// Produced implements server.Observer.
func (m *Metrics) Produced(topic string, _ wire.Partition, messages, bytes int) {
	t := m.topic(topic)
	t.messagesIn.Add(uint64(messages))
	t.bytesIn.Add(uint64(bytes))
}

// Fetched implements server.Observer.
func (m *Metrics) Fetched(topic string, _ wire.Partition, bytes int64) {
	m.topic(topic).bytesOut.Add(uint64(bytes))
}

// Flushed implements log.Observer.
func (m *Metrics) Flushed(_ *log.Log, took time.Duration) { m.flushes.Observe(took.Seconds()) }

// Describe implements prometheus.Collector for the series Metrics keeps in
// atomics.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	d := &m.descs
	for _, desc := range []*prometheus.Desc{d.messagesIn, d.bytesIn, d.bytesOut, d.requests, d.failed, d.conns, d.connsTotal} {
		ch <- desc
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	d := &m.descs
	for name, t := range *m.topics.Load() {
		ch <- prometheus.MustNewConstMetric(d.messagesIn, prometheus.CounterValue, float64(t.messagesIn.Load()), name)
		ch <- prometheus.MustNewConstMetric(d.bytesIn, prometheus.CounterValue, float64(t.bytesIn.Load()), name)
		ch <- prometheus.MustNewConstMetric(d.bytesOut, prometheus.CounterValue, float64(t.bytesOut.Load()), name)
	}
	for slot := range m.requests {
		r := m.requests[slot].Load()
		if r == nil {
			continue
		}
		name := requestName(slot)
		ch <- prometheus.MustNewConstMetric(d.requests, prometheus.CounterValue, float64(r.count.Load()), name)
		ch <- prometheus.MustNewConstMetric(d.failed, prometheus.CounterValue, float64(r.failed.Load()), name)
	}
	ch <- prometheus.MustNewConstMetric(d.conns, prometheus.GaugeValue, float64(m.conns.Load()))
	ch <- prometheus.MustNewConstMetric(d.connsTotal, prometheus.CounterValue, float64(m.connsTotal.Load()))
}
