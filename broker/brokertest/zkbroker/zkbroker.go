// Package zkbroker starts real brokers registered in a real ZooKeeper for
// tests: brokertest's broker with a zkcoord.Registrar, as kafka-server runs
// it with zk.connect set (paper §3.2: brokers announce themselves and their
// topics in ZooKeeper, where producers and consumer groups find them).
//
//	connect, b := zkbroker.StartInChroot(t, cfg) // a chroot of its own
//	obs := zkbroker.Dial(t, zkcoord.Config{Connect: connect})
//	zkbroker.WaitTopic(t, obs, "t", cfg.BrokerID, cfg.Log.NumPartitions)
//
// It is a package of its own, not part of brokertest, so that brokertest,
// which the 2011 packages' tests use, stays free of zkcoord and the
// ZooKeeper client, and so that zkcoord's tests may use brokertest without
// an import cycle. Only test files import it. zkcoord's own in-package
// tests cannot (zkbroker imports zkcoord) and keep their small helpers.
package zkbroker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// Timeout bounds Dial and WaitTopic: generous, for a loaded 2-core machine
// running tests with -race; a passing test never waits for the whole of it.
const Timeout = 30 * time.Second

// Start starts a broker with cfg (see brokertest.Start) registered in the
// ZooKeeper at zcfg.Connect by a zkcoord.Registrar with zcfg: it sets
// cfg.EnableZookeeper, cfg.ZkConnect and cfg.Registrar. The Registrar is
// closed when the test ends, after the broker stops (an error from Close
// fails the test); closing it sooner ends the registration, as a broker
// leaving the cluster.
func Start(t testing.TB, cfg broker.Config, zcfg zkcoord.Config) (*brokertest.Broker, *zkcoord.Registrar) {
	t.Helper()
	reg := zkcoord.NewRegistrar(zcfg)
	// Registered before brokertest.Start's cleanup, so it runs after the
	// broker has stopped, as zkcoord.Registrar asks.
	t.Cleanup(func() {
		if err := reg.Close(); err != nil {
			t.Errorf("zkbroker: closing broker %d's registration: %v", cfg.BrokerID, err)
		}
	})
	cfg.EnableZookeeper = true
	cfg.ZkConnect = zcfg.Connect
	cfg.Registrar = reg
	return brokertest.Start(t, cfg), reg
}

// StartInChroot starts a broker with cfg registered in a fresh ZooKeeper
// chroot of its own (zktest.Start), with zkcoord's default session
// timeout, and returns the chroot's connect string and the broker.
func StartInChroot(t testing.TB, cfg broker.Config) (string, *brokertest.Broker) {
	t.Helper()
	connect := zktest.Start(t)
	b, _ := Start(t, cfg, zkcoord.Config{Connect: connect})
	return connect, b
}

// Dial opens a ZooKeeper session with zcfg, for the test's own reads and
// writes, and closes it when the test ends.
func Dial(t testing.TB, zcfg zkcoord.Config) *zkcoord.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	c, err := zkcoord.Dial(ctx, zcfg)
	if err != nil {
		t.Fatalf("zkbroker: dial %s: %v", zcfg.Connect, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// WaitTopic waits, at most Timeout, until obs sees broker id's
// registration of topic with partitions partitions
// (/brokers/topics/<topic>/<id> holds the count), so that producers and
// consumer groups that start next find all of them.
func WaitTopic(t testing.TB, obs *zkcoord.Conn, topic string, id wire.BrokerID, partitions int) {
	t.Helper()
	want := strconv.Itoa(partitions)
	wait.Within(t, Timeout, fmt.Sprintf("broker %d to register topic %s with %d partitions", id, topic, partitions), func() bool {
		v, ok, err := obs.GetMaybe(zkcoord.TopicBrokerPath(topic, id))
		return err == nil && ok && string(v) == want
	})
}
