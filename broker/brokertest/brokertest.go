// Package brokertest starts real brokers for tests, as net/http/httptest
// starts real HTTP servers: a broker.Broker listening on 127.0.0.1 with a
// free port and a log directory of its own, stopped gracefully when the
// test ends.
//
//	b := brokertest.Start(t, brokertest.Config())
//	conn, err := net.Dial("tcp", b.Addr)
package brokertest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
)

// Broker is a broker started by Start.
type Broker struct {
	*broker.Broker
	// Addr is the broker's "127.0.0.1:port".
	Addr string
	// Host and Port are Addr's parts.
	Host string
	Port int
	// Config is the configuration it runs with (Log.Dir and Port filled in).
	Config broker.Config

	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{} // closed when Run has returned
	runErr   error         // Run's result; read after done
	exitSeen atomic.Bool   // Exited returned runErr: Stop does not report it
}

// Config returns a configuration for tests: broker.DefaultConfig with
// ZooKeeper off, log.flush.interval=1 and a short shutdown timeout. Start
// fills in the address and the log directory.
//
// As in Kafka 0.7 a message is visible to fetches only once flushed; with
// log.flush.interval=1 the log's flusher goroutine flushes right after each
// append, so a consumer sees it shortly after the produce request is
// handled. Flush makes everything appended so far visible at once.
func Config() broker.Config {
	cfg := broker.DefaultConfig()
	cfg.EnableZookeeper = false
	cfg.Log.FlushInterval = 1
	cfg.Server.ShutdownTimeout = 5 * time.Second
	return cfg
}

// Start starts a broker with cfg, waits until it serves (registered, if a
// Registrar is set), and stops it when the test ends (Stop;
// an error from the shutdown fails the test). It listens on 127.0.0.1 on a
// free port (cfg.Hostname and cfg.Port are overridden), in a fresh
// t.TempDir() unless cfg.Log.Dir is set to something other than
// broker.DefaultConfig's shared /tmp/kafka-logs. ZooKeeper registration is
// off unless cfg.Registrar is set. A nil cfg.Logger logs warnings and
// errors to t.Log.
func Start(t testing.TB, cfg broker.Config) *Broker {
	t.Helper()
	if cfg.Log.Dir == "" || cfg.Log.Dir == broker.DefaultConfig().Log.Dir {
		cfg.Log.Dir = t.TempDir()
	}
	cfg.Hostname = "127.0.0.1"
	cfg.Port = 0
	return start(t, cfg)
}

// Restart stops b gracefully and starts a broker with the same
// configuration, log directory and address, so that clients can reconnect
// to b.Addr. It returns the new broker; b is stopped.
func (b *Broker) Restart(t testing.TB) *Broker {
	t.Helper()
	if err := b.Stop(); err != nil {
		t.Fatalf("brokertest: stopping for restart: %v", err)
	}
	cfg := b.Config
	cfg.Port = b.Port
	return start(t, cfg)
}

func start(t testing.TB, cfg broker.Config) *Broker {
	t.Helper()
	if cfg.Registrar == nil {
		cfg.EnableZookeeper = false
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	bk, err := broker.New(cfg)
	if err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	addr := bk.Addr().(*net.TCPAddr)
	cfg.Port = addr.Port
	ctx, cancel := context.WithCancel(context.Background())
	b := &Broker{
		Broker: bk,
		Addr:   addr.String(),
		Host:   addr.IP.String(),
		Port:   addr.Port,
		Config: cfg,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go func() {
		defer close(b.done)
		b.runErr = bk.Run(ctx)
	}()
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("brokertest: %v", err)
		}
	})
	select {
	case <-bk.Ready():
	case <-b.done:
		t.Fatalf("brokertest: broker on %s did not start: %v", b.Addr, b.runErr)
	}
	return b
}

// Flush flushes every partition, making every message the broker has
// appended so far visible to fetches. (A PRODUCE has no response: to know
// that the broker has handled one, send any request with a response on the
// same connection and read it first.)
func (b *Broker) Flush(t testing.TB) {
	t.Helper()
	if err := b.Logs().FlushAll(); err != nil {
		t.Fatalf("brokertest: flush: %v", err)
	}
}

// Done is closed when the broker's Run has returned: stopped by Stop, or
// on its own (a replication layer that halts on a storage error stops the
// whole broker, as 0.8 does).
func (b *Broker) Done() <-chan struct{} { return b.done }

// Exited waits until Run returns, without stopping the broker, and returns
// Run's error; Stop and the test's cleanup then no longer report that error.
// It is for tests in which the broker is expected to stop on its own.
func (b *Broker) Exited() error {
	<-b.done
	b.exitSeen.Store(true)
	return b.runErr
}

// Stop shuts the broker down gracefully and waits for it: in-flight
// requests finish, the logs are flushed and closed with their clean-shutdown
// markers. It returns Run's error. Later calls return the same error.
func (b *Broker) Stop() error {
	b.stopOnce.Do(b.cancel)
	<-b.done
	if b.runErr != nil && !b.exitSeen.Load() {
		return fmt.Errorf("broker on %s: %w", b.Addr, b.runErr)
	}
	return nil
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
