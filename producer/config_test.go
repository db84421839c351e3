package producer

import (
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

func TestStaticCluster(t *testing.T) {
	c, err := NewStaticCluster("2:b:2,0:a:1")
	if err != nil {
		t.Fatal(err)
	}
	parts := c.Partitions("any")
	if len(parts) != 2 || parts[0] != (wire.BrokerPartition{Broker: 0, Partition: -1}) || parts[1] != (wire.BrokerPartition{Broker: 2, Partition: -1}) {
		t.Errorf("Partitions = %v, want sorted (0,-1),(2,-1)", parts)
	}
	if a, ok := c.BrokerAddr(2); !ok || a != "b:2" {
		t.Errorf("BrokerAddr(2) = %q, %v", a, ok)
	}
	if _, ok := c.BrokerAddr(1); ok {
		t.Errorf("BrokerAddr(1) found")
	}
}

func TestConfigSet(t *testing.T) {
	c := DefaultConfig()
	for k, v := range map[string]string{
		"broker.list": "0:h:1", "producer.type": "async", "compression.codec": "2",
		"compressed.topics": "a, b,", "batch.size": "50", "queue.time": "100",
		"queue.size": "7", "queue.enqueueTimeout.ms": "-1", "socket.timeout.ms": "10",
		"connect.timeout.ms": "20", "buffer.size": "1024", "reconnect.interval": "3",
		"reconnect.time.interval.ms": "-1", "max.message.size": "99",
	} {
		if err := c.Set(k, v); err != nil {
			t.Fatalf("Set(%s): %v", k, err)
		}
	}
	if c.BrokerList != "0:h:1" || c.Type != Async || c.CompressionCodec != wire.CodecSnappy ||
		strings.Join(c.CompressedTopics, "|") != "a|b" || c.BatchSize != 50 || c.QueueTime != 100*time.Millisecond ||
		c.QueueSize != 7 || c.EnqueueTimeout != -time.Millisecond || c.SocketTimeout != 10*time.Millisecond ||
		c.ConnectTimeout != 20*time.Millisecond || c.BufferSize != 1024 || c.ReconnectInterval != 3 ||
		c.ReconnectTimeInterval != -time.Millisecond || c.MaxMessageSize != 99 {
		t.Errorf("config = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if err := c.Set("batch.size", "many"); err == nil || !strings.Contains(err.Error(), "batch.size") {
		t.Errorf("Set(batch.size, many) = %v", err)
	}
	if err := c.Set("no.such.key", "1"); err == nil {
		t.Errorf("Set of an unknown key succeeded")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.BrokerList = "" }, "broker.list is empty"},
		{func(c *Config) { c.Type = "fast" }, "producer.type"},
		{func(c *Config) { c.CompressionCodec = 3 }, "compression.codec=3"},
		{func(c *Config) { c.BatchSize = 0 }, "batch.size=0"},
		{func(c *Config) { c.QueueTime = 0 }, "queue.time"},
		{func(c *Config) { c.QueueSize = 0 }, "queue.size=0"},
		{func(c *Config) { c.SocketTimeout = -1 }, "socket.timeout.ms"},
		{func(c *Config) { c.ConnectTimeout = 0 }, "connect.timeout.ms"},
		{func(c *Config) { c.BufferSize = -1 }, "buffer.size=-1"},
		{func(c *Config) { c.ReconnectInterval = 0 }, "reconnect.interval=0"},
		{func(c *Config) { c.MaxMessageSize = 0 }, "max.message.size=0"},
	} {
		c := DefaultConfig()
		c.BrokerList = "0:localhost:9092"
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate = %v, want an error about %q", err, tc.want)
		}
		if _, err := New(c); err == nil {
			t.Errorf("New accepted a config with a bad %q", tc.want)
		}
	}
}
