package metrics_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/metrics"
	"github.com/netdb11/kafka/broker/wire"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// startBroker starts a broker with metrics on 127.0.0.1:0 and returns it
// and the base URL of its HTTP listener.
func startBroker(t *testing.T) (*brokertest.Broker, string) {
	t.Helper()
	cfg := brokertest.Config()
	cfg.MetricsListen = "127.0.0.1:0"
	cfg.Log.FileSize = 400
	b := brokertest.Start(t, cfg)
	if b.MetricsAddr() == nil {
		t.Fatal("MetricsAddr is nil with metrics.listen set")
	}
	return b, "http://" + b.MetricsAddr().String()
}

// conn speaks the protocol to the broker.
type conn struct {
	t *testing.T
	c net.Conn
}

func dial(t *testing.T, addr string) *conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return &conn{t, c}
}

func (c *conn) send(r *wire.Request) {
	c.t.Helper()
	if _, err := c.c.Write(wire.AppendRequest(nil, r)); err != nil {
		c.t.Fatal(err)
	}
}

// produce sends a PRODUCE and waits until the broker handled it (the answer
// to an OFFSETS request behind it comes after), so that each is appended on
// its own.
func (c *conn) produce(topic string, set []byte) {
	c.t.Helper()
	c.send(&wire.Request{Type: wire.RequestProduce, Produce: []wire.ProduceRequest{{Topic: topic, Partition: 0, Messages: set}}})
	c.send(&wire.Request{Type: wire.RequestOffsets, Offsets: &wire.OffsetsRequest{Topic: topic, Partition: 0, Time: wire.LatestTime, MaxOffsets: 1}})
	if code, _ := c.response(); code != wire.CodeNone {
		c.t.Fatalf("offsets: %v", code)
	}
}

func (c *conn) response() (wire.ErrorCode, []byte) {
	c.t.Helper()
	var hdr [wire.ResponseHeaderLen]byte
	if _, err := io.ReadFull(c.c, hdr[:]); err != nil {
		c.t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:])-2)
	if _, err := io.ReadFull(c.c, body); err != nil {
		c.t.Fatal(err)
	}
	return wire.ErrorCode(int16(binary.BigEndian.Uint16(hdr[4:]))), body
}

// scrape returns the families of /metrics.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value returns the value of the series name{labels}, and whether it exists.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestSeriesCount: after N messages produced in batches and fetched, the
// main series exist and count exactly: messages and bytes in, bytes out,
// requests by type, flushes, segments and bytes per partition, open
// connections.
func TestSeriesCount(t *testing.T) {
	b, base := startBroker(t)
	c := dial(t, b.Addr)
	const batches, perBatch = 7, 3
	var payloads [][]byte
	for i := range perBatch {
		payloads = append(payloads, []byte(fmt.Sprintf("message %d of the batch", i)))
	}
	set := wire.NewMessageSet(payloads...)
	for range batches {
		c.produce("m", set)
	}
	total := wire.Offset(batches * len(set))
	// Wait until every produce is flushed and visible.
	wait.For(t, "the produced messages to be flushed", func() bool {
		l, err := b.Logs().Get("m", 0)
		return err == nil && l.EndOffset() == total
	})
	var fetched int
	for off := wire.Offset(0); off < total; {
		c.send(&wire.Request{Type: wire.RequestFetch, Fetch: []wire.FetchRequest{{Topic: "m", Partition: 0, Offset: off, MaxSize: 1 << 20}}})
		code, body := c.response()
		if code != wire.CodeNone || len(body) == 0 {
			t.Fatalf("fetch at %d: %v, %d bytes", off, code, len(body))
		}
		fetched++
		off += wire.Offset(len(body))
	}

	// The last request is counted once its answer is written, so the
	// test's read of the answer may come first.
	var fams map[string]*dto.MetricFamily
	wait.For(t, "the last fetch to be counted", func() bool {
		fams = scrape(t, base)
		v, _ := value(fams, "kafka_server_requests_total", "request", "fetch")
		return v >= float64(fetched)
	})
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kafka_server_messages_in_total", []string{"topic", "m"}, batches * perBatch},
		{"kafka_server_bytes_in_total", []string{"topic", "m"}, float64(total)},
		{"kafka_server_bytes_out_total", []string{"topic", "m"}, float64(total)},
		{"kafka_server_requests_total", []string{"request", "produce"}, batches},
		{"kafka_server_requests_total", []string{"request", "fetch"}, float64(fetched)},
		{"kafka_server_request_duration_seconds", []string{"request", "fetch"}, float64(fetched)},
		{"kafka_server_request_errors_total", []string{"request", "produce"}, 0},
		{"kafka_server_connections", nil, 1},
		{"kafka_log_end_offset", []string{"topic", "m", "partition", "0"}, float64(total)},
		{"kafka_log_flushed_offset", []string{"topic", "m", "partition", "0"}, float64(total)},
		{"kafka_log_size_bytes", []string{"topic", "m", "partition", "0"}, float64(total)},
		{"kafka_log_failed", []string{"topic", "m", "partition", "0"}, 0},
	}
	for _, ck := range checks {
		got, ok := value(fams, ck.name, ck.labels...)
		if !ok || got != ck.want {
			t.Errorf("%s%v = %v (present %v), want %v", ck.name, ck.labels, got, ok, ck.want)
		}
	}
	// 7 sets of about 100 bytes in segments of at most 400 bytes.
	wantSegs := len(b.Logs().Logs()[0].Info().Segments)
	if got, _ := value(fams, "kafka_log_segments", "topic", "m", "partition", "0"); got != float64(wantSegs) || wantSegs < 2 {
		t.Errorf("kafka_log_segments = %v, want %d (at least 2)", got, wantSegs)
	}
	if got, _ := value(fams, "kafka_log_flush_duration_seconds"); got < 1 {
		t.Errorf("flushes counted: %v, want at least 1", got)
	}
	if _, ok := value(fams, "go_goroutines"); !ok {
		t.Error("the Go runtime's series are missing")
	}

	c.c.Close()
	wait.For(t, "the closed connection to leave the gauge", func() bool {
		v, _ := value(scrape(t, base), "kafka_server_connections")
		return v == 0
	})
}

