package zkbroker_test

import (
	"fmt"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/zkcoord"
)

// TestRegistersAndLeaves: a broker started in its own chroot is registered
// there with its address and its topics, and closing its Registrar ends
// the registration (as a broker leaving the cluster).
func TestRegistersAndLeaves(t *testing.T) {
	cfg := brokertest.Config()
	cfg.BrokerID = 7
	cfg.Log.NumPartitions = 3
	connect, b := zkbroker.StartInChroot(t, cfg)
	obs := zkbroker.Dial(t, zkcoord.Config{Connect: connect})

	v, ok, err := obs.GetMaybe(zkcoord.BrokerPath(7))
	if err != nil || !ok {
		t.Fatalf("broker 7 not registered once started: %v, %v", ok, err)
	}
	if want := fmt.Sprintf(":127.0.0.1:%d", b.Port); len(v) < len(want) || string(v[len(v)-len(want):]) != want {
		t.Fatalf("registration %q, want it to end in %q", v, want)
	}
	if _, err := b.Logs().GetOrCreate("t", 0); err != nil {
		t.Fatal(err)
	}
	zkbroker.WaitTopic(t, obs, "t", 7, 3)

	if err := b.Config.Registrar.(*zkcoord.Registrar).Close(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, "broker 7's registration to go", func() bool {
		ok, err := obs.Exists(zkcoord.BrokerPath(7))
		return err == nil && !ok
	})
}
