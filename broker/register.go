package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
)

// topicQueue holds topics created on this broker that still have to be
// registered. The log manager reports a new topic from a producer's
// goroutine; registration (a ZooKeeper round trip) happens on the broker's
// own goroutine so that the produce request does not wait for it, as Kafka
// 0.7's LogManager hands new topics to its zkActor.
type topicQueue struct {
	mu      sync.Mutex
	pending []newTopic    // guarded by mu
	wake    chan struct{} // capacity 1: pending is not empty
}

type newTopic struct {
	name       string
	partitions int
}

func (q *topicQueue) push(t newTopic) {
	q.mu.Lock()
	q.pending = append(q.pending, t)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *topicQueue) take() []newTopic {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.pending
	q.pending = nil
	return out
}

// registering reports whether the broker registers itself.
func (b *Broker) registering() bool {
	return b.cfg.UsesZookeeper() && b.cfg.Registrar != nil
}

// onNewTopic is the log manager's OnNewTopic.
//
// Deviation: in Kafka 0.8 every replica of a partition registers it under
// /brokers/topics/<topic>/<id>. A topic the replication layer owns
// (Layer.Owns) stays out of 0.7's registry here, because to 0.7's
// consumers and producers each replica would be a partition of its own
// (duplicates, produces a follower refuses).
func (b *Broker) onNewTopic(topic string, partitions int) {
	if b.registering() && (b.layer == nil || !b.layer.Owns(topic)) {
		b.topics.push(newTopic{topic, partitions})
	}
}

// registeredHost is the host put in the registry: hostname, or this
// machine's IP address (see localHostAddress).
func (b *Broker) registeredHost() string {
	if b.cfg.Hostname != "" {
		return b.cfg.Hostname
	}
	addr, err := localHostAddress()
	if err != nil {
		b.log.Warn("no address for this host; registering 127.0.0.1 (set hostname)", "err", err)
		return "127.0.0.1"
	}
	return addr
}

// localHostAddress returns what Kafka 0.7 registers when hostname is unset,
// InetAddress.getLocalHost.getHostAddress: the address this machine's name
// resolves to (through /etc/hosts first), an IPv4 one if there is one. If
// the name does not resolve (where Java would throw), it returns the first
// address of an interface that is up and not loopback.
func localHostAddress() (string, error) {
	name, err := os.Hostname()
	if err == nil {
		var ips []net.IP
		if ips, err = net.LookupIP(name); err == nil && len(ips) > 0 {
			for _, ip := range ips {
				if ip.To4() != nil {
					return ip.String(), nil
				}
			}
			return ips[0].String(), nil
		}
	}
	ifaces, ierr := net.Interfaces()
	if ierr != nil {
		return "", errors.Join(err, ierr)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, aerr := ifc.Addrs()
		if aerr != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", fmt.Errorf("host name %q does not resolve and no interface has an address: %w", name, err)
}

// register registers the broker and the topics already on disk, then starts
// the goroutine (owned by wg, stopped by ctx) that registers new topics.
// Paper §3.2: each broker registers itself in the broker registry with its
// host name and port, and the topics and partitions it stores.
func (b *Broker) register(ctx context.Context, wg *sync.WaitGroup) error {
	if !b.cfg.UsesZookeeper() {
		return nil
	}
	r := b.cfg.Registrar
	if r == nil {
		b.log.Warn("enable.zookeeper is true but no registrar is configured; the broker is not registered", "zk.connect", b.cfg.ZkConnect)
		return nil
	}
	host := b.registeredHost()
	port := b.ln.Addr().(*net.TCPAddr).Port
	if b.interLn != nil {
		if ir, ok := r.(InterBrokerRegistrar); ok {
			ir.SetInterBrokerEndpoint(b.interBrokerEndpoint(host))
		} else {
			b.log.Warn("the registrar cannot publish the inter-broker endpoint; other brokers will not reach this one's", "addr", b.interLn.Addr().String())
		}
	}
	if pl, ok := b.layer.(PublishingLayer); ok {
		pl.PublishWith(r)
	}
	if err := r.Register(b.cfg.BrokerID, host, port); err != nil {
		return fmt.Errorf("broker: registering broker %d at %s:%d: %w", b.cfg.BrokerID, host, port, err)
	}
	topics := b.logs.Topics()
	names := make([]string, 0, len(topics))
	for t := range topics {
		if b.layer != nil && b.layer.Owns(t) {
			continue // replicated: found through METADATA, not 0.7's registry
		}
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		if err := r.RegisterTopic(t, topics[t]); err != nil {
			return fmt.Errorf("broker: registering topic %q: %w", t, err)
		}
	}
	b.log.Info("registered", "brokerid", b.cfg.BrokerID, "host", host, "port", port, "topics", len(names))
	if ar, ok := r.(AdminRegistrar); ok && b.metricsLn != nil {
		if err := ar.RegisterAdmin(b.adminAddr(host)); err != nil {
			return fmt.Errorf("broker: registering the admin endpoint: %w", err)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-b.topics.wake:
			}
			for _, t := range b.topics.take() {
				// As Kafka 0.7: log it and let it go.
				if err := r.RegisterTopic(t.name, t.partitions); err != nil {
					b.log.Error("registering a new topic", "topic", t.name, "err", err)
				}
			}
		}
	}()
	return nil
}

// AdminRegistrar is a Registrar that also publishes the broker's admin
// endpoint (metrics.listen), where kafka-ui finds segment details.
// zkcoord.Registrar is one: /brokers/admin/<id>, an extension to 0.7's
// registry.
type AdminRegistrar interface {
	RegisterAdmin(addr string) error
}

// adminAddr is the metrics listener's address as others reach it: with
// host, the registered host, when it listens on every interface.
func (b *Broker) adminAddr(host string) string {
	a := b.metricsLn.Addr().(*net.TCPAddr)
	if a.IP.IsUnspecified() {
		return net.JoinHostPort(host, strconv.Itoa(a.Port))
	}
	return a.String()
}
