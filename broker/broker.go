// Package broker is a Kafka 0.7 broker: it wires the log manager
// (broker/log), the network server (broker/server) and the registration in
// ZooKeeper (through a Registrar), configured by Kafka 0.7's
// server.properties keys.
//
// Paper §3 (Figure 1): a Kafka cluster is a set of brokers; each stores
// partitions of topics, producers push messages to them and consumers pull
// messages from them.
//
//	b, err := broker.New(cfg)   // opens and recovers the logs, listens
//	...
//	err = b.Run(ctx)            // serves until ctx ends, then shuts down
package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/metrics"
	"github.com/netdb11/kafka/broker/server"
)

// Layer is a layer above the 2011 broker -- the replication layer,
// broker/replica, which this package never imports -- built by
// Config.Layer: it serves the request types 0.7 does not have and runs
// beside the schedulers.
type Layer interface {
	server.Extension
	// Run runs the layer until ctx ends, after the broker registered.
	Run(ctx context.Context) error
	// Owns reports whether the layer manages topic (a replicated topic):
	// the broker then leaves it out of 0.7's registry, where every replica
	// would show up to 0.7 consumers as a partition of its own.
	Owns(topic string) bool
}

// Broker is one running broker. Create it with New and call Run once.
type Broker struct {
	cfg   Config
	log   *slog.Logger
	logs  *log.Manager
	srv   *server.Server
	layer Layer // nil: the 2011 broker
	ln    net.Listener
	// interLn is the inter-broker listener (replica.port), opened when
	// there is a layer; interTLS its TLS configuration (nil: plaintext).
	interLn  net.Listener
	interTLS *tls.Config
	topics   topicQueue
	ran      atomic.Bool
	ready    chan struct{} // closed when Run has registered and serves

	// metrics and its listener exist when metrics.listen is set.
	metrics   *metrics.Metrics
	metricsLn net.Listener
}

// New validates cfg (each layer its own part: the broker's keys here, the
// log's in log.Open, the server's in server.New), opens (and if needed
// recovers) the logs under log.dir
// and starts listening, so Addr is known when it returns. Nothing is served
// until Run, which also releases the listener and the logs when it returns:
// a Broker from New must be Run.
func New(cfg Config) (*Broker, error) {
	if err := cfg.validateOwn(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, ready: make(chan struct{})}
	b.topics.wake = make(chan struct{}, 1)
	lc, sc := cfg.Log, cfg.Server
	lc.OnNewTopic = b.onNewTopic
	if lc.Logger == nil {
		lc.Logger = cfg.Logger
	}
	if sc.Logger == nil {
		sc.Logger = cfg.Logger
	}
	if cfg.MetricsListen != "" {
		b.metrics = metrics.New()
		lc.Observer, sc.Observer = b.metrics, b.metrics
	}
	logs, err := log.Open(lc)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b.logs = logs
	sc.Logs = logs
	if cfg.Layer != nil {
		if b.layer, err = cfg.Layer(logs); err != nil {
			return nil, errors.Join(fmt.Errorf("broker: %w", err), logs.Close())
		}
		sc.Extension = b.layer
		if src, ok := b.layer.(metrics.ReplicationSource); ok && b.metrics != nil {
			b.metrics.AddReplication(src)
		}
	}
	b.srv, err = server.New(sc)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("broker: %w", err), logs.Close())
	}
	lcfg := net.ListenConfig{Control: receiveBufferControl(sc.ReceiveBuffer)}
	addr := net.JoinHostPort(cfg.Hostname, strconv.Itoa(cfg.Port))
	b.ln, err = lcfg.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("broker: listen on %s: %w", addr, err), logs.Close())
	}
	if b.layer != nil {
		if err := b.listenInterBroker(); err != nil {
			return nil, errors.Join(err, b.ln.Close(), logs.Close())
		}
	}
	if b.metrics != nil {
		if b.metricsLn, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			return nil, errors.Join(fmt.Errorf("broker: metrics.listen on %s: %w", cfg.MetricsListen, err), b.ln.Close(), b.closeInterBroker(), logs.Close())
		}
	}
	return b, nil
}

// receiveBufferControl sets SO_RCVBUF on the listening socket, so accepted
// connections start with it and TCP window scaling is agreed accordingly
// (Kafka 0.7 sets it on its server socket too).
func receiveBufferControl(size int) func(network, address string, c syscall.RawConn) error {
	if size <= 0 {
		return nil
	}
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, size)
		}); err != nil {
			return err
		}
		return os.NewSyscallError("setsockopt SO_RCVBUF", serr)
	}
}

