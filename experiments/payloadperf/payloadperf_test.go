package payloadperf

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/consumer"

	"github.com/netdb11/kafka/broker/wire"
)

func TestReadPayloads(t *testing.T) {
	got, err := ReadPayloads(strings.NewReader("first line\n\nsecond\n"))
	if err != nil || len(got) != 2 || string(got[0]) != "first line" || string(got[1]) != "second" {
		t.Errorf("ReadPayloads = %q, %v", got, err)
	}
	if _, err := ReadPayloads(strings.NewReader("\n\n")); err == nil {
		t.Error("a file of empty lines gave payloads")
	}
}

func TestValidate(t *testing.T) {
	ok := Config{BrokerList: "0:127.0.0.1:1", Topic: "t", Messages: 1, BatchSize: 1, Payloads: [][]byte{{1}}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"broker":   func(c *Config) { c.BrokerList = "" },
		"topic":    func(c *Config) { c.Topic = "" },
		"messages": func(c *Config) { c.Messages = 0 },
		"batch":    func(c *Config) { c.BatchSize = 0 },
		"codec":    func(c *Config) { c.Codec = 3 },
		"payloads": func(c *Config) { c.Payloads = nil },
	} {
		c := ok
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
}

// TestProduceArrives sends compressed log lines to a real broker and reads the
// exact payloads back, in order.
func TestProduceArrives(t *testing.T) {
	for _, codec := range []int{0, 1, 2} {
		b := brokertest.Start(t, brokertest.Config())
		payloads := [][]byte{[]byte("2011-06-12 GET /home member=1"), []byte("2011-06-12 GET /feed member=2"), []byte("2011-06-12 POST /jobs member=3")}
		cfg := Config{BrokerList: "0:" + b.Addr, Topic: "logs", Messages: 100, BatchSize: 7, Codec: codec, Payloads: payloads}
		res, err := Produce(context.Background(), cfg)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		if res.Messages != 100 || res.Bytes == 0 || len(res.Samples) == 0 {
			t.Errorf("codec %d: result %+v", codec, res)
		}
		sc, err := consumer.NewSimpleConsumer(b.Addr, consumer.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		offset := wire.Offset(0)
		deadline := time.Now().Add(10 * time.Second)
		for len(got) < 100 && time.Now().Before(deadline) {
			set, err := sc.Fetch(context.Background(), "logs", 0, offset, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			it := set.Iterator()
			for it.Next() {
				got = append(got, append([]byte(nil), it.Payload()...))
				offset = it.NextOffset()
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := sc.Close(); err != nil {
			t.Error(err)
		}
		if len(got) != 100 {
			t.Fatalf("codec %d: read %d messages, want 100", codec, len(got))
		}
		for i, p := range got {
			if !bytes.Equal(p, payloads[i%len(payloads)]) {
				t.Fatalf("codec %d: message %d = %q, want %q", codec, i, p, payloads[i%len(payloads)])
			}
		}
	}
}
