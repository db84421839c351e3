package zkcoord

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

func TestBrokerInfo(t *testing.T) {
	now := time.UnixMilli(1315436360737)
	b := NewBrokerInfo(3, "127.0.0.1", 9092, now)
	if got, want := b.String(), "127.0.0.1-1315436360737:127.0.0.1:9092"; got != want {
		t.Fatalf("String() = %q, want %q (0.7's creatorId:host:port)", got, want)
	}
	back, err := ParseBrokerInfo(3, b.String())
	if err != nil || back != b {
		t.Fatalf("ParseBrokerInfo(%q) = %+v, %v; want %+v", b.String(), back, err, b)
	}
	if got := b.Addr(); got != "127.0.0.1:9092" {
		t.Fatalf("Addr() = %q", got)
	}
	if at, ok := back.Created(); !ok || !at.Equal(now) {
		t.Fatalf("Created() = %v, %v; want %v", at, ok, now)
	}
	if _, ok := (BrokerInfo{CreatorID: "a-host-without-time"}).Created(); ok {
		t.Error("Created() read a time in a creator id without one")
	}
	// A value written by 0.7 with a host name.
	got, err := ParseBrokerInfo(0, "kafka01.example.com-1315436360737:kafka01.example.com:9092")
	want := BrokerInfo{Broker: wire.Broker{ID: 0, Host: "kafka01.example.com", Port: 9092}, CreatorID: "kafka01.example.com-1315436360737"}
	if err != nil || got != want {
		t.Fatalf("ParseBrokerInfo = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "x", "a:b", "a:b:c", "a::9092", "a:h:-1", "a:h:70000", "a:h:9092x"} {
		if _, err := ParseBrokerInfo(1, bad); err == nil {
			t.Errorf("ParseBrokerInfo(%q) succeeded, want an error", bad)
		}
	}
}

func TestBrokerPartition(t *testing.T) {
	p, err := ParseBrokerPartition("12-3")
	if err != nil || p != (wire.BrokerPartition{Broker: 12, Partition: 3}) || p.String() != "12-3" {
		t.Fatalf("ParseBrokerPartition(12-3) = %v, %v", p, err)
	}
	for _, bad := range []string{"", "1", "1-", "-1", "a-1", "1-b", "1--1", "1-2-3", "99999999999-1"} {
		if _, err := ParseBrokerPartition(bad); err == nil {
			t.Errorf("ParseBrokerPartition(%q) succeeded, want an error", bad)
		}
	}
}

func TestConsumerAndThreadIDs(t *testing.T) {
	id := NewConsumerID("group1", time.UnixMilli(1700000000000))
	if !regexp.MustCompile(`^group1_[^_]+-1700000000000-[0-9a-f]{8}$`).MatchString(id) {
		t.Fatalf("NewConsumerID = %q, want <group>_<host>-<ms>-<8 hex>", id)
	}
	if got := ThreadID(id, 2); got != id+"-2" {
		t.Fatalf("ThreadID = %q", got)
	}
}

func TestSubscriptionString(t *testing.T) {
	s, err := StaticSubscription(map[string]int{"topic": 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), `{ "topic": 1 }`; got != want {
		t.Fatalf("String() = %q, want %q (0.7's TopicCount.dbString)", got, want)
	}
	s, _ = StaticSubscription(map[string]int{"b": 2, "a": 4})
	if got, want := s.String(), `{ "a": 4,"b": 2 }`; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	w, err := WildcardSubscription(` "white.*, other" `, false, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.String(), "*4*white.*|other"; got != want {
		t.Fatalf("wildcard String() = %q, want %q", got, want)
	}
	b, _ := WildcardSubscription("black.*", true, 2)
	if got, want := b.String(), "!2!black.*"; got != want {
		t.Fatalf("blacklist String() = %q, want %q", got, want)
	}
}

func TestParseSubscription(t *testing.T) {
	tests := []struct {
		in         string
		wantTopics map[string]int
		wantString string
	}{
		{`{ "topic": 1 }`, map[string]int{"topic": 1}, `{ "topic": 1 }`},
		{`{"a":3,"b":1}`, map[string]int{"a": 3, "b": 1}, `{ "a": 3,"b": 1 }`},
		{`{ "a": 4,"b": 2 }`, map[string]int{"a": 4, "b": 2}, `{ "a": 4,"b": 2 }`},
		{"*4*white.*", nil, "*4*white.*"},
		{"!1!black", nil, "!1!black"},
	}
	for _, tt := range tests {
		s, err := ParseSubscription(tt.in)
		if err != nil {
			t.Fatalf("ParseSubscription(%q): %v", tt.in, err)
		}
		if !reflect.DeepEqual(s.Topics, tt.wantTopics) || s.String() != tt.wantString {
			t.Errorf("ParseSubscription(%q) = %v / %q, want %v / %q", tt.in, s.Topics, s.String(), tt.wantTopics, tt.wantString)
		}
	}
	for _, bad := range []string{"", "{", "{}", `{"a":0}`, `{"a":-1}`, `{"a":1.5}`, `{"a":"1"}`, `{"a/b":1}`,
		`{"..":1}`, `{"a":1} x`, "*x*a", "*1!a", "*1*(", "!0!a", "[1]"} {
		if _, err := ParseSubscription(bad); err == nil {
			t.Errorf("ParseSubscription(%q) succeeded, want an error", bad)
		}
	}
}

func TestSubscriptionThreads(t *testing.T) {
	all := []string{"white1", "white2", "black1", "other"}
	w, _ := ParseSubscription("*2*white.*")
	got := w.ThreadIDs("g_c", all)
	want := map[string][]string{"white1": {"g_c-0", "g_c-1"}, "white2": {"g_c-0", "g_c-1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("whitelist ThreadIDs = %v, want %v", got, want)
	}
	b, _ := ParseSubscription("!1!black.*|white.*")
	if got := b.StreamsPerTopic(all); !reflect.DeepEqual(got, map[string]int{"other": 1}) {
		t.Fatalf("blacklist StreamsPerTopic = %v", got)
	}
	s, _ := ParseSubscription(`{ "t": 3 }`)
	if got := s.ThreadIDs("g_c", nil); !reflect.DeepEqual(got, map[string][]string{"t": {"g_c-0", "g_c-1", "g_c-2"}}) {
		t.Fatalf("static ThreadIDs = %v", got)
	}
	members := map[string]Subscription{"g_b": s, "g_a": s}
	tp := ThreadsPerTopic(members, nil)
	if want := []string{"g_a-0", "g_a-1", "g_a-2", "g_b-0", "g_b-1", "g_b-2"}; !reflect.DeepEqual(tp["t"], want) {
		t.Fatalf("ThreadsPerTopic = %v, want %v", tp["t"], want)
	}
}

func TestParseConnect(t *testing.T) {
	tests := []struct {
		in      string
		servers []string
		chroot  string
	}{
		{"127.0.0.1:2181", []string{"127.0.0.1:2181"}, ""},
		{"a:1,b:2/kafka", []string{"a:1", "b:2"}, "/kafka"},
		{"a:1/kafka/test", []string{"a:1"}, "/kafka/test"},
		{"a:1/", []string{"a:1"}, ""},
		{"localhost", []string{"localhost:2181"}, ""},
		{" a:1 , b:2 ", []string{"a:1", "b:2"}, ""},
		{"[::1]:2181/x", []string{"[::1]:2181"}, "/x"},
	}
	for _, tt := range tests {
		cs, err := ParseConnect(tt.in)
		if err != nil {
			t.Fatalf("ParseConnect(%q): %v", tt.in, err)
		}
		if !reflect.DeepEqual(cs.Servers, tt.servers) || cs.Chroot != tt.chroot {
			t.Errorf("ParseConnect(%q) = %v %q, want %v %q", tt.in, cs.Servers, cs.Chroot, tt.servers, tt.chroot)
		}
	}
	for _, bad := range []string{"", "/kafka", "a:1,,b:2", "a:x", "a:0", "a:70000", "a:1/k//x", "a:1/k/", "a:1/../x", ":1"} {
		if _, err := ParseConnect(bad); err == nil {
			t.Errorf("ParseConnect(%q) succeeded, want an error", bad)
		}
	}
}

func TestPaths(t *testing.T) {
	p := wire.BrokerPartition{Broker: 1, Partition: 0}
	got := []string{
		BrokerPath(1), TopicPath("t"), TopicBrokerPath("t", 1), ConsumerPath("g", "g_c"),
		OwnerPath("g", "t", p), OffsetPath("g", "t", p),
	}
	want := []string{
		"/brokers/ids/1", "/brokers/topics/t", "/brokers/topics/t/1", "/consumers/g/ids/g_c",
		"/consumers/g/owners/t/1-0", "/consumers/g/offsets/t/1-0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("paths = %v\nwant %v", got, want)
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a\x00b", "a\nb"} {
		if err := ValidateName("topic", bad); err == nil {
			t.Errorf("ValidateName(%q) succeeded", bad)
		}
	}
	if err := ValidateName("topic", strings.Repeat("x", 200)); err != nil {
		t.Errorf("ValidateName(long) = %v", err)
	}
}

func FuzzParseSubscription(f *testing.F) {
	for _, s := range []string{`{ "topic": 1 }`, `{ "a": 4,"b": 2 }`, "*4*white.*", "!1!black", `{"a":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSubscription(in)
		if err != nil {
			return
		}
		again, err := ParseSubscription(s.String())
		if err != nil {
			t.Fatalf("ParseSubscription(%q) ok but its String %q does not parse: %v", in, s.String(), err)
		}
		if again.String() != s.String() {
			t.Fatalf("round trip changed %q to %q", s.String(), again.String())
		}
	})
}

func FuzzParseBrokerInfo(f *testing.F) {
	f.Add("127.0.0.1-1315436360737:127.0.0.1:9092")
	f.Add("h-1:h:1")
	f.Fuzz(func(t *testing.T, in string) {
		b, err := ParseBrokerInfo(1, in)
		if err != nil {
			return
		}
		again, err := ParseBrokerInfo(1, b.String())
		if err != nil || again != b {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", in, again, err, b)
		}
	})
}
