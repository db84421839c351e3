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

func TestConfigAcks(t *testing.T) {
	d := DefaultConfig()
	// 0.8's names and defaults.
	if d.RequiredAcks != 0 || d.RequestTimeout != 10*time.Second || d.MessageSendMaxRetries != 3 ||
		d.RetryBackoff != 100*time.Millisecond || d.TopicMetadataRefreshInterval != 600*time.Second {
		t.Errorf("defaults: %+v", d)
	}
	for _, tc := range []struct {
		v    string
		want int16
		ok   bool
	}{{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"all", -1, true}, {" ALL ", -1, true},
		{"2", 0, false}, {"-2", 0, false}, {"one", 0, false}, {"", 0, false}} {
		c := DefaultConfig()
		err := c.Set("request.required.acks", tc.v)
		if (err == nil) != tc.ok || (tc.ok && c.RequiredAcks != tc.want) {
			t.Errorf("Set(request.required.acks, %q) = %v, acks %d; want ok=%v acks %d", tc.v, err, c.RequiredAcks, tc.ok, tc.want)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "request.required.acks")) {
			t.Errorf("Set(request.required.acks, %q): error %v does not name the key", tc.v, err)
		}
	}
	c := DefaultConfig()
	for k, v := range map[string]string{"request.timeout.ms": "1500", "message.send.max.retries": "7",
		"retry.backoff.ms": "25", "topic.metadata.refresh.interval.ms": "0"} {
		if err := c.Set(k, v); err != nil {
			t.Fatalf("Set(%s): %v", k, err)
		}
	}
	if c.RequestTimeout != 1500*time.Millisecond || c.MessageSendMaxRetries != 7 || c.RetryBackoff != 25*time.Millisecond ||
		c.TopicMetadataRefreshInterval != 0 {
		t.Errorf("config = %+v", c)
	}
	// With acks, every send is confirmed.
	c.RequiredAcks, c.Type = 1, Async
	if c.confirm() != ConfirmSend {
		t.Errorf("acks=1 async confirms %q, want send", c.confirm())
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
		{func(c *Config) { c.RequiredAcks = 2 }, "request.required.acks=2"},
		{func(c *Config) { c.RequiredAcks = 1; c.RequestTimeout = 0 }, "request.timeout.ms"},
		{func(c *Config) { c.RequiredAcks = -1; c.MessageSendMaxRetries = -1 }, "message.send.max.retries=-1"},
		{func(c *Config) { c.RequiredAcks = 1; c.RetryBackoff = -time.Millisecond }, "retry.backoff.ms"},
		{func(c *Config) { c.RequiredAcks = 1; c.Confirm = ConfirmClose }, "confirm=\"close\": request.required.acks=1"},
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
