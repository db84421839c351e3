package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// CreateTopic creates a replicated topic with kafka-topics, run on the
// client host against the cluster's ZooKeeper. A broker accepts
// connections a moment before it has registered in ZooKeeper, so a
// refusal for want of live brokers is retried for up to 30 s.
func (c *Cluster) CreateTopic(ctx context.Context, topic string, partitions, rf int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		cmd := c.tb.Command(ctx, clientHost, filepath.Join(c.cfg.Bin, "kafka-topics"),
			"--zookeeper="+c.ZKConnect(),
			"--create", "--topic="+topic, "--partitions="+strconv.Itoa(partitions), "--replication-factor="+strconv.Itoa(rf))
		out, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		if !strings.Contains(string(out), "live brokers") || time.Now().After(deadline) {
			return fmt.Errorf("faults: kafka-topics --create: %w: %s", err, out)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("faults: kafka-topics --create: %w: %s", err, out)
		}
	}
}

// PartitionInfo asks the live brokers, in turn, for a partition's leader,
// replicas and ISR; the first answer wins.
func (c *Cluster) PartitionInfo(ctx context.Context, topic string, part int32) (*wire.PartitionMetadata, error) {
	var errs []error
	for b := 1; b <= c.cfg.Brokers; b++ {
		if !c.Running(b) {
			continue
		}
		pm, err := c.partitionInfoFrom(ctx, b, topic, part)
		if err == nil {
			return pm, nil
		}
		errs = append(errs, fmt.Errorf("broker%d: %w", b, err))
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("no broker is running"))
	}
	// The brokers could not say (down, cut off, ZooKeeper stopped): to a
	// fault, nothing to strike.
	return nil, noTarget(fmt.Errorf("faults: metadata of %s-%d: %w", topic, part, errors.Join(errs...)))
}

func (c *Cluster) partitionInfoFrom(ctx context.Context, b int, topic string, part int32) (*wire.PartitionMetadata, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	cn, err := newConn(ctx, c.Dial, c.BrokerAddr(b), time.Second)
	if err != nil {
		return nil, err
	}
	defer cn.Close()
	tm, err := cn.metadata(topic)
	if err != nil {
		return nil, err
	}
	for i := range tm.Partitions {
		if int32(tm.Partitions[i].Partition) == part {
			return &tm.Partitions[i], nil
		}
	}
	return nil, fmt.Errorf("no partition %d", part)
}

// Leader is a partition's live leader, or an error when it has none.
func (c *Cluster) Leader(ctx context.Context, topic string, part int32) (int, error) {
	pm, err := c.PartitionInfo(ctx, topic, part)
	if err != nil {
		return 0, err
	}
	if pm.Code != wire.CodeNone || pm.Leader < 0 {
		return 0, fmt.Errorf("faults: %s-%d has no leader (%v)", topic, part, pm.Code)
	}
	return int(pm.Leader), nil
}

// WaitHealthy waits until every partition of topic has a live leader and
// every replica in its ISR.
func (c *Cluster) WaitHealthy(ctx context.Context, topic string, partitions int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		last = nil
		for p := range partitions {
			pm, err := c.PartitionInfo(ctx, topic, int32(p))
			switch {
			case err != nil:
				last = err
			case pm.Code != wire.CodeNone || pm.Leader < 0:
				last = fmt.Errorf("%s-%d: no leader (%v)", topic, p, pm.Code)
			case len(pm.ISR) != len(pm.Replicas):
				last = fmt.Errorf("%s-%d: ISR %v of replicas %v", topic, p, pm.ISR, pm.Replicas)
			}
			if last != nil {
				break
			}
		}
		if last == nil {
			return nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("faults: cluster not healthy: %w", last)
		}
	}
}

// Controller guesses the controller: the live broker whose log last says
// it became controller. (The controller's znode is on the ZooKeeper host;
// the harness reads the brokers' own words instead of speaking ZooKeeper.)
func (c *Cluster) Controller() (int, error) {
	best, bestAt := 0, ""
	for b := 1; b <= c.cfg.Brokers; b++ {
		if !c.Running(b) {
			continue
		}
		f, err := os.Open(filepath.Join(c.cfg.Dir, brokerHost(b)+".log"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "became controller") {
				continue
			}
			// slog's text format starts with time=RFC3339.
			at, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if at > bestAt {
				best, bestAt = b, at
			}
		}
		f.Close()
	}
	if best == 0 {
		return 0, noTarget(errors.New("faults: no live broker says it is the controller"))
	}
	return best, nil
}

// resolve turns a fault's role into a broker: the leader of partition 0, a
// follower of it, or the controller. Without a role the broker drawn by
// the schedule stands.
func (t *trial) resolve(ctx context.Context, f Fault) (int, error) {
	if !t.setup.Replicated() || f.Role == "" {
		return f.Broker, nil
	}
	switch f.Role {
	case RoleController:
		return t.cl.Controller()
	case RoleLeader, RoleFollower:
		pm, err := t.cl.PartitionInfo(ctx, topic, 0)
		if err != nil {
			return 0, err
		}
		if f.Role == RoleLeader {
			if pm.Leader < 0 {
				return 0, noTarget(fmt.Errorf("faults: %s-0 has no leader", topic))
			}
			return int(pm.Leader), nil
		}
		var fs []int
		for _, r := range pm.Replicas {
			if r != pm.Leader {
				fs = append(fs, int(r))
			}
		}
		slices.Sort(fs)
		if len(fs) == 0 {
			return 0, noTarget(fmt.Errorf("faults: %s-0 has no follower", topic))
		}
		return fs[int(t.cfg.Seed)%len(fs)], nil
	}
	return 0, fmt.Errorf("faults: unknown role %q", f.Role)
}

// holds reports whether broker b has a copy of replicated partition p.
func (t *trial) holds(ctx context.Context, b int, p partition) bool {
	pm, err := t.cl.PartitionInfo(ctx, p.topic, p.part)
	return err == nil && slices.Contains(pm.Replicas, wire.BrokerID(b))
}
