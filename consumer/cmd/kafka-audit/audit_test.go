package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/audit"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/cli"
	caudit "github.com/netdb11/kafka/consumer/audit"
	"github.com/netdb11/kafka/producer"
	paudit "github.com/netdb11/kafka/producer/audit"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"
)

func TestHelp(t *testing.T) {
	_, help, err := command.Capture(context.Background(), "--help")
	if !errors.Is(err, pflag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, opt := range []string{"--zookeeper", "--follow", "--json", "--topic", "--audit-topic"} {
		if !strings.Contains(help, opt) {
			t.Errorf("--help does not describe %s", opt)
		}
	}
	var usage *cli.UsageError
	if _, _, err := command.Capture(context.Background()); !errors.As(err, &usage) {
		t.Fatalf("no --zookeeper: %v", err)
	}
}

// cluster is a broker registered in a ZooKeeper chroot of its own.
type cluster struct {
	zk   string
	b    *brokertest.Broker
	obs  *zkcoord.Conn
	list string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	cfg := brokertest.Config()
	cfg.BrokerID = 1
	cfg.Log.NumPartitions = 2
	zk, b := zkbroker.StartInChroot(t, cfg)
	obs := zkbroker.Dial(t, zkcoord.Config{Connect: zk})
	return &cluster{zk: zk, b: b, obs: obs, list: fmt.Sprintf("1:%s", b.Addr)}
}

func (c *cluster) waitRegistered(t *testing.T, topics ...string) {
	t.Helper()
	for _, topic := range topics {
		zkbroker.WaitTopic(t, c.obs, topic, 1, 2)
	}
}

// clock is a settable clock for the audit producer.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func rows(t *testing.T, out string) (map[string]caudit.JSONRow, caudit.JSONRow) {
	t.Helper()
	byKey := map[string]caudit.JSONRow{}
	var total caudit.JSONRow
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r caudit.JSONRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if r.Type == "total" {
			total = r
			continue
		}
		byKey[fmt.Sprintf("%s@%.0f", r.Topic, r.WindowUnix)] = r
	}
	return byKey, total
}

