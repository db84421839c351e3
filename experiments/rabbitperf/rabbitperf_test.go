package rabbitperf

import (
	"context"
	"strings"
	"testing"
)

// The driver against a real RabbitMQ is tested in package experiments
// (TestIntegrationPeers), which starts one through scripts/peers.sh.

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"url":      func(c *Config) { c.URL = "" },
		"queue":    func(c *Config) { c.Queue = "" },
		"messages": func(c *Config) { c.Messages = 0 },
		"size":     func(c *Config) { c.MessageSize = 0 },
		"tx":       func(c *Config) { c.TxSize = -1 },
		"prefetch": func(c *Config) { c.Prefetch = 70000 },
		"duration": func(c *Config) { c.Duration = -1 },
	} {
		c := DefaultConfig()
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
		if _, err := Produce(context.Background(), c); err == nil {
			t.Errorf("%s: Produce accepted an invalid config", name)
		}
	}
}

func TestPayload(t *testing.T) {
	a, b := Payload(200), Payload(200)
	if len(a) != 200 || string(a) != string(b) {
		t.Error("Payload is not a fixed 200-byte value")
	}
}

func TestDialErrorHidesPassword(t *testing.T) {
	c := DefaultConfig()
	c.URL = "amqp://guest:secret@127.0.0.1:1/"
	_, err := Produce(context.Background(), c)
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Produce to a closed port = %v; want an error without the password", err)
	}
}
