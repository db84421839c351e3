package group

import (
	"context"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// tagged prefixes each payload with its topic, as readFiltered records them.
func tagged(topic string, ps [][]byte) [][]byte {
	out := make([][]byte, len(ps))
	for i, p := range ps {
		out[i] = append([]byte(topic+":"), p...)
	}
	return out
}

// readFiltered reads every stream of a wildcard consumer into col, each
// payload recorded as "<topic>:<payload>", until the consumer closes.
func readFiltered(t *testing.T, c *Consumer, col *collector) {
	t.Helper()
	if len(c.FilterStreams()) == 0 {
		t.Fatal("a wildcard consumer without streams")
	}
	readStreams(t, c, c.FilterStreams(), func(m Message) { col.add(m.Topic + ":" + string(m.Payload)) })
}

func (e *env) startFilter(cfg Config, f TopicFilter, streams int) *Consumer {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := NewByFilter(ctx, cfg, f, streams)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// topicsSeen lists the topics of col's records.
func topicsSeen(col *collector) map[string]int {
	col.mu.Lock()
	defer col.mu.Unlock()
	out := map[string]int{}
	for k, n := range col.counts {
		topic, _, _ := strings.Cut(k, ":")
		out[topic] += n
	}
	return out
}

// TestWhitelistPicksUpNewTopic: a whitelist consumer registers 0.7's
// "*<streams>*<regex>", reads the matching topic that exists, leaves the
// other alone, and takes in a matching topic created after it started,
// through its watch on /brokers/topics, from that topic's first message.
func TestWhitelistPicksUpNewTopic(t *testing.T) {
	e := newEnv(t)
	e.startBroker(0, 2)
	oldMsgs := payloads("old", 100)
	e.produce("clicks", 0, 2, oldMsgs)
	e.produce("other", 0, 2, payloads("no", 50))

	c := e.startFilter(e.consumerConfig("g"), Whitelist("clicks, views.*"), 2)
	if v, err := e.obs.Get(zkcoord.ConsumerPath("g", c.ID())); err != nil || string(v) != "*2*clicks|views.*" {
		t.Fatalf("registration = %q, %v; want 0.7's *2*clicks|views.*", v, err)
	}
	col := newCollector()
	readFiltered(t, c, col)
	e.waitFor("the existing topic's messages", func() bool { return col.has(tagged("clicks", oldMsgs)) })
	e.waitFor("clicks' 2 partitions owned by the 2 threads", func() bool {
		th := map[string]bool{}
		for _, o := range e.owners("g", "clicks") {
			th[o] = true
		}
		return len(th) == 2 && th[c.ID()+"-0"] && th[c.ID()+"-1"]
	})

	first := payloads("first", 2)
	e.produce("views-eu", 0, 2, first) // created now
	e.waitFor("the new topic's partitions owned", func() bool { return len(c.Owned()["views-eu"]) == 2 })
	e.waitFor("the messages that created the new topic", func() bool { return col.has(tagged("views-eu", first)) })
	newMsgs := payloads("new", 200)
	e.produce("views-eu", 0, 2, newMsgs)
	e.waitFor("every message of the new topic", func() bool { return col.has(tagged("views-eu", newMsgs)) })
	more := payloads("more", 50)
	e.produce("clicks", 0, 2, more)
	e.waitFor("clicks still consumed after the rebalance", func() bool { return col.has(tagged("clicks", more)) })
	if n := topicsSeen(col)["other"]; n != 0 {
		t.Fatalf("%d messages of a topic the whitelist does not take", n)
	}
	if _, _, d := col.stats(tagged("views-eu", newMsgs)); d != 0 {
		t.Fatalf("%d duplicates in a stable group", d)
	}
}

// TestBlacklistExcludes: a blacklist consumer reads every topic but the
// listed ones, including one created after it started.
func TestBlacklistExcludes(t *testing.T) {
	e := newEnv(t)
	e.startBroker(0, 1)
	a := payloads("a", 50)
	e.produce("a", 0, 1, a)
	e.produce("audit", 0, 1, payloads("x", 50))

	c := e.startFilter(e.consumerConfig("g"), Blacklist("audit,secret.*"), 1)
	if v, err := e.obs.Get(zkcoord.ConsumerPath("g", c.ID())); err != nil || string(v) != "!1!audit|secret.*" {
		t.Fatalf("registration = %q, %v; want 0.7's !1!audit|secret.*", v, err)
	}
	col := newCollector()
	readFiltered(t, c, col)
	e.waitFor("the allowed topic", func() bool { return col.has(tagged("a", a)) })
	e.produce("secret-1", 0, 1, payloads("s", 50))
	b := payloads("b", 50)
	e.produce("b", 0, 1, b)
	e.waitFor("the allowed topic created later", func() bool { return col.has(tagged("b", b)) })
	seen := topicsSeen(col)
	if seen["audit"] != 0 || seen["secret-1"] != 0 {
		t.Fatalf("blacklisted topics delivered: %v", seen)
	}
	if _, ok := c.Owned()["secret-1"]; ok {
		t.Fatalf("owns a blacklisted topic: %v", c.Owned())
	}
}

// TestTwoFilterConsumersSplitTopics: two members with the same whitelist
// split each matching topic's partitions (Algorithm 1 per topic), a topic
// created later too, and once the group is stable every message arrives
// once from each broker.
func TestTwoFilterConsumersSplitTopics(t *testing.T) {
	e := newEnv(t)
	e.startBroker(0, 2)
	e.startBroker(1, 2)
	seed := func(topic string) {
		e.produce(topic, 0, 2, payloads("seed", 2))
		e.produce(topic, 1, 2, payloads("seed", 2))
	}
	seed("w1")
	col := newCollector()
	var cs []*Consumer
	for i := 0; i < 2; i++ {
		c := e.startFilter(e.consumerConfig("g"), Whitelist(`w\d`), 1)
		readFiltered(t, c, col)
		cs = append(cs, c)
	}
	seed("w2") // created after the consumers started
	e.waitFor("4 partitions of each topic, 2 per consumer and topic", func() bool {
		for _, topic := range []string{"w1", "w2"} {
			if len(e.owners("g", topic)) != 4 {
				return false
			}
			for _, c := range cs {
				if len(c.Owned()[topic]) != 2 {
					return false
				}
			}
		}
		return true
	})
	m1, m2 := payloads("m1", 200), payloads("m2", 200)
	for _, b := range []wire.BrokerID{0, 1} {
		e.produce("w1", b, 2, m1)
		e.produce("w2", b, 2, m2)
	}
	// Each payload was produced to both brokers: two deliveries each.
	all := append(tagged("w1", m1), tagged("w2", m2)...)
	deliveries := func(atLeast int) (int, bool) {
		col.mu.Lock()
		defer col.mu.Unlock()
		for _, m := range all {
			if n := col.counts[string(m)]; n < atLeast || n > 2 {
				return n, false
			}
		}
		return 2, true
	}
	e.waitFor("every message from both brokers", func() bool { _, ok := deliveries(2); return ok })
	if n, ok := deliveries(2); !ok {
		t.Fatalf("a message delivered %d times, want 2 (once per broker)", n)
	}
}

// TestStaticTwoTopics: a static subscription of two topics hands each
// topic's messages to that topic's streams (their thread ids are the same).
func TestStaticTwoTopics(t *testing.T) {
	e := newEnv(t)
	e.startBroker(0, 2)
	a, b := payloads("a", 100), payloads("b", 100)
	e.produce("ta", 0, 2, a)
	e.produce("tb", 0, 2, b)
	c := e.start(e.consumerConfig("g"), map[string]int{"ta": 1, "tb": 1})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for topic, want := range map[string][][]byte{"ta": a, "tb": b} {
		s := c.Streams(topic)[0]
		got := map[string]bool{}
		for len(got) < len(want) {
			m, err := s.Next(ctx)
			if err != nil {
				t.Fatalf("stream of %s after %d messages: %v", topic, len(got), err)
			}
			if m.Topic != topic {
				t.Fatalf("stream of %s delivered a message of %s", topic, m.Topic)
			}
			got[string(m.Payload)] = true
		}
	}
}

func TestTopicFilter(t *testing.T) {
	for _, tc := range []struct {
		f     TopicFilter
		topic string
		want  bool
	}{
		{Whitelist("a,b"), "a", true},
		{Whitelist("a,b"), "ab", false},
		{Whitelist(` "x.*" `), "xy", true},
		{Blacklist("a,b"), "b", false},
		{Blacklist("a,b"), "c", true},
		{Whitelist("(bad"), "bad", false},
	} {
		if got := tc.f.Allows(tc.topic); got != tc.want {
			t.Errorf("%v.Allows(%q) = %v, want %v", tc.f, tc.topic, got, tc.want)
		}
	}
	if err := Whitelist("(bad").Validate(); err == nil {
		t.Fatal("an invalid regex validated")
	}
	if _, err := NewByFilter(context.Background(), DefaultConfig(), Whitelist("a"), 0); err == nil {
		t.Fatal("0 streams accepted")
	}
}

// TestLargestStartsNewTopicsAtTheirBeginning: with StartOffset largest a
// wildcard consumer skips what the topics held when it started, but reads
// a topic created later from its first message (the ones that created it).
func TestLargestStartsNewTopicsAtTheirBeginning(t *testing.T) {
	e := newEnv(t)
	e.startBroker(0, 1)
	old := payloads("old", 50)
	e.produce("n-old", 0, 1, old)
	cfg := e.consumerConfig("g")
	cfg.StartOffset = OffsetLargest
	c := e.startFilter(cfg, Whitelist("n-.*"), 1)
	col := newCollector()
	readFiltered(t, c, col)
	e.waitFor("n-old owned", func() bool { return len(c.Owned()["n-old"]) == 1 })
	e.waitFor("n-old's start offset committed", func() bool {
		_, ok, err := zkcoord.GroupsOn(e.obs).Offset("g", "n-old", wire.BrokerPartition{})
		return err == nil && ok
	})
	fresh := payloads("fresh", 50)
	e.produce("n-new", 0, 1, fresh)
	later := payloads("later", 50)
	e.produce("n-old", 0, 1, later)
	e.waitFor("the new topic from its first message, and the old one's new messages", func() bool {
		return col.has(tagged("n-new", fresh)) && col.has(tagged("n-old", later))
	})
	if d, _, _ := col.stats(tagged("n-old", old)); d != 0 {
		t.Fatalf("%d messages the old topic held before the consumer started were delivered", d)
	}
}
