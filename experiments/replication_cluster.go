package experiments

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/kit"
)

// replCluster is three kafka-servers sharing a ZooKeeper chroot, started by
// one step, used by the next ones and stopped by the last.
type replCluster struct {
	// name names the brokers' directories and logs; props are their
	// settings beyond the comparison's.
	name  string
	props map[string]string
	// connect is zk.connect with the chroot; brokers are running once the
	// start step succeeded.
	connect string
	brokers []*kafkaBroker
	// tb is where the brokers and clients run: the lab's loopback, or on
	// the paper testbed one of three broker hosts and a client host that
	// this cluster brought up, with zk its ZooKeeper on the client host.
	tb *kit.Testbed
	zk *kit.Proc
}

// replicationBrokers is the part's cluster size.
const replicationBrokers = 3

// replZKPort is the ZooKeeper port on the paper testbed's client host.
const replZKPort = 2181

// startReplCluster starts c's three brokers under a fresh chroot of a
// ZooKeeper, creates its topics with kafka-topics and waits until each has
// a leader and every replica in sync. On loopback the brokers share this
// machine and the configured ZooKeeper (--zookeeper); on the paper testbed
// (issue 13) a testbed of three broker hosts and a client host comes up, as
// for the scale-out, with a ZooKeeper of its own on the client host.
func (l *lab) startReplCluster(ctx context.Context, c *replCluster) (err error) {
	defer func() {
		if err != nil {
			err = errors.Join(err, c.stop())
		}
	}()
	if l.cfg.Runtime == ContainerRuntime {
		return errors.New("experiments: the replication part runs with processes only (--runtime=process)")
	}
	zk := strings.TrimRight(l.cfg.ZooKeeper, "/")
	c.tb = l.tb
	if l.tb.Kind == kit.Paper {
		if c.tb, err = kit.StartEmulated(ctx, l.cfg.RepoDir, l.log, replicationBrokers); err != nil {
			return err
		}
		tb := c.tb
		l.cleanups.Add(func() {
			if err := tb.Close(); err != nil {
				l.log.Warn("taking the replication testbed down", "err", err)
			}
		})
		if zk, err = l.startTestbedZooKeeper(ctx, c); err != nil {
			return err
		}
	} else if zk == "" {
		return errors.New("experiments: the replication part needs --zookeeper")
	}
	c.connect = fmt.Sprintf("%s/kafka-experiments-%s-%d", zk, c.name, time.Now().UnixNano())
	props := mergeConfig(c.props, map[string]string{"enable.zookeeper": "true", "zk.connect": c.connect})
	for id := range replicationBrokers {
		host := c.tb.Broker
		if c.tb.Kind == kit.Paper {
			host = c.tb.Brokers[id]
		}
		b, err := l.startKafkaAt(ctx, c.tb, host, id, fmt.Sprintf("replication-%s-b%d", c.name, id), props)
		if err != nil {
			return err
		}
		c.brokers = append(c.brokers, b)
	}
	for _, rf := range []int{1, 3} {
		if err := l.createReplicatedTopic(ctx, c, replConf{rf: rf}.topic(c.name), rf); err != nil {
			return err
		}
	}
	return nil
}

// startTestbedZooKeeper starts a standalone ZooKeeper (Debian's package) on
// c's client host, listening on that host's address, and returns its
// host:port once it serves.
func (l *lab) startTestbedZooKeeper(ctx context.Context, c *replCluster) (string, error) {
	z := kit.ZooKeeper{Name: "zookeeper " + c.name, Host: c.tb.Client, Port: replZKPort,
		Dir: filepath.Join(l.work, "zookeeper-"+c.name), Log: filepath.Join(l.logs, "zookeeper-"+c.name+".log")}
	p, err := z.Start(ctx, 90*time.Second)
	if err != nil {
		return "", err
	}
	c.zk = p
	l.cleanups.Add(func() { _ = p.Stop(30 * time.Second) }) // after an interruption; Stop reports the first result
	return z.Connect(), nil
}

// stop stops c's brokers, and on the paper testbed its ZooKeeper and the
// testbed itself.
func (c *replCluster) stop() error {
	var errs []error
	for _, b := range c.brokers {
		errs = append(errs, b.stop())
	}
	c.brokers = nil
	if c.zk != nil {
		errs = append(errs, c.zk.Stop(30*time.Second))
		c.zk = nil
	}
	if c.tb != nil && c.tb.Kind == kit.Paper { // a testbed of its own
		errs = append(errs, c.tb.Close())
	}
	c.tb = nil
	return errors.Join(errs...)
}

// isrLine matches a partition line of kafka-topics --describe.
var isrLine = regexp.MustCompile(`Leader: (-?\d+)\s+Replicas: (\S+)\s+Isr: (\S*)`)

// createReplicatedTopic runs kafka-topics --create (retrying while the
// brokers register) and then --describe until the partition has a leader and
// all rf replicas in sync.
func (l *lab) createReplicatedTopic(ctx context.Context, c *replCluster, topic string, rf int) error {
	deadline := time.Now().Add(60 * time.Second)
	tool := func(args ...string) (string, error) {
		argv := append([]string{l.bin(kafkaTopicsBin), "--zookeeper=" + c.connect}, args...)
		out, err := c.tb.Client.Command(ctx, argv...).CombinedOutput()
		return string(out), err
	}
	created := false
	var last string
	for {
		if !created {
			out, err := tool("--create", "--topic="+topic, "--partitions=1", "--replication-factor="+strconv.Itoa(rf))
			created, last = err == nil, out
		}
		if created {
			out, err := tool("--describe", "--topic="+topic)
			last = out
			if m := isrLine.FindStringSubmatch(out); err == nil && m != nil && m[1] != "-1" && len(strings.Split(m[3], ",")) == rf {
				l.log.Info("replicated topic ready", "topic", topic, "leader", m[1], "isr", m[3])
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("experiments: topic %s (RF=%d) not ready with every replica in sync after a minute; kafka-topics said:\n%s", topic, rf, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
