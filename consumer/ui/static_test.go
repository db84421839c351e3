package ui_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer/ui"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// serve runs a UI with cfg and returns its base URL.
func serve(t *testing.T, cfg ui.Config) string {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := ui.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ui: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// TestSources: the UI combines what ZooKeeper, --broker-list and --admin
// say: a registered broker with an admin endpoint (found in ZooKeeper)
// shows its segment files; a registered broker without one shows its
// offsets, from OFFSETS requests; a broker given by --broker-list and
// --admin only shows its segment files. Without ZooKeeper there are no
// groups.
func TestSources(t *testing.T) {
	zk := zktest.Start(t)
	start := func(id wire.BrokerID, registered, metrics bool) *brokertest.Broker {
		cfg := brokertest.Config()
		cfg.BrokerID = id
		if metrics {
			cfg.MetricsListen = "127.0.0.1:0"
		}
		if registered {
			b, _ := zkbroker.Start(t, cfg, zkcoord.Config{Connect: zk, SessionTimeout: 10 * time.Second})
			return b
		}
		return brokertest.Start(t, cfg)
	}
	brokers := []*brokertest.Broker{start(0, true, true), start(1, true, false), start(2, false, true)}
	set := wire.NewMessageSet([]byte("one"), []byte("two"))
	for _, b := range brokers {
		l, err := b.Logs().GetOrCreate("static", 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(set); err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	obs := zkbroker.Dial(t, zkcoord.Config{Connect: zk, SessionTimeout: 10 * time.Second})
	wait.For(t, "both registered brokers to register the topic", func() bool {
		held, err := zkcoord.RegistryOn(obs).TopicBrokers("static", false)
		return err == nil && len(held) == 2
	})

	cfg := ui.DefaultConfig()
	cfg.ZkConnect = zk
	cfg.Brokers = []wire.Broker{{ID: 2, Host: brokers[2].Host, Port: brokers[2].Port}}
	cfg.Admin = []string{brokers[2].MetricsAddr().String()}
	base := serve(t, cfg)
	end := fmt.Sprint(len(set))
	for path, want := range map[string][]string{
		"/":                  {`href="/topics/static/0-0"`, `href="/topics/static/1-0"`, `href="/topics/static/2-0"`, `id="groups"`},
		"/topics/static/0-0": {`id="segments"`, wire.SegmentName(0), `<td class="num" id="end">` + end + "</td>"},
		"/topics/static/1-0": {"No segment details", `<td class="num" id="flushed">` + end + "</td>"},
		"/topics/static/2-0": {`id="segments"`, wire.SegmentName(0)},
		"/brokers/1":         {"registered in ZooKeeper", "no admin endpoint"},
		"/brokers/2":         {"not registered in ZooKeeper", "/admin/partitions"},
		"/topics/static":     {"static 0-0", "static 1-0", "static 2-0"},
	} {
		body := get(t, base+path, http.StatusOK)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s does not show %q", path, w)
			}
		}
	}

	// Without ZooKeeper: the broker given, no groups.
	cfg.ZkConnect = ""
	base = serve(t, cfg)
	if body := get(t, base+"/", http.StatusOK); !strings.Contains(body, "start kafka-ui with --zookeeper") || !strings.Contains(body, `href="/topics/static/2-0"`) {
		t.Errorf("/ without ZooKeeper:\n%s", body)
	}
	if body := get(t, base+"/groups/g", http.StatusNotFound); !strings.Contains(body, "--zookeeper") {
		t.Errorf("/groups/g without ZooKeeper:\n%s", body)
	}
}
