package replica

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/zkcoord"
)

// scrapeReplication reads the replication series off a broker's /metrics.
func scrapeReplication(t *testing.T, n *node) (under, shrinks, expands, elections int) {
	t.Helper()
	resp, err := http.Get("http://" + n.b.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) int {
		m := regexp.MustCompile(`(?m)^` + name + ` (\d+)$`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("/metrics has no %s:\n%s", name, body)
		}
		v, _ := strconv.Atoi(string(m[1]))
		return v
	}
	return get("kafka_replica_under_replicated_partitions"), get("kafka_replica_isr_shrinks_total"),
		get("kafka_replica_isr_expands_total"), get("kafka_replica_leader_elections_total")
}

// TestReplicationMetrics: a leader whose follower stops shrinks the ISR and
// reports its partition under-replicated; when the follower is back it
// expands the ISR and the partition is whole again; when the leader stops,
// the controller elects another, and the brokers' /metrics say so.
func TestReplicationMetrics(t *testing.T) {
	c := startCluster(t, 2, func(id int, cfg *broker.Config, rc *Config) { cfg.MetricsListen = "127.0.0.1:0" })
	dirs := map[BrokerID]string{}
	for id, nd := range c.brokers {
		dirs[id] = nd.dir
	}
	c.createTopic("m", zkcoord.Assignment{0: {0, 1}})
	leader := c.waitLeader("m", 0, 2)
	follower := 1 - leader
	if under, shrinks, _, _ := scrapeReplication(t, c.brokers[leader]); under != 0 || shrinks != 0 {
		t.Fatalf("a whole partition: under-replicated %d, shrinks %d", under, shrinks)
	}

	c.stop(follower)
	c.waitLeader("m", 0, 1)
	wait.Within(t, clusterTimeout, "the leader to report the shrink", func() bool {
		under, shrinks, _, _ := scrapeReplication(t, c.brokers[leader])
		return under == 1 && shrinks == 1
	})

	c.restart(follower, dirs[follower])
	c.waitLeader("m", 0, 2)
	wait.Within(t, clusterTimeout, "the leader to report the expand", func() bool {
		under, _, expands, _ := scrapeReplication(t, c.brokers[leader])
		return under == 0 && expands == 1
	})

	// The admin endpoint shows each replica's view: the leader's with the
	// follower caught up, the follower's with its role.
	wait.Within(t, clusterTimeout, "the leader's admin answer to show the follower caught up", func() bool {
		var got admin.Partition
		adminJSON(t, c.brokers[leader], "/admin/partitions/m/0", &got)
		r := got.Replication
		return r != nil && r.Role == "leader" && r.Leader == leader && len(r.ISR) == 2 && len(r.Followers) == 1 &&
			r.Followers[0].ID == follower && r.Followers[0].Lag == 0 && r.Followers[0].LogEnd == r.LogEnd
	})
	wait.Within(t, clusterTimeout, "the follower's admin answer to name its role", func() bool {
		var got admin.Partition
		adminJSON(t, c.brokers[follower], "/admin/partitions/m/0", &got)
		return got.Replication != nil && got.Replication.Role == "follower" && got.Replication.Leader == leader
	})

	c.stop(leader)
	c.waitLeader("m", 0, 1)
	wait.Within(t, clusterTimeout, "the new leader's controller to count the election", func() bool {
		_, _, _, elections := scrapeReplication(t, c.brokers[follower])
		return elections >= 1
	})
}

// adminJSON decodes a broker's admin endpoint's answer at path into v.
func adminJSON(t *testing.T, n *node, path string, v any) {
	t.Helper()
	resp, err := http.Get("http://" + n.b.MetricsAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