// Addr returns the address the broker listens on (with the real port when
// port was 0).
func (b *Broker) Addr() net.Addr { return b.ln.Addr() }

// Ready returns a channel closed once Run has registered the broker and is
// serving (connections made earlier wait in the listen queue).
func (b *Broker) Ready() <-chan struct{} { return b.ready }

// Layer returns the layer built by Config.Layer, or nil.
func (b *Broker) Layer() Layer { return b.layer }

// MetricsAddr returns the address of the metrics listener, or nil when
// metrics.listen is not set.
func (b *Broker) MetricsAddr() net.Addr {
	if b.metricsLn == nil {
		return nil
	}
	return b.metricsLn.Addr()
}

// Metrics returns the broker's metrics, or nil when metrics.listen is not
// set; a layer may add its series to its Registry.
func (b *Broker) Metrics() *metrics.Metrics { return b.metrics }

// Logs returns the broker's log manager, for tests and tools that look at
// what the broker stores.
func (b *Broker) Logs() *log.Manager { return b.logs }

// Run registers the broker (when enable.zookeeper is set and a Registrar is
// configured), runs the log's flush and retention schedulers and serves
// clients until ctx ends. It then shuts down gracefully: it stops
// accepting, lets connections finish the request they are handling, stops
// the schedulers, and closes the logs, which flushes them and writes the
// clean-shutdown markers. It returns the errors of serving and closing; a
// shutdown caused by ctx is not an error. Run may be called only once.
func (b *Broker) Run(ctx context.Context) error {
	if !b.ran.CompareAndSwap(false, true) {
		return errors.New("broker: Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, whatever path returns

	if err := b.register(ctx, &wg); err != nil {
		cancel()
		wg.Wait()
		return errors.Join(err, b.ln.Close(), b.closeInterBroker(), b.closeMetricsListener(), b.logs.Close())
	}
	if b.metricsLn != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.serveMetrics(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := b.logs.Run(ctx); err != nil {
			b.log.Error("log schedulers stopped", "err", err)
		}
	}()
	var layerErr, interErr error
	if b.interLn != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if interErr = b.srv.ServeListener(ctx, b.interLn, server.Listener{InterBroker: true, TLS: b.interTLS}); interErr != nil {
				b.log.Error("inter-broker listener stopped; stopping the broker", "err", interErr)
				cancel()
			}
		}()
	}
	if b.layer != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.layer.Run(ctx); err != nil {
				// The layer halts on a storage error it cannot leave
				// behind (0.8 halts the broker): the whole broker stops,
				// so its registration goes and the controller elects
				// another replica.
				b.log.Error("replication layer stopped; stopping the broker", "err", err)
				layerErr = err
				cancel()
			}
		}()
	}
	close(b.ready)
	b.log.Info("broker started", "brokerid", b.cfg.BrokerID, "addr", b.Addr().String(), "log.dir", b.cfg.Log.Dir)
	serveErr := b.srv.Serve(ctx, b.ln)
	cancel()
	wg.Wait()
	serveErr = errors.Join(serveErr, interErr)
	closeErr := b.logs.Close()
	if closeErr != nil {
		closeErr = fmt.Errorf("broker: closing logs: %w", closeErr)
	}
	b.log.Info("broker stopped", "brokerid", b.cfg.BrokerID, "clean", serveErr == nil && closeErr == nil && layerErr == nil)
	return errors.Join(layerErr, serveErr, closeErr)
}

// closeMetricsListener closes the metrics listener of a broker that will not
// serve it.
func (b *Broker) closeMetricsListener() error {
	if b.metricsLn == nil {
		return nil
	}
	return b.metricsLn.Close()
}

// serveMetrics serves the metrics and admin endpoint until ctx ends.
func (b *Broker) serveMetrics(ctx context.Context) {
	hs := &http.Server{
		Handler:           b.metrics.Handler(b.cfg.BrokerID, b.logs),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(b.log.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		hs.Close()
	}()
	b.log.Info("metrics served", "addr", "http://"+b.metricsLn.Addr().String()+"/metrics")
	if err := hs.Serve(b.metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
		b.log.Error("metrics listener stopped", "err", err)
	}
	<-done
}
