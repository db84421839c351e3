package group

import (
	"strings"
	"testing"
	"time"
)

func TestConfigSetAndValidate(t *testing.T) {
	c := DefaultConfig()
	for k, v := range map[string]string{
		"groupid": "g", "zk.connect": "h:1", "zk.synctime.ms": "300", "backoff.increment.ms": "7",
		"fetch.size": "4096", "autocommit.enable": "false", "autooffset.reset": "largest", "consumer.timeout.ms": "-1",
	} {
		if err := c.Set(k, v); err != nil {
			t.Fatalf("Set(%s): %v", k, err)
		}
	}
	if c.GroupID != "g" || c.RebalanceBackoff != 300*time.Millisecond || c.FetcherBackoff != 7*time.Millisecond ||
		c.FetchSize != 4096 || c.AutoCommit || c.AutoOffsetReset != OffsetLargest || c.ConsumerTimeout != -time.Millisecond {
		t.Fatalf("config %+v", c)
	}
	c.AutoCommitInterval = 0 // not checked with autocommit off
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for _, tc := range []struct{ key, value, want string }{
		{"fetch.size", "0", "fetch.size=0: must be in 1..1073741824"},
		{"autooffset.reset", "middle", `autooffset.reset=middle: must be "smallest" or "largest"`},
		{"consumer.timeout.ms", "0", "consumer.timeout.ms=0"},
		{"groupid", "a/b", "must be usable as a ZooKeeper node name"},
		{"queuedchunks.max", "x", "not an integer"},
		{"no.such.key", "1", "unknown consumer property"},
	} {
		c := DefaultConfig()
		if err := c.Set(tc.key, tc.value); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%s, %s) = %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
	c = DefaultConfig()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `groupid="": must be set`) {
		t.Errorf("Validate without groupid = %v", err)
	}
}
