package group

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"
)

// consumeAll reads msgs with a fresh consumer of group, commits and closes it.
func (e *env) consumeAll(group string, msgs [][]byte) {
	e.t.Helper()
	cfg := e.consumerConfig(group)
	cfg.AutoCommit = false
	c := e.start(cfg, map[string]int{"t": 1})
	col := newCollector()
	s := c.Streams("t")[0]
	for !col.has(msgs) {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		m, err := s.Next(ctx)
		cancel()
		if err != nil {
			e.t.Fatal(err)
		}
		col.add(string(m.Payload))
	}
	s.Ack()
	if err := c.Commit(); err != nil {
		e.t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		e.t.Fatal(err)
	}
}

func TestStatusAndReset(t *testing.T) {
	e := newEnv(t)
	e.startBroker(0, 2)
	msgs := payloads("m", 100)
	e.produce("t", 0, 2, msgs)
	e.consumeAll("g", msgs)
	msgSize := wire.Offset(len(wire.AppendMessage(nil, msgs[0])))

	cfg := e.consumerConfig("g")
	ctx := context.Background()
	rows, brokers, err := Status(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(brokers) != 1 || len(rows) != 2 {
		t.Fatalf("Status = %v, %v; want 2 partitions on 1 broker", rows, brokers)
	}
	for _, r := range rows {
		lag, ok := r.Lag()
		if !r.HasCommitted || r.LogEndErr != nil || r.Committed != 50*msgSize || !ok || lag != 0 || r.Owner != "" {
			t.Fatalf("row %+v: want committed = log end = 50 messages, lag 0, no owner", r)
		}
	}

	// Not while the group is alive.
	live := e.start(e.consumerConfig("g"), map[string]int{"t": 1})
	e.waitFor("the live consumer to own partitions", func() bool { return ownedCount(live, "t") == 2 })
	rows, _, err = Status(ctx, cfg, []string{"t"})
	if err != nil || rows[0].Owner != live.ID()+"-0" {
		t.Fatalf("Status with a live consumer: %v, %v; want owner %s-0", rows, err, live.ID())
	}
	if _, err := ResetOffsets(ctx, cfg, []string{"t"}, wire.EarliestTime, false); !errors.Is(err, ErrGroupActive) {
		t.Fatalf("ResetOffsets on a live group = %v, want ErrGroupActive", err)
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}

	// Dry run changes nothing; earliest rewinds, and the group replays.
	resets, err := ResetOffsets(ctx, cfg, []string{"t"}, wire.EarliestTime, true)
	if err != nil || len(resets) != 2 || resets[0].New != 0 || !resets[0].HadOld || resets[0].Old != 50*msgSize {
		t.Fatalf("dry run = %+v, %v", resets, err)
	}
	if off, _, _ := zkcoord.GroupsOn(e.obs).Offset("g", "t", wire.BrokerPartition{}); off != 50*msgSize {
		t.Fatalf("dry run wrote offset %d", off)
	}
	if _, err := ResetOffsets(ctx, cfg, []string{"t"}, wire.EarliestTime, false); err != nil {
		t.Fatal(err)
	}
	col := newCollector()
	read(t, e.start(e.consumerConfig("g"), map[string]int{"t": 1}), "t", col)
	e.waitFor("the rewound group to replay everything", func() bool { return col.has(msgs) })

	if _, err := ResetOffsets(ctx, cfg, []string{"nosuchtopic"}, wire.LatestTime, false); err == nil {
		t.Fatal("reset of an unregistered topic succeeded")
	}
}

func TestDeleteGroup(t *testing.T) {
	e := newEnv(t)
	e.startBroker(0, 1)
	msgs := payloads("m", 10)
	e.produce("t", 0, 1, msgs)
	e.consumeAll("g", msgs)
	cfg := e.consumerConfig("g")
	live := e.start(cfg, map[string]int{"t": 1})
	if err := DeleteGroup(context.Background(), cfg); !errors.Is(err, ErrGroupActive) {
		t.Fatalf("DeleteGroup of a live group = %v, want ErrGroupActive", err)
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	if err := DeleteGroup(context.Background(), cfg); err != nil {
		t.Fatalf("DeleteGroup of a stopped group: %v", err)
	}
	if ok, err := e.obs.Exists(zkcoord.GroupPath("g")); ok || err != nil {
		t.Fatalf("group still there: %v, %v", ok, err)
	}
	// The group starts afresh: everything again from the beginning.
	col := newCollector()
	read(t, e.start(e.consumerConfig("g"), map[string]int{"t": 1}), "t", col)
	e.waitFor("a replay of everything", func() bool { return col.has(msgs) })
}

// TestResetToTime: a time selects the newest segment written before it.
func TestResetToTime(t *testing.T) {
	e := newEnv(t)
	b := e.startBrokerWith(0, 1, func(cfg *broker.Config) {
		cfg.Log.FileSize = 100 // each request rolls a new segment
	})
	msgs := payloads("m", 60)
	for i := 0; i < len(msgs); i += 10 { // one request per 10: a roll can come between them
		e.produce("t", 0, 1, msgs[i:i+10])
	}

	// Wait until every request is appended (a PRODUCE has no reply), so
	// that no write touches a segment after it is aged.
	sc, err := consumer.NewSimpleConsumer(b.Addr, consumer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	end := wire.Offset(len(msgs) * len(wire.AppendMessage(nil, msgs[0])))
	e.waitFor("every message appended", func() bool {
		offs, err := sc.OffsetsBefore(context.Background(), "t", 0, wire.LatestTime, 1)
		return err == nil && len(offs) == 1 && offs[0] == end
	})
	// Age every segment by two hours.
	dir := filepath.Join(b.Config.Log.Dir, "t-0")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var starts []wire.Offset
	old := time.Now().Add(-2 * time.Hour)
	for _, en := range entries {
		start, ok := wire.ParseSegmentName(en.Name())
		if !ok {
			continue
		}
		starts = append(starts, start)
		if err := os.Chtimes(filepath.Join(dir, en.Name()), old, old); err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	if len(starts) < 3 {
		t.Fatalf("%d segments; want several", len(starts))
	}
	gcfg := e.consumerConfig("g")
	tests := []struct {
		name string
		at   int64
		want wire.Offset
	}{
		{"an hour ago: the newest segment", time.Now().Add(-time.Hour).UnixMilli(), starts[len(starts)-1]},
		{"before every segment: the earliest offset", 1, 0},
	}
	for _, tt := range tests {
		resets, err := ResetOffsets(context.Background(), gcfg, []string{"t"}, tt.at, false)
		if err != nil || len(resets) != 1 || resets[0].New != tt.want {
			t.Fatalf("%s: ResetOffsets = %+v, %v; want offset %d (segments %v)", tt.name, resets, err, tt.want, starts)
		}
	}
}
