package faults

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/faults/check"
)

// describeNemesis says what each nemesis does, for the report.
var describeNemesis = map[string]string{
	None:             "no fault (the control)",
	Kill:             "SIGKILL a broker, restart it when healed",
	Stop:             "clean shutdown (SIGTERM) of a broker, restart it when healed",
	Bounce:           "SIGKILL and restart a broker twice, each time down for the ZooKeeper session timeout",
	Pause:            "SIGSTOP a broker past its ZooKeeper session, then SIGCONT",
	IsolateBrokers:   "iptables: a broker cut off from the other brokers, not from ZooKeeper or clients",
	Isolate:          "iptables: a broker cut off from everything",
	Split:            "iptables: a minority of brokers cut off from the majority and ZooKeeper; clients reach both",
	ZKStop:           "SIGKILL ZooKeeper (every server of an ensemble), restart it on the same data when healed",
	LoseTail:         "SIGKILL a broker, truncate its partitions to the last flush point it reported, restart",
	SlowKill:         "the other brokers' links slowed to 600 kbit/s (the followers trail the leader), the leader SIGKILLed before replica.lag.time.max.ms has passed (they are still in the ISR); links restored and leader restarted when healed",
	StallKill:        "the followers' connections to the leader's port dropped both ways (iptables in their hosts; they stay in the ISR until replica.lag.time.max.ms has passed), the leader SIGKILLed once 100 messages of partition 0 sent after the cut are acknowledged (acks=1: by the leader alone), or after three quarters of the lag time if none are (acks=all waits for the followers), so that a follower lacking all of them is elected cleanly; rules removed and leader restarted when healed",
	KillLeader:       "SIGKILL the leader of partition 0, restart it when healed",
	StopLeader:       "clean shutdown (SIGTERM) of the leader of partition 0, restart it when healed",
	KIP101:           "KIP-101's first scenario: partition 0's followers F and G SIGKILLed together, F restarted at once with its connections to the leader's port dropped (iptables), so that it truncates for the leader (hw: to its high-watermark checkpoint, which trails its log; epoch: it must ask the leader, which it cannot reach) but cannot fetch again; then the leader SIGKILLed while F is still in its ISR (replica.lag.time.max.ms=8 s), so that F is elected; rules removed, leader and G restarted when healed",
	LoseTailFollower: "power loss on a follower of partition 0: SIGKILL it, truncate its partitions to the flushed ends its admin endpoint reported, restart it when healed",
	LoseTailAll:      "power loss everywhere: every broker SIGKILLed at once and every log truncated to its flushed end, restarted when healed; what no replica had flushed is not promised and is counted apart (not promised)",
	LoseTailRejoin:   "issue 21 rule 1: a follower F of partition 0 loses its unflushed tail and is restarted at once, cut off from the leader's port (iptables) so it cannot fetch back what it lost; once F is told to follow again, within replica.lag.time.max.ms (8 s), the leader and the other follower are SIGKILLed, leaving F alone; rules removed, the others restarted when healed",
	DiskFullLeader:   "a full disk on the leader of partition 0: its log.dir, a tmpfs with a size limit, filled by a file of the harness's, so that every append and replica fetch it makes fails (ENOSPC); the file deleted when healed",
	DiskFullFollower: "the same full disk on a follower of partition 0",
	RetentionJump:    "a forward clock jump as retention sees it: a follower of a topic of its own (RF=3) down while the leader's segments' modification times move two hours back (retention 1 hour), until retention has deleted past the follower's end; the follower restarted, and the replicas of that topic compared at the end",
	RetentionSize:    "retention by size: the same follower down while the leader's log outgrows it by log.retention.size and its oldest segments are deleted; the follower restarted, the replicas compared",
	Admin:            "operators' tools under load: kafka-reassign-partitions (a rotation of a partition's replicas, until --verify says done) then kafka-preferred-replica-election, in a loop over the partitions for the fault's length",
	Oneway:           "a one-way partition: iptables OUTPUT rules in one broker's host (leader, follower or controller of partition 0) drop what it sends the other brokers; it still receives, ZooKeeper and the clients reach it",
	ZKCutController:  "ZooKeeper cut off from the controller alone (iptables both ways in its host): its session expires and another controller is elected while the old one still reaches the brokers",
	ZKCutBroker:      "ZooKeeper cut off from one broker alone, not the controller: its registration expires and its leaderships move while it still serves clients",
	Compound:         "Jepsen's combined nemesis: 2-4 faults drawn from the seed among the single nemeses that apply, each in sequence with the one before or overlapping it (replica.lag.time.max.ms=8 s, as Kafka's defaults exceed the session timeout)",
	IsolateKill:      "Jepsen 2013: the leader cut off from the other brokers (not from ZooKeeper) for replica.lag.time.max.ms + 1 s, so its ISR shrinks to itself, then SIGKILLed; network back and restart when healed",

	// The ensemble's (--zookeeper=ensemble).
	ZKKillMinority:      "ensemble: SIGKILL one of the three ZooKeeper servers (its leader; the other two elect), restart it when healed",
	ZKKillMajority:      "ensemble: SIGKILL two of the three ZooKeeper servers (the leader and a follower; the survivor has no quorum: ZooKeeper unavailable), restart them when healed",
	ZKPartitionMinority: "ensemble: iptables in its host cut one ZooKeeper server (the leader) off the other servers and the brokers; the other two elect; rules removed when healed",
	ZKPartitionMajority: "ensemble: iptables cut two ZooKeeper servers (the leader and a follower) off every other server and the brokers: no side holds a quorum, ZooKeeper unavailable while every server runs; rules removed when healed",
}

