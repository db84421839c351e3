package experiments

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/experiments/results"
)

// scaleOutSteps: paper §3 and §6 claim a topic spread over more brokers takes
// proportionally more load. For each broker count N a testbed of N broker
// hosts and one client host comes up, N kafka-servers start (one partition
// each), and one producer at batch 50 spreads its batches over all of them
// (0.7's random partitioner over the static broker.list). Every broker host
// is pinned to core 0 and the client to core 1, so the testbed's two cores,
// not the design, bound what N brokers can take; the runs record how busy each
// core and the client's link were.
func (h *harness) scaleOutSteps() []step {
	var p []step
	sys := results.Kafka
	for _, n := range h.cfg.ScaleOutBrokers {
		var tb *Testbed
		var brokers []*kafkaBroker
		label := fmt.Sprintf("scale-out, %d broker(s)", n)
		p = append(p, step{label + ": testbed up, start brokers", sys, func(ctx context.Context) (err error) {
			if tb, err = startEmulated(ctx, h.cfg.RepoDir, h.log, n); err != nil {
				return err
			}
			h.cleanups = append(h.cleanups, func() {
				if err := tb.Close(); err != nil {
					h.log.Warn("taking the scale-out testbed down", "err", err)
				}
			})
			h.log.Info("scale-out testbed", "brokers", n, "testbed", tb.Description)
			for i := range n {
				b, err := h.startKafkaOn(ctx, tb, i, fmt.Sprintf("scaleout-n%d-b%d", n, i), nil)
				if err != nil {
					return err
				}
				brokers = append(brokers, b)
			}
			return nil
		}})
		for rep := 1; rep <= h.cfg.Repeats; rep++ {
			p = append(p, step{fmt.Sprintf("%s: producer batch=50 (rep %d)", label, rep), sys, func(ctx context.Context) error {
				v := results.VariantBrokers(n)
				run := newRun(results.Key{System: sys, Experiment: results.ScaleOut, Variant: v, Phase: results.Produce}, float64(n), rep)
				return h.measure(ctx, run, func(r *results.Run) error {
					if len(brokers) != n {
						return fmt.Errorf("experiments: %d of %d brokers running", len(brokers), n)
					}
					return h.scaleOutProduce(ctx, tb, brokers, fmt.Sprintf("scaleout-r%d", rep), r)
				})
			}})
		}
		p = append(p, step{label + ": stop brokers, testbed down", sys, func(context.Context) error {
			var errs []error
			for _, b := range brokers {
				errs = append(errs, b.stop())
			}
			brokers = nil
			if tb != nil {
				errs = append(errs, tb.Close())
			}
			return errors.Join(errs...)
		}})
	}
	return p
}

// scaleOutProduce runs one producer on tb's client host against every broker
// of brokers and records the aggregate rate, the brokers' CPU time, how busy
// the broker and client cores were, and how the bytes spread over the brokers.
func (h *harness) scaleOutProduce(ctx context.Context, tb *Testbed, brokers []*kafkaBroker, topic string, run *results.Run) error {
	var list []string
	for _, b := range brokers {
		list = append(list, b.brokerList())
	}
	argv := []string{h.bin(kafkaProducerBin),
		"--broker-list=" + strings.Join(list, ","),
		"--topic=" + topic,
		"--messages=" + strconv.FormatInt(h.cfg.KafkaMessages, 10),
		"--message-size=" + strconv.Itoa(h.cfg.MessageSize),
		"--batch-size=50",
		"--compression-codec=0",
		"--threads=1",
		"--progress=false",
		"--json",
	}
	_, tuned := h.socketTuning()
	argv = append(argv, tuned...)
	run.Config = mergeConfig(brokers[0].props, map[string]string{
		"driver": kafkaProducerBin, "topic": topic, "messages": strconv.FormatInt(h.cfg.KafkaMessages, 10),
		"message_size": strconv.Itoa(h.cfg.MessageSize), "batch_size": "50", "compression": "none",
		"brokers": strconv.Itoa(len(brokers)), "broker_list": strings.Join(list, ","),
		"partitioning": "each batch to a random broker's partition (0.7's random partitioner over the static broker.list)",
		"testbed":      tb.Description,
	})
	if len(tuned) > 0 {
		run.Config["producer_socket_buffer"] = "0 (autotuned)"
		run.Config["socket_buffers"] = autotunedSockets
	}
	cpu0 := brokersCPU(brokers)
	stat0, statErr0 := readCPUStat()
	res, err := driverRun{host: tb.Client, argv: argv, logPath: h.logPath(run.ID), link: tb.watchLink(run, h.log)}.run(ctx)
	stat1, statErr1 := readCPUStat()
	if err != nil {
		return err
	}
	run.Result = res
	run.BrokerCPUSeconds = brokersCPU(brokers) - cpu0
	if statErr0 == nil && statErr1 == nil {
		run.BrokerCoreBusy = coreBusy(stat0, stat1, tb.BrokerCPU)
		run.ClientCoreBusy = coreBusy(stat0, stat1, tb.ClientCPU)
	}
	var spread []string
	for _, b := range brokers {
		_, app := b.topicBytes(topic)
		spread = append(spread, fmt.Sprintf("broker %d: %.1f MB", b.id, float64(app)/1e6))
	}
	run.Config["log_bytes_per_broker"] = strings.Join(spread, ", ")
	return nil
}

// brokersCPU sums the CPU seconds of the brokers' processes so far.
func brokersCPU(brokers []*kafkaBroker) float64 {
	var s float64
	for _, b := range brokers {
		if c, err := b.meter().cpuSeconds(); err == nil {
			s += c
		}
	}
	return s
}

// cpuTimes is one core's line of /proc/stat: busy and total time in ticks.
type cpuTimes struct{ busy, total uint64 }

// readCPUStat reads every core's times from /proc/stat, taken at one instant.
func readCPUStat() (map[int]cpuTimes, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	defer f.Close()
	return parseCPUStat(bufio.NewScanner(f))
}

// parseCPUStat reads the "cpuN user nice system idle iowait irq softirq steal
// ..." lines: busy is everything but idle and iowait. Guest time is already
// inside user and nice, so it is not added again.
func parseCPUStat(sc *bufio.Scanner) (map[int]cpuTimes, error) {
	out := map[int]cpuTimes{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			continue
		}
		var t cpuTimes
		for i, s := range f[1:min(len(f), 9)] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("experiments: /proc/stat %s: %q is not a number", f[0], s)
			}
			t.total += v
			if i != 3 && i != 4 { // idle, iowait
				t.busy += v
			}
		}
		out[n] = t
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("experiments: reading /proc/stat: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("experiments: no cpuN lines in /proc/stat")
	}
	return out, nil
}

// coreBusy is the fraction of core's time that was busy between two readings
// (0 when the core is unknown or no time passed).
func coreBusy(before, after map[int]cpuTimes, core int) float64 {
	b, ok1 := before[core]
	a, ok2 := after[core]
	if !ok1 || !ok2 || a.total <= b.total {
		return 0
	}
	return float64(a.busy-b.busy) / float64(a.total-b.total)
}
