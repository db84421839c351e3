package replica

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// Every key of the layer's table sets its field of Config, and a bad value
// is refused with the key's own message, leaving Config as it was.
func TestKeysSetEveryKey(t *testing.T) {
	values := map[string]string{
		"replica.lag.time.max.ms": "1500", "replica.truncation": "hw", "min.insync.replicas": "2",
		"unclean.leader.election.enable": "true", "replica.fetch.max.bytes": "65536",
		"replica.fetch.wait.max.ms": "0", "replica.fetch.backoff.ms": "7",
		"replica.high.watermark.checkpoint.interval.ms": "900",
	}
	if len(values) != len(Keys.Names()) {
		t.Fatalf("test covers %d keys of %d", len(values), len(Keys.Names()))
	}
	c := DefaultConfig()
	for k, v := range values {
		if err := Keys.Set(&c, k, " "+v+" "); err != nil {
			t.Fatalf("Set(%s, %s): %v", k, v, err)
		}
		if got, _ := Keys.Get(&c, k); got != v {
			t.Errorf("Get(%s) = %q, want %q", k, got, v)
		}
	}
	want := DefaultConfig()
	want.LagTime, want.Truncation, want.MinInsyncReplicas = 1500*time.Millisecond, TruncateHW, 2
	want.UncleanElection, want.FetchMaxBytes, want.FetchWait = true, 65536, 0
	want.Backoff, want.CheckpointInterval = 7*time.Millisecond, 900*time.Millisecond
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	if err := Keys.Validate(&c); err != nil {
		t.Fatal(err)
	}
	for k, bad := range map[string]string{"replica.lag.time.max.ms": "0", "replica.truncation": "none",
		"min.insync.replicas": "0", "replica.fetch.max.bytes": "10", "unclean.leader.election.enable": "maybe"} {
		before := c
		if err := Keys.Set(&c, k, bad); err == nil || !strings.Contains(err.Error(), k+"=") {
			t.Errorf("Set(%s, %s) = %v, want an error naming the key", k, bad, err)
		}
		if !reflect.DeepEqual(c, before) {
			t.Errorf("Set(%s, %s) changed the config", k, bad)
		}
	}
}