var describeSetup = map[string]string{
	AckNone:   "the 2011 broker, one copy: 0.7's PRODUCE alone (acks=0), nothing is ever acknowledged",
	AckAppend: "the 2011 broker, one copy: each PRODUCE followed by a round trip on the same connection; acknowledged = appended by the broker (page cache)",
	AckFlush:  "the 2011 broker, one copy: acknowledged once the producer's own reader sees the message (a 0.7 broker shows only flushed, fsynced, messages)",
	"safe":    "replicated (RF=3): acks=all, min.insync.replicas=2, clean elections, truncation by leader epoch (the modern promise: an acknowledged write is never lost, delivered at least once, not exactly once)",
	"acks1":   "replicated (RF=3): acks=1 (the leader alone), clean elections, epoch truncation",
	"minisr1": "replicated (RF=3): acks=all, min.insync.replicas=1, clean elections, epoch truncation",
	"unclean": "replicated (RF=3): acks=all, min.insync.replicas=1, unclean.leader.election.enable=true, epoch truncation",
	"hw":      "replicated (RF=3): acks=all, min.insync.replicas=1, clean elections, replica.truncation=hw (0.8's rule)",
}

// mergedRuns says when the runs a merged report's cells come from began:
// each start when there are a few, else how many and the first and last
// (a matrix run a cell at a time has a run per cell). Nothing for one run.
// Runs are told apart by their exact start: runs begun side by side share
// the minute the page shows.
func mergedRuns(starts []time.Time) string {
	runs := slices.DeleteFunc(slices.Clone(starts), time.Time.IsZero)
	slices.SortFunc(runs, time.Time.Compare)
	runs = slices.CompactFunc(runs, time.Time.Equal)
	show := func(t time.Time) string { return t.UTC().Format(runStamp) }
	switch {
	case len(runs) <= 1:
		return ""
	case len(runs) <= 4:
		shown := make([]string, len(runs))
		for i, t := range runs {
			shown[i] = show(t)
		}
		return fmt.Sprintf(" (cells merged from runs begun %s)", strings.Join(shown, ", "))
	default:
		return fmt.Sprintf(" (cells merged from %d runs begun %s to %s)", len(runs), show(runs[0]), show(runs[len(runs)-1]))
	}
}

// runStamp is how the report writes when a run began.
const runStamp = "2006-01-02 15:04 UTC"

// matrixFile is the safety matrix's figure (SaveMatrix) beside report.md.
const matrixFile = "matrix.png"

// save writes the report into out: report.md, its matrix figure and
// cells.json.
func (s *Suite) save(out string) error {
	recs := s.Records()
	return errors.Join(
		os.WriteFile(filepath.Join(out, "report.md"), []byte(s.Report()), 0o644),
		SaveMatrix(filepath.Join(out, matrixFile), recs),
		writeRecords(out, s.Started, recs))
}

