package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/netdb11/kafka/broker/admin"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Partitions, Partition and Summary are the admin endpoint's answers,
// defined in broker/admin for its clients.
type (
	Partitions = admin.Partitions
	Partition  = admin.Partition
	Summary    = admin.Summary
)

// Handler serves, read-only (GET only):
//
//	/metrics                                  Prometheus text format
//	/admin/partitions                         JSON Partitions
//	/admin/partitions/{topic}/{partition}     JSON Partition; 404 if not on this broker
//
// and adds to the registry the per-partition series read from logs at each
// scrape: segment count and bytes, start, flushed and end offsets. Call it
// once.
func (m *Metrics) Handler(brokerID wire.BrokerID, logs *log.Manager) http.Handler {
	m.reg.MustRegister(&partitionCollector{logs: logs})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /admin/partitions", func(w http.ResponseWriter, r *http.Request) {
		out := Partitions{BrokerID: brokerID, Partitions: []Summary{}}
		for _, l := range logs.Logs() {
			out.Partitions = append(out.Partitions, summarize(l.Info()))
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /admin/partitions/{topic}/{partition}", func(w http.ResponseWriter, r *http.Request) {
		topic := r.PathValue("topic")
		p, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{fmt.Sprintf("partition %q is not a number", r.PathValue("partition"))})
			return
		}
		l, err := logs.Get(topic, wire.Partition(p))
		switch {
		case errors.Is(err, wire.ErrWrongPartition):
			writeJSON(w, http.StatusNotFound, errorBody{fmt.Sprintf("partition %s-%d is not on broker %d", topic, p, brokerID)})
			return
		case err != nil:
			writeJSON(w, http.StatusServiceUnavailable, errorBody{err.Error()})
			return
		}
		out := Partition{Info: l.Info()}
		if m.replicas != nil {
			out.Replication, _ = m.replicas.ReplicaInfo(topic, wire.Partition(p))
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "broker %d: /metrics (Prometheus), /admin/partitions, /admin/partitions/{topic}/{partition} (JSON)\n", brokerID)
	})
	return mux
}

// errorBody is the JSON of an error answer.
type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away
}

func summarize(info log.Info) Summary {
	s := Summary{
		Topic: info.Topic, Partition: info.Partition,
		StartOffset: info.StartOffset, FlushedOffset: info.FlushedOffset, EndOffset: info.EndOffset,
		Segments: len(info.Segments), Failed: info.Failed,
	}
	for _, seg := range info.Segments {
		s.Bytes += seg.Size
	}
	return s
}

// partitionCollector reads each partition's segments and offsets at scrape
// time.
type partitionCollector struct{ logs *log.Manager }

var (
	tp           = []string{"topic", "partition"}
	segmentsDesc = prometheus.NewDesc(Namespace+"_log_segments", "Segment files of the partition.", tp, nil)
	sizeDesc     = prometheus.NewDesc(Namespace+"_log_size_bytes", "Bytes in the partition's segment files.", tp, nil)
	startDesc    = prometheus.NewDesc(Namespace+"_log_start_offset", "The partition's first offset.", tp, nil)
	flushedDesc  = prometheus.NewDesc(Namespace+"_log_flushed_offset", "The partition's flushed end: consumers read up to it.", tp, nil)
	endDesc      = prometheus.NewDesc(Namespace+"_log_end_offset", "The partition's written end, flushed or not.", tp, nil)
	failedDesc   = prometheus.NewDesc(Namespace+"_log_failed", "1 when the partition refuses writes after a failed write or fsync, until the broker restarts.", tp, nil)
)

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{segmentsDesc, sizeDesc, startDesc, flushedDesc, endDesc, failedDesc} {
		ch <- d
	}
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.logs.Logs() {
		s := summarize(l.Info())
		labels := []string{s.Topic, strconv.Itoa(int(s.Partition))}
		ch <- prometheus.MustNewConstMetric(segmentsDesc, prometheus.GaugeValue, float64(s.Segments), labels...)
		ch <- prometheus.MustNewConstMetric(sizeDesc, prometheus.GaugeValue, float64(s.Bytes), labels...)
		ch <- prometheus.MustNewConstMetric(startDesc, prometheus.GaugeValue, float64(s.StartOffset), labels...)
		ch <- prometheus.MustNewConstMetric(flushedDesc, prometheus.GaugeValue, float64(s.FlushedOffset), labels...)
		ch <- prometheus.MustNewConstMetric(endDesc, prometheus.GaugeValue, float64(s.EndOffset), labels...)
		failed := 0.0
		if s.Failed != "" {
			failed = 1
		}
		ch <- prometheus.MustNewConstMetric(failedDesc, prometheus.GaugeValue, failed, labels...)
	}
}
