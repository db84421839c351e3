package ui_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/replicatest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer/ui"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// startReplicated starts broker id with the replication layer, as
// kafka-server runs it, and with metrics its admin endpoint.
func startReplicated(t *testing.T, zk string, id wire.BrokerID, metrics bool) *brokertest.Broker {
	t.Helper()
	cfg := replicatest.Config(id, zk)
	if metrics {
		cfg.MetricsListen = "127.0.0.1:0"
	}
	cfg.ZkSessionTimeout = 10 * time.Second
	cfg.Replica.LagTime = 2 * time.Second
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	b, _ := replicatest.Start(t, cfg)
	return b
}

// TestReplicatedPartition: for a partition the replication layer manages,
// the partition page shows the replica's role, the high watermark (on the
// bar too) and, on the leader, each follower's log end and lag.
func TestReplicatedPartition(t *testing.T) {
	zk := zktest.Start(t)
	brokers := []*brokertest.Broker{startReplicated(t, zk, 0, true), startReplicated(t, zk, 1, true)}
	obs := zkbroker.Dial(t, zkcoord.Config{Connect: zk, SessionTimeout: 10 * time.Second})
	if err := zkcoord.ReplicationOn(obs).CreateTopic("r", zkcoord.Assignment{0: {0, 1}}); err != nil {
		t.Fatal(err)
	}
	var st zkcoord.PartitionState
	wait.Within(t, time.Minute, "r-0 to have a leader and both replicas in sync", func() bool {
		var ok bool
		var err error
		st, _, ok, err = zkcoord.ReplicationOn(obs).PartitionStateOf("r", 0)
		return err == nil && ok && len(st.ISR) == 2
	})
	leader, follower := st.Leader, 1-st.Leader

	// Produce to the leader with acks=all, so that the high watermark moves.
	set := wire.NewMessageSet([]byte("one"), []byte("two"))
	wait.Within(t, time.Minute, "the leader to acknowledge a produce", func() bool {
		return replicatest.ProduceAcks(brokers[leader].Addr, "r", 0, set) == nil
	})
	hw := fmt.Sprint(len(set))

	cfg := ui.DefaultConfig()
	cfg.ZkConnect = zk
	base := serve(t, cfg)
	wait.Within(t, time.Minute, "the leader's page to show the caught-up follower", func() bool {
		body := get(t, fmt.Sprintf("%s/topics/r/%d-0", base, leader), http.StatusOK)
		return strings.Contains(body, `id="role">leader`) && strings.Contains(body, `id="hw-offset">`+hw+"<") &&
			strings.Contains(body, `id="hw"`) && strings.Contains(body, fmt.Sprintf(`href="/brokers/%d">%d</a></td><td class="num">%s</td><td class="num">0</td>`, follower, follower, hw))
	})
	body := get(t, fmt.Sprintf("%s/topics/r/%d-0", base, follower), http.StatusOK)
	if !strings.Contains(body, `id="role">follower`) {
		t.Errorf("the follower's page does not name its role:\n%s", body)
	}

	// A group's offset of the replicated partition (0.8's node name "0")
	// is one row, linked to the leader's replica, with its log end.
	if err := zkcoord.GroupsOn(obs).CommitOffset("g", "r", zkcoord.ReplicatedPartition(0), 0); err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`<a href="/topics/r/%d-0">0</a>`, leader)
	wait.Within(t, time.Minute, "the group page's row of the replicated partition", func() bool {
		body = get(t, base+"/groups/g", http.StatusOK)
		return strings.Contains(body, row) && strings.Contains(body, `<td class="num end">`+hw+"<")
	})
	if strings.Contains(body, fmt.Sprintf(`/topics/r/%d-0"`, follower)) || strings.Contains(body, "-1-0") {
		t.Errorf("the group page lists the replicas, not the partition:\n%s", body)
	}
}

// TestUnknownLag: a group's lag that cannot be known (a replicated
// partition with no leader to ask its high watermark of) shows as unknown
// on the front page and the group page, not as 0. Before, the front page
// summed the known lags only and said "0 B" while the group page said "?".
func TestUnknownLag(t *testing.T) {
	zk := zktest.Start(t)
	obs := zkbroker.Dial(t, zkcoord.Config{Connect: zk, SessionTimeout: 10 * time.Second})
	// Assigned to a broker that never ran: no state, no leader.
	if err := zkcoord.ReplicationOn(obs).CreateTopic("orphan", zkcoord.Assignment{0: {7}}); err != nil {
		t.Fatal(err)
	}
	if err := zkcoord.GroupsOn(obs).CommitOffset("g", "orphan", zkcoord.ReplicatedPartition(0), 10); err != nil {
		t.Fatal(err)
	}
	cfg := ui.DefaultConfig()
	cfg.ZkConnect = zk
	base := serve(t, cfg)
	for path, want := range map[string][]string{
		"/":         {`<a href="/groups/g">g</a></td><td class="num">0</td><td class="num">?</td>`},
		"/groups/g": {`id="lag-unknown"`, "not counting 1 of 1 partitions", `<td class="num end">?</td>`},
	} {
		body := get(t, base+path, http.StatusOK)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s does not show %q:\n%s", path, w, body)
			}
		}
	}
}