// Report renders the suite as Markdown.
func (s *Suite) Report() string {
	var b strings.Builder
	cfg := s.Config
	recs := s.Records()
	tc := cfg.Trial
	tc.defaults()
	fmt.Fprintf(&b, "# Fault injection: Kafka's logs under nemeses\n\n")
	fmt.Fprintf(&b, "`%s`\n\n", s.Verdict())
	fmt.Fprintf(&b, "Systems under test: the 2011 broker (one copy of each partition; paper §3.3: unflushed messages die with "+
		"the broker's machine, a down broker's partitions are unavailable) with three ways for a 0.7 producer to learn "+
		"what happened to its messages, and the replication layer (issue 12) in the configurations below. Anomalies in the 2011 "+
		"rows are what that design allows, not bugs; anomalies in the replicated rows are checked against what each configuration promises.\n\n")
	fmt.Fprintf(&b, "Run: %s", s.Started.UTC().Format(runStamp))
	starts := make([]time.Time, len(recs))
	for i, c := range recs {
		starts[i] = c.Started
	}
	b.WriteString(mergedRuns(starts))
	fmt.Fprintf(&b, ", up to %d trials per cell, seeds from %d", cfg.Trials, cfg.Seed)
	if s.Took > 0 {
		fmt.Fprintf(&b, ", took %s", s.Took.Round(time.Second))
	}
	b.WriteString(".\n\n")

	b.WriteString("## Method\n\n")
	sizes := "of 1 byte to 10 KiB drawn log-uniformly from the seed, never shorter than the name they carry (about 15 bytes)"
	if tc.Size > 0 {
		sizes = fmt.Sprintf("of %d bytes", tc.Size)
	}
	length := tc.Length.String()
	if cfg.Trial.Length == 0 {
		length = "12 s (2011 runs) or 16 s (replicated runs, whose faults outlast the ZooKeeper session)"
		if cfg.Trial.Quick {
			length = "12 s (2011 runs, and replicated runs of the quick matrix whose fault fits: kill, pause, split, zk-stop) " +
				"or 16 s (other replicated runs, whose faults outlast the ZooKeeper session)"
		}
	}
	fmt.Fprintf(&b, "- Cluster: the emulated testbed (`scripts/testbed.sh`, network namespaces, unshaped veth links on a bridge): "+
		zkHostsText(cfg)+", hosts `broker1`..`broker%d` (our `kafka-server`, `num.partitions=1`, "+
		"`log.default.flush.interval.ms=%d`, `log.flush.interval=%d`, `zk.sessiontimeout.ms=%d`; replication on `replica.port` %d with mutual TLS, a cluster CA and a certificate per broker made for the trial) and host `client` (the workload). "+
		"A fresh testbed per trial; everything it made is removed at its end.\n",
		tc.Brokers, tc.FlushMs, tc.FlushEvery, tc.SessionTimeout.Milliseconds(), replicaPort)
	fmt.Fprintf(&b, "- Workload: one producer per partition (2011: the topic's partition on each broker; replicated: one partition per broker, "+
		"produced with PRODUCE-with-acks to the leader found by METADATA, one attempt per message, no retries; beside it, in replicated runs, a producer of the `producer` library "+
		"per partition with message.send.max.retries=3 and retry.backoff.ms=100, whose retries' second copies are duplicates, marked as retried sends), batches of %d messages every %v "+
		"(sequence-numbered: producer, seq; payloads %s), for %s; a live reader per partition follows it. "+
		"Replicated runs also record consumers poll by poll: the group consumer (`consumer/group`, three members over the run, commits every 500 ms, rebalances recorded), "+
		"the console consumer's path (its own group, from latest) and a SimpleConsumer on partition 0; after the faults the group is drained to every partition's end. "+
		"At the end every fault is healed and every broker up; 2011: every broker restarted cleanly (0.7 shows only flushed data; a clean shutdown flushes); "+
		"replicated: the harness waits for a full ISR everywhere and a flush. Two readers then read every partition (from its leader) from offset 0 to its end.\n",
		tc.Batch, tc.Interval, sizes, length)
	b.WriteString("- Configurations:\n")
	seen := map[string]bool{}
	for _, c := range recs {
		if !seen[c.Setup] {
			seen[c.Setup] = true
			fmt.Fprintf(&b, "  - `%s`: %s.\n", c.Setup, describeSetup[c.Setup])
		}
	}
	b.WriteString("- Nemeses (time, length, broker, and in replicated runs a role -- leader, follower or controller of partition 0 -- drawn from the seed; healed after 1-2× the fault length):\n")
	seenN := map[string]bool{}
	for _, c := range recs {
		if !seenN[c.Nemesis] {
			seenN[c.Nemesis] = true
			fmt.Fprintf(&b, "  - `%s`: %s.\n", c.Nemesis, describeNemesis[c.Nemesis])
		}
	}
	b.WriteString("- Checker (`experiments/faults/check`, Jepsen's names where they fit): lost-write = acknowledged and never read, or read and gone from the final reads; unexpected = read but never sent " +
		"(or in another partition); duplicate = one message at two offsets (\"25 (25 retried)\": 25, all of them copies a producer's retry explains, not promised); nonmonotonic-send = a producer's message at a higher offset " +
		"than a later one of its in the same partition; inconsistent-offsets = one offset read as different messages, or as another than the one the broker acknowledged there; diverged = replicas' " +
		"sha256 below the end the readers reached differ (2011: one copy, so never); " +
		"poll-skip = a consumer's next poll jumped over a message the final reads found, outside a rebalance; nonmonotonic-poll = a consumer's next poll came from at or below its previous offset, outside a rebalance; " +
		"unseen = acknowledged, in the final log, polled by no consumer once the group was drained; refused-but-appended = a send refused with NotEnoughReplicas whose message is read. " +
		"Invalid = the trial did not finish (a final read that did not reach the end, a cluster not healthy a minute after the faults): its outcome is unknown, it is never valid, and its counts are left out of the other columns. " +
		"Not promised = lost writes, reused offsets and consumer polls above what every replica had flushed when every member of the ISR lost its unflushed tail at once (lose-tail-all, or a power loss of the ISR while the other replicas were down), a strong-isr by a replica that lost its own tail before any controller acted on its restart, and what a consumer standing there is left unable to read; and the duplicates a producer's retry explains (a message sent n times may be appended n times: " +
		"delivery is at least once, paper §3.3, and 0.8's producer has no idempotence), while a copy no retry explains is an anomaly; and a nonmonotonic-send whose earlier message the producer gave up (a timeout) before it sent the later one, " +
		"or sent on a connection it dropped before it opened the later one's (a broker reads each connection in order, not two; there are no producer sequence numbers before 0.11): no configuration here promises those. " +
		"\"Vanished\" counts unacknowledged messages never read: no promise broken, but the only trace of loss under acks=0.\n\n")

	b.WriteString("## Matrix\n\n")
	b.WriteString("![trials with an anomaly per configuration and nemesis](" + matrixFile + ")\n\n")
	b.WriteString(matrixHeader() + "\n")
	b.WriteString("|---|---|---:|---:|---:|---:|" + strings.Repeat("---:|", len(check.Kinds)) + "---:|---:|---:|---:|\n")
	for _, c := range recs {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d |", c.Nemesis, c.Setup, c.Trials, c.Invalid, c.WithAnomalies, c.Acknowledged)
		for _, k := range check.Kinds {
			if k == check.Duplicate {
				fmt.Fprintf(&b, " %s |", duplicateCell(c))
				continue
			}
			fmt.Fprintf(&b, " %d |", c.Counts[k])
		}
		fmt.Fprintf(&b, " %d |", c.Unpromised)
		out, ref := "-", "-"
		if c.Trials > 0 {
			out = fmt.Sprintf("%.1f s (%.1f s)", c.Outage[0].Seconds(), c.Outage[1].Seconds())
			ref = fmt.Sprintf("%.1f s (%.1f s)", c.Refusing[0].Seconds(), c.Refusing[1].Seconds())
		}
		fmt.Fprintf(&b, " %d | %s | %s |\n", c.Vanished, out, ref)
	}
	b.WriteString("\n")

	b.WriteString("The longest write outage is, per trial, the longest time any partition went without an acknowledged write " +
		"(under acks=none, nothing is acknowledged: 0). Refusing writes is, per trial, the longest total time a partition answered writes with " +
		"NotEnoughReplicas (refused before appending: fewer in-sync replicas than min.insync.replicas), from each refused write to the next acknowledged one. " +
		"Run `kafka-faults --rereport=DIR` to recheck every history and rebuild this page; cells whose histories are gone are kept as DIR/" + cellsFile + " recorded them, " +
		"and `--merge=DIR2` adds another run's cells.\n\n")
	b.WriteString("## Findings\n\n")
	any := false
	for _, c := range recs {
		if c.Finding != "" {
			any = true
			fmt.Fprintf(&b, "- %s\n", c.Finding)
		}
	}
	if !any {
		b.WriteString("No trial found an anomaly.\n")
	}
	b.WriteString("\n")

	b.WriteString("## Timelines\n\n")
	b.WriteString("Acknowledged messages per second (sent, under acks=none), all partitions together, with the fault windows shaded; the first trial of each cell.\n\n")
	for _, c := range recs {
		if c.Timeline == "" || c.Nemesis == None {
			continue
		}
		fmt.Fprintf(&b, "![%s %s](%s)\n", c.Nemesis, c.Setup, c.Timeline)
	}
	b.WriteString("\n## Every trial\n\n```\n")
	for _, c := range recs {
		for _, v := range c.Verdicts {
			fmt.Fprintln(&b, v)
		}
		for _, e := range c.Errors {
			fmt.Fprintln(&b, e)
		}
	}
	b.WriteString("```\n\nEach trial's history (JSON lines), result and server logs are in `trials/` where the run kept them " +
		"(a committed copy keeps only the timelines); `" + cellsFile + "` holds what this page shows of each cell.\n")
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