// TestAuditCountsPlantedGapsAndDuplicates: the real producer path gives 0
// missing; planted gaps and duplicates on another topic are counted exactly,
// and the tool exits 3.
func TestAuditCountsPlantedGapsAndDuplicates(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	w0 := time.Unix(1_800_000_000, 0)

	// The real path: an audited producer, 300 messages over two windows.
	pcfg := producer.DefaultConfig()
	pcfg.BrokerList = c.list
	p, err := producer.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: w0.Add(time.Second)}
	ap, err := paudit.New(p, paudit.Config{Host: "fe-1", Window: 10 * time.Second, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if i == 200 {
			clk.Set(w0.Add(12 * time.Second))
		}
		if err := ap.Send(ctx, "clean", producer.Message{Value: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ap.Close(); err != nil {
		t.Fatal(err)
	}

	// Planted: envelopes and events written by hand. Window w0: seqs
	// 0..49 announced, 5 and 6 never sent, 9 sent three times; window
	// w0+10s: seqs 50..59 announced, 55 never sent, 58 sent twice.
	raw, err := producer.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []producer.Message
	for q := uint64(0); q < 60; q++ {
		created := w0.Add(time.Duration(q) * 100 * time.Millisecond)
		if q >= 50 {
			created = w0.Add(10*time.Second + time.Duration(q-50)*100*time.Millisecond)
		}
		n := 1
		switch q {
		case 5, 6, 55:
			n = 0
		case 9:
			n = 3
		case 58:
			n = 2
		}
		for range n {
			b, err := audit.AppendEnvelope(nil, audit.Header{Time: created, Session: 99, Seq: q, Host: "fe-9"}, []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, producer.Message{Value: b})
		}
	}
	if err := raw.Send(ctx, "planted", msgs...); err != nil {
		t.Fatal(err)
	}
	for _, e := range []audit.Event{
		{Topic: "planted", Host: "fe-9", Session: 99, Start: w0, Length: 10 * time.Second, Count: 50, First: 0},
		{Topic: "planted", Host: "fe-9", Session: 99, Start: w0.Add(10 * time.Second), Length: 10 * time.Second, Count: 10, First: 50},
	} {
		b, err := audit.AppendEvent(nil, e)
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.Send(ctx, audit.AuditTopic, producer.Message{Value: b}); err != nil {
			t.Fatal(err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	c.b.Flush(t)
	c.waitRegistered(t, "clean", "planted", audit.AuditTopic)

	out, stderr, err := command.Capture(ctx, "--zookeeper="+c.zk, "--json")
	var exit *cli.ExitError
	if !errors.As(err, &exit) || exit.Code != ExitMissing {
		t.Fatalf("kafka-audit: err %v, want exit %d; stderr %s", err, ExitMissing, stderr)
	}
	got, total := rows(t, out)
	w0s, w1s := float64(w0.Unix()), float64(w0.Unix()+10)
	want := []struct {
		key                                 string
		sent, received, missing, duplicates int64
	}{
		{fmt.Sprintf("clean@%.0f", w0s), 200, 200, 0, 0},
		{fmt.Sprintf("clean@%.0f", w1s), 100, 100, 0, 0},
		{fmt.Sprintf("planted@%.0f", w0s), 50, 48 + 2, 2, 2},
		{fmt.Sprintf("planted@%.0f", w1s), 10, 9 + 1, 1, 1},
	}
	for _, w := range want {
		r, ok := got[w.key]
		if !ok {
			t.Errorf("no row %s in\n%s", w.key, out)
			continue
		}
		if r.Sent != w.sent || r.Received != w.received || r.Missing != w.missing || r.Duplicates != w.duplicates || r.Unannounced != 0 {
			t.Errorf("%s: %+v, want sent %d received %d missing %d duplicates %d", w.key, r, w.sent, w.received, w.missing, w.duplicates)
		}
	}
	if len(got) != len(want) || total.Missing != 3 || total.Duplicates != 3 || total.Sent != 360 {
		t.Errorf("rows %d, total %+v; output\n%s", len(got), total, out)
	}

	// --whitelist audits only the topics it names: the planted gaps are
	// not among them, so nothing is missing.
	out, _, err = command.Capture(ctx, "--zookeeper="+c.zk, "--json", "--whitelist=cl.*")
	if err != nil {
		t.Fatalf("--whitelist=cl.*: %v", err)
	}
	if got, total := rows(t, out); len(got) != 2 || total.Sent != 300 || total.Missing != 0 {
		t.Errorf("--whitelist=cl.*: %d rows, total %+v", len(got), total)
	}

	// The table form says the same.
	table, _, _ := command.Capture(ctx, "--zookeeper="+c.zk)
	if !strings.Contains(table, "total: sent 360, received 360, missing 3, duplicates 3, unannounced 0") {
		t.Errorf("table:\n%s", table)
	}
}

// TestFollowPrintsWindowsAndStops: --follow prints a finished window, then
// exits 0 on cancellation with everything caught up.
func TestFollowPrintsWindowsAndStops(t *testing.T) {
	c := startCluster(t)
	pcfg := producer.DefaultConfig()
	pcfg.BrokerList = c.list
	p, err := producer.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := paudit.New(p, paudit.Config{Host: "fe-1", Window: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out brokertest.Buffer
	done := make(chan error, 1)
	go func() {
		done <- command.Execute(ctx, []string{"--zookeeper=" + c.zk, "--json", "--follow", "--poll=10ms", "--interval=20ms", "--grace=50ms"}, cli.IO{Stdout: &out})
	}()
	sent := 0
	wait.Within(t, 30*time.Second, "a window row with sent == received", func() bool {
		if err := ap.Send(context.Background(), "live", producer.Message{Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
		sent++
		for _, line := range strings.Split(out.String(), "\n") {
			var r caudit.JSONRow
			if json.Unmarshal([]byte(line), &r) == nil && r.Type == "window" && r.Sent > 0 && r.Sent == r.Received && r.Missing == 0 && r.P50ms > 0 {
				return true
			}
		}
		return false
	})
	if err := ap.Close(); err != nil {
		t.Fatal(err)
	}
	c.b.Flush(t) // Close confirmed the appends; make them visible now
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow: %v\n%s", err, out.String())
	}
	_, total := rows(t, out.String())
	if total.Type != "total" || total.Sent != int64(sent) || total.Missing != 0 || total.Received != int64(sent) {
		t.Fatalf("total %+v, sent %d", total, sent)
	}
}

// TestProducersAndNoLatencyWithoutFollow: a producer that publishes one
// window in two monitoring events (Publish mid-window, then Close) counts
// as one producer, beside a second one: producers 2, not 3 as before (the
// column counted events). Without --follow no latency is printed, in the
// table or the JSON, and stderr says why; before, the latency was measured
// up to the moment the tool ran (issue 26, item 5).
func TestProducersAndNoLatencyWithoutFollow(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	w0 := time.Unix(1_800_000_000, 0)
	clk := &clock{t: w0.Add(time.Second)}
	send := func(ap *paudit.Producer, n int) {
		for i := range n {
			if err := ap.Send(ctx, "t", producer.Message{Value: fmt.Appendf(nil, "m%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var aps []*paudit.Producer
	for _, host := range []string{"fe-1", "fe-2"} {
		pcfg := producer.DefaultConfig()
		pcfg.BrokerList = c.list
		p, err := producer.New(pcfg)
		if err != nil {
			t.Fatal(err)
		}
		ap, err := paudit.New(p, paudit.Config{Host: host, Window: time.Hour, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		aps = append(aps, ap)
	}
	send(aps[0], 10)
	if err := aps[0].Publish(ctx, true); err != nil { // the window's first event
		t.Fatal(err)
	}
	send(aps[0], 10)
	send(aps[1], 5)
	for _, ap := range aps {
		if err := ap.Close(); err != nil {
			t.Fatal(err)
		}
	}
	c.b.Flush(t)
	c.waitRegistered(t, "t", audit.AuditTopic)

	out, stderr, err := command.Capture(ctx, "--zookeeper="+c.zk, "--json")
	if err != nil {
		t.Fatalf("kafka-audit --json: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "no latency without --follow") {
		t.Errorf("stderr %q does not say why there is no latency", stderr)
	}
	if strings.Contains(out, "_ms") {
		t.Errorf("latency printed without --follow:\n%s", out)
	}
	got, total := rows(t, out)
	w := got[fmt.Sprintf("t@%d", w0.Truncate(time.Hour).Unix())]
	if len(got) != 1 || w.Producers != 2 || w.Sent != 25 || w.Received != 25 || total.Producers != 2 {
		t.Errorf("rows %+v, total %+v; want one window with 2 producers and 25 messages\n%s", got, total, out)
	}

	table, _, err := command.Capture(ctx, "--zookeeper="+c.zk)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(table, "\n")
	if f := strings.Fields(lines[0]); len(f) != 8 || f[2] != "producers" || strings.Contains(table, "p50") {
		t.Errorf("table without --follow:\n%s", table)
	}
	if f := strings.Fields(lines[1]); len(f) != 8 || f[2] != "2" || f[3] != "25" {
		t.Errorf("table row %q, want 2 producers and 25 sent", lines[1])
	}
}

// TestFollowRowsAlignWithHeader: with --follow the rows of later batches
// line up with the header printed with the first (issue 26, item 8: each
// batch had its own tabwriter and its own widths).
func TestFollowRowsAlignWithHeader(t *testing.T) {
	var out strings.Builder
	p := &printer{w: &out, latency: true, printed: map[string]bool{}}
	w0 := time.Unix(1_800_000_000, 0)
	all := func(caudit.Row) bool { return true }
	p.rows([]caudit.Row{{Topic: "t", Start: w0, Length: time.Second, Producers: 1, Sent: 3, Received: 3, P50: time.Millisecond}}, all)
	p.rows([]caudit.Row{{Topic: "t", Start: w0.Add(time.Second), Length: time.Second, Producers: 12, Sent: 1234567, Received: 1234567,
		Duplicates: 4321, P50: 68123 * time.Millisecond, P90: 2*time.Minute + 17*time.Second, P99: 3 * time.Second, Max: 4 * time.Second}}, all)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("output:\n%s", out.String())
	}
	// Right-aligned columns: every column ends where the header's does.
	ends := func(line string) []int {
		var e []int
		for i := range line {
			if line[i] != ' ' && (i+1 == len(line) || line[i+1] == ' ') {
				e = append(e, i)
			}
		}
		return e
	}
	want := ends(lines[0])
	for _, l := range lines[1:] {
		if got := ends(l); !slices.Equal(got, want) {
			t.Errorf("columns end at %v, the header's at %v:\n%s", got, want, out.String())
		}
	}
}

// TestForgedEventCount: 10 messages announced, 7 sent, and a forged event
// of another session announcing 2^64-3. Before, the forged count was summed
// as -3: kafka-audit reported 0 missing and exited 0. Now the event is
// refused (with a warning) and the 3 missing messages are reported, exit 3.
func TestForgedEventCount(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	w0 := time.Unix(1_800_000_000, 0)
	pcfg := producer.DefaultConfig()
	pcfg.BrokerList = c.list
	raw, err := producer.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []producer.Message
	for q := uint64(0); q < 7; q++ {
		b, err := audit.AppendEnvelope(nil, audit.Header{Time: w0, Session: 5, Seq: q, Host: "fe-5"}, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, producer.Message{Value: b})
	}
	if err := raw.Send(ctx, "forged", msgs...); err != nil {
		t.Fatal(err)
	}
	real, err := audit.AppendEvent(nil, audit.Event{Topic: "forged", Host: "fe-5", Session: 5, Start: w0, Length: 10 * time.Second, Count: 10})
	if err != nil {
		t.Fatal(err)
	}
	forged, err := audit.AppendEvent(nil, audit.Event{Topic: "forged", Host: "evil", Session: 6, Start: w0, Length: 10 * time.Second, Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint64(forged[19:], ^uint64(0)-2) // the count field (broker/audit/doc.go)
	if err := raw.Send(ctx, audit.AuditTopic, producer.Message{Value: real}, producer.Message{Value: forged}); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	c.b.Flush(t)
	c.waitRegistered(t, "forged", audit.AuditTopic)
	out, stderr, err := command.Capture(ctx, "--zookeeper="+c.zk, "--json")
	var exit *cli.ExitError
	if !errors.As(err, &exit) || exit.Code != ExitMissing {
		t.Fatalf("kafka-audit: err %v, want exit %d; stdout %s stderr %s", err, ExitMissing, out, stderr)
	}
	if _, total := rows(t, out); total.Sent != 10 || total.Missing != 3 {
		t.Fatalf("total %+v, want sent 10 missing 3\n%s", total, out)
	}
	if !strings.Contains(stderr, "count 18446744073709551613 is above") {
		t.Errorf("stderr does not name the refused event:\n%s", stderr)
	}
}
