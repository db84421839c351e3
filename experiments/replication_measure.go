package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/experiments/e2e"
	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
)

// replStep measures one run of kafka-e2e-latency against c: as fast as
// possible (rate 0) or at a fixed offered load with a consumer.
func (l *lab) replStep(label string, c *replCluster, conf replConf, rate, conns int, secs float64, run results.Run) step {
	return step{label: label, system: results.Kafka, run: func(ctx context.Context) error {
		return l.measure(ctx, run, func(r *results.Run) error {
			if len(c.brokers) != replicationBrokers {
				return errors.New("experiments: the replication cluster is not running")
			}
			return l.replMeasure(ctx, c, conf, rate, conns, secs, r)
		})
	}}
}

func (l *lab) replMeasure(ctx context.Context, c *replCluster, conf replConf, rate, conns int, secs float64, run *results.Run) error {
	topic := conf.topic(c.name)
	argv := []string{l.bin(e2eLatencyBin),
		"--broker-list=" + c.brokers[0].brokerList(),
		"--topic=" + topic,
		"--request-required-acks=" + strconv.Itoa(int(conf.acks)),
		"--seconds=" + strconv.FormatFloat(secs, 'f', -1, 64),
		"--message-size=" + strconv.Itoa(l.cfg.MessageSize),
		"--json",
	}
	if rate == 0 {
		argv = append(argv, "--rate=0", "--batch-size=50", "--connections="+strconv.Itoa(conns), "--consume=false")
	} else {
		argv = append(argv, "--rate="+strconv.Itoa(rate), "--linger=1ms", "--consume=true", "--poll=100us")
	}
	run.Config = mergeConfig(c.brokers[0].props, map[string]string{
		"driver": e2eLatencyBin, "topic": topic, "replication_factor": strconv.Itoa(conf.rf),
		"request.required.acks": conf.acksName(), "message_size": strconv.Itoa(l.cfg.MessageSize),
		"brokers": "three kafka-server processes on this machine, one ZooKeeper chroot (" + c.connect + ")",
		"testbed": c.tb.Description,
	})
	if c.tb.Kind == kit.Paper {
		run.Config["brokers"] = "three kafka-server processes, one on each broker host of the testbed, ZooKeeper on the client host (" + c.connect + ")"
	}
	if rate == 0 {
		run.Config["load"] = fmt.Sprintf("as fast as %d connections with one request of 50 messages in flight each allow", conns)
	} else {
		run.Config["load"] = fmt.Sprintf("%d msg/s offered: every 1 ms the messages due, in one request; a consumer polls the leader (0.7 FETCH) every 100 µs when idle", rate)
	}
	cpu0 := make([]float64, len(c.brokers))
	for i, b := range c.brokers {
		cpu0[i], _ = b.srv.CPUSeconds()
	}
	var full *e2e.Result
	decode := func(out []byte) (perf.Result, error) {
		var err error
		if full, err = parseE2E(out); err != nil {
			return perf.Result{}, err
		}
		return full.Result, nil
	}
	res, err := kit.DriverRun{Host: c.tb.Client, Argv: argv, LogPath: l.logPath(run.ID), Usage: run.Conditions, Decode: decode,
		Link: c.tb.WatchLink(run, l.log)}.Run(ctx)
	if err != nil {
		return err
	}
	run.Result = res
	if full.Ack.N > 0 {
		run.AckLatency = latencyOf(full.Ack)
	}
	if full.EndToEnd.N > 0 {
		run.EndToEndLatency = latencyOf(full.EndToEnd)
	}
	var cpus []string
	for i, b := range c.brokers {
		c1, err := b.srv.CPUSeconds()
		if err != nil {
			continue
		}
		run.BrokerCPUSeconds += c1 - cpu0[i]
		role := "follower"
		if wire.BrokerID(b.id) == full.Leader {
			role = "leader"
		}
		if conf.rf == 1 && role != "leader" {
			role = "idle"
		}
		cpus = append(cpus, fmt.Sprintf("broker %d (%s): %.2f s", b.id, role, c1-cpu0[i]))
	}
	run.Config["broker_cpu"] = strings.Join(cpus, ", ")
	run.Config["leader"] = strconv.Itoa(int(full.Leader))
	return nil
}

// parseE2E decodes the last line of kafka-e2e-latency's output.
func parseE2E(out []byte) (*e2e.Result, error) {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	var r e2e.Result
	if err := json.Unmarshal(lines[len(lines)-1], &r); err != nil {
		return nil, fmt.Errorf("experiments: %s: %w", e2eLatencyBin, err)
	}
	return &r, nil
}

func latencyOf(p e2e.Percentiles) *results.Latency {
	return &results.Latency{N: p.N, P50: p.P50, P99: p.P99, P999: p.P999, Max: p.Max}
}
