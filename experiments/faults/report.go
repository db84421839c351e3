package faults

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/netdb11/kafka/experiments/faults/check"
)

// describeNemesis says what each nemesis does, for the report.
var describeNemesis = map[string]string{
	None:           "no fault (the control)",
	Kill:           "SIGKILL a broker, restart it when healed",
	Stop:           "clean shutdown (SIGTERM) of a broker, restart it when healed",
	Bounce:         "SIGKILL and restart a broker twice, each time down for the ZooKeeper session timeout",
	Pause:          "SIGSTOP a broker past its ZooKeeper session, then SIGCONT",
	IsolateBrokers: "iptables: a broker cut off from the other brokers, not from ZooKeeper or clients",
	Isolate:        "iptables: a broker cut off from everything",
	Split:          "iptables: a minority of brokers cut off from the majority and ZooKeeper; clients reach both",
	ZKStop:         "SIGKILL ZooKeeper, restart it on the same data when healed",
	LoseTail:       "SIGKILL a broker, truncate its partition to the last flush point it reported, restart",
}

var describeAcks = map[string]string{
	AckNone:   "0.7's PRODUCE alone (acks=0): nothing is ever acknowledged",
	AckAppend: "each PRODUCE followed by a round trip on the same connection: acknowledged = appended by the broker (page cache)",
	AckFlush:  "acknowledged once the producer's own reader sees the message: a 0.7 broker shows only flushed (fsynced) messages",
}

// Report renders the suite as Markdown.
func (s *Suite) Report() string {
	var b strings.Builder
	cfg := s.Config
	tc := cfg.Trial
	tc.defaults()
	fmt.Fprintf(&b, "# Fault injection: the 2011 system under nemeses\n\n")
	fmt.Fprintf(&b, "`%s`\n\n", s.Verdict())
	fmt.Fprintf(&b, "System under test: **the 2011 broker** (Kafka 0.7: one copy of each partition, no replication; "+
		"issue 12's replication layer is not wired into this suite yet). Every anomaly below is what the 2011 design "+
		"allows (paper §3.3: unflushed messages die with the broker's machine; a down broker's partitions are unavailable), "+
		"or a finding about the 0.7 protocol. Nothing here measures replication.\n\n")
	fmt.Fprintf(&b, "Run: %s, %d trials per cell, seeds %d..%d, took %s.\n\n",
		s.Started.UTC().Format("2006-01-02 15:04 UTC"), cfg.Trials, cfg.Seed, cfg.Seed+int64(cfg.Trials)-1, s.Took.Round(1e9))

	b.WriteString("## Method\n\n")
	fmt.Fprintf(&b, "- Cluster: the emulated testbed (`scripts/testbed.sh`, network namespaces, unshaped veth links on a bridge): "+
		"host `zookeeper` (a standalone ZooKeeper), hosts `broker1`..`broker%d` (our `kafka-server`, `num.partitions=1`, "+
		"`log.default.flush.interval.ms=%d`, `log.flush.interval=%d`, `zk.sessiontimeout.ms=%d`) and host `client` (the workload). "+
		"A fresh testbed per trial; everything it made is removed at its end.\n",
		tc.Brokers, tc.FlushMs, tc.FlushEvery, tc.SessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "- Workload: one producer per broker's partition, batches of %d messages of %d bytes every %v "+
		"(sequence-numbered: producer, seq), for %v; a live reader per partition follows it. "+
		"At the end every fault is healed, every broker restarted cleanly (0.7 shows only flushed data; a clean shutdown flushes) "+
		"and two readers read every partition from offset 0 to its end.\n",
		tc.Batch, tc.Size, tc.Interval, tc.Length)
	b.WriteString("- Acknowledgement modes:\n")
	for _, a := range cfg.Acks {
		fmt.Fprintf(&b, "  - `%s`: %s.\n", a, describeAcks[a])
	}
	b.WriteString("- Nemeses (a random broker and time from the seed, healed after a random 1-2× the fault length):\n")
	for _, n := range cfg.Nemeses {
		fmt.Fprintf(&b, "  - `%s`: %s.\n", n, describeNemesis[n])
	}
	b.WriteString("- Checker (`experiments/faults/check`): lost = acknowledged and never read; unexpected = read but never sent " +
		"(or in another partition); duplicate = one message at two offsets; reordered = a producer's message at a higher offset " +
		"than a later one of its in the same partition; inconsistent = one offset read as different messages; diverged = replicas' " +
		"sha256 below the same high watermark differ (one replica per partition here, so never). " +
		"\"Vanished\" counts unacknowledged messages never read: no promise broken, but the only trace of loss under acks=0.\n\n")

	b.WriteString("## Matrix\n\n")
	b.WriteString("| nemesis | acks | trials | with anomalies | acknowledged | lost | unexpected | duplicate | reordered | inconsistent | diverged | vanished (unacked) |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range s.Cells {
		sum := map[string]int{}
		acked, vanished, bad := 0, 0, 0
		for _, t := range c.Trials {
			for k, v := range t.Check.Counts {
				sum[k] += v
			}
			acked += t.Check.Acked
			vanished += t.Check.Vanished
			if !t.Check.Valid() {
				bad++
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d |", c.Nemesis, c.Acks, len(c.Trials), bad, acked)
		for _, k := range check.Kinds {
			fmt.Fprintf(&b, " %d |", sum[k])
		}
		fmt.Fprintf(&b, " %d |\n", vanished)
	}
	b.WriteString("\n")

	b.WriteString("## Findings\n\n")
	any := false
	for _, c := range s.Cells {
		for _, t := range c.Trials {
			if t.Check.Valid() {
				continue
			}
			any = true
			fmt.Fprintf(&b, "- `%s`, acks=`%s`, seed %d: %s. First: %s. Replay: `kafka-faults --nemesis=%s --acks=%s --replay=%d`.\n",
				c.Nemesis, c.Acks, t.Config.Seed, counts(t.Check), t.Check.Anomalies[0], c.Nemesis, c.Acks, t.Config.Seed)
			break
		}
	}
	if !any {
		b.WriteString("No trial found an anomaly.\n")
	}
	b.WriteString("\n")

	b.WriteString("## Timelines\n\n")
	b.WriteString("Acknowledged messages per second (sent, under acks=none), all partitions together, with the fault windows shaded; the first trial of each cell.\n\n")
	for _, c := range s.Cells {
		if len(c.Trials) == 0 || c.Nemesis == None {
			continue
		}
		t := c.Trials[0]
		rel, _ := filepath.Rel(cfg.Out, filepath.Join(TrialDir(cfg.Out, c.Nemesis, c.Acks, t.Config.Seed), "timeline.png"))
		fmt.Fprintf(&b, "![%s acks=%s](%s)\n", c.Nemesis, c.Acks, filepath.ToSlash(rel))
	}
	b.WriteString("\n## Every trial\n\n```\n")
	for _, c := range s.Cells {
		for _, t := range c.Trials {
			fmt.Fprintln(&b, t.Verdict())
		}
		for _, e := range c.Errors {
			fmt.Fprintln(&b, e)
		}
	}
	b.WriteString("```\n\nEach trial's history (JSON lines), result and server logs are in `trials/`.\n")
	return b.String()
}

func counts(r *check.Result) string {
	var parts []string
	for _, k := range check.Kinds {
		if n := r.Counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" of %d acknowledged", r.Acked)
}