// TestAdmin: the admin endpoint lists partitions and each one's segments,
// answers 404 for a partition the broker does not hold and 400 for a
// malformed one, and refuses writes.
func TestAdmin(t *testing.T) {
	b, base := startBroker(t)
	c := dial(t, b.Addr)
	set := wire.NewMessageSet([]byte(strings.Repeat("x", 300)), []byte(strings.Repeat("y", 300)))
	for range 4 {
		c.produce("a", set)
	}
	total := wire.Offset(4 * len(set))
	wait.For(t, "the produced messages to be flushed", func() bool {
		l, err := b.Logs().Get("a", 0)
		return err == nil && l.EndOffset() == total
	})

	var list metrics.Partitions
	getJSON(t, base+"/admin/partitions", http.StatusOK, &list)
	if list.BrokerID != b.Config.BrokerID || len(list.Partitions) != 1 {
		t.Fatalf("partitions = %+v", list)
	}
	if p := list.Partitions[0]; p.Topic != "a" || p.EndOffset != total || p.FlushedOffset != total || p.Bytes != int64(total) || p.Segments != 4 {
		t.Fatalf("summary = %+v; want end %d in 4 segments", p, total)
	}

	var info log.Info
	getJSON(t, base+"/admin/partitions/a/0", http.StatusOK, &info)
	if len(info.Segments) != 4 || info.EndOffset != total || !info.Segments[3].Active || info.Segments[0].Name != wire.SegmentName(0) {
		t.Fatalf("info = %+v", info)
	}
	for i, s := range info.Segments {
		if s.Start != wire.Offset(i*len(set)) || s.ModTime.IsZero() {
			t.Errorf("segment %d = %+v", i, s)
		}
	}

	var e struct{ Error string }
	getJSON(t, base+"/admin/partitions/nope/0", http.StatusNotFound, &e)
	getJSON(t, base+"/admin/partitions/a/7", http.StatusNotFound, &e)
	getJSON(t, base+"/admin/partitions/a/x", http.StatusBadRequest, &e)
	if e.Error == "" {
		t.Error("no error message")
	}
	resp, err := http.Post(base+"/admin/partitions/a/0", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST = %s, want 405", resp.Status)
	}
}

func getJSON(t *testing.T, url string, code int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != code {
		t.Fatalf("GET %s: %s, want %d", url, resp.Status, code)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestOff: a broker without metrics.listen has no listener and no Metrics.
func TestOff(t *testing.T) {
	b := brokertest.Start(t, brokertest.Config())
	if b.MetricsAddr() != nil || b.Metrics() != nil {
		t.Fatalf("metrics on without metrics.listen: %v", b.MetricsAddr())
	}
}
