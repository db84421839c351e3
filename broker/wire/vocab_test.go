package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopic(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"page-views_v2.x", true},
		{strings.Repeat("x", 249), true},
		{strings.Repeat("x", 250), false}, // accepted (up to 255) before: its directory "<topic>-12345" did not fit a file name
		{strings.Repeat("x", 255), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{strings.Repeat("x", 256), false},
		{"a/b", false},
		{"../x", false},
		{"a b", false},
		{"a\x00b", false},
		{"é", false},
	}
	for _, tt := range tests {
		err := ValidateTopic(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateTopic(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("ValidateTopic(%q) = %v, want ErrInvalidTopic", tt.name, err)
		}
	}
}

func TestParseBrokerList(t *testing.T) {
	got, err := ParseBrokerList("0:localhost:9092, 2:[::1]:9093,1:10.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	want := []Broker{{0, "localhost", 9092}, {2, "::1", 9093}, {1, "10.0.0.1", 1}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("broker %d = %v, want %v", i, got[i], want[i])
		}
	}
	if a := got[1].Addr(); a != "[::1]:9093" {
		t.Errorf("Addr = %q", a)
	}
	for _, bad := range []string{"", "localhost:9092", "x:h:1", "-1:h:1", "0:h:0", "0:h:70000", "0:h:p", "0::1", "0:h:1,0:g:2"} {
		if _, err := ParseBrokerList(bad); err == nil {
			t.Errorf("ParseBrokerList(%q) succeeded", bad)
		}
	}
}

func TestBrokerPartition(t *testing.T) {
	bp := func(b BrokerID, p Partition) BrokerPartition { return BrokerPartition{Broker: b, Partition: p} }
	if bp(1, 2).Compare(bp(1, 10)) >= 0 || bp(1, 10).Compare(bp(2, 0)) >= 0 || bp(2, 0).Compare(bp(2, 0)) != 0 {
		t.Fatal("Compare is not numeric by broker then partition")
	}
	if s := bp(12, 3).String(); s != "12-3" {
		t.Fatalf("String = %q, want 12-3", s)
	}
}
