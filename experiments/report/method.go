package report

import (
	"github.com/netdb11/kafka/experiments/results"
)

// writeMethod says how every number was obtained.
func writeMethod(w func(string, ...any), set *results.Set, c Context) {
	w("## How it was measured\n\n")
	w("- **Kafka:** `kafka-server` (this repository's broker, Kafka 0.7 protocol) started on an empty log directory; `kafka-producer-perf-test` and `kafka-consumer-perf-test` as separate processes, their JSON result line parsed. Flushing is asynchronous: `log.flush.interval=100000`, `log.default.flush.interval.ms=1000`. Producer throughput over time is the growth of the topic's segment files sampled every 100 ms (bytes / bytes per message); consumer throughput over time is the bytes the consumer process has read from its socket (`/proc/PID/io`).\n")
	w("- **ActiveMQ:** Debian's package started by `scripts/peers.sh` with KahaDB and `journalDiskSyncStrategy=periodic` (the paper's asynchronous flush). Driver: a JMS program compiled at run time (`experiments/activemqperf/java/ActiveMQPerf.java`), persistent messages on a durable queue, `jms.useAsyncSend=true` (no wait for the broker's receipt); only the last message is sent synchronously so the clock stops when the broker holds every message. Consumer: `AUTO_ACKNOWLEDGE`, prefetch 1000.\n")
	w("- **RabbitMQ:** Debian's package started by `scripts/peers.sh`. Driver: `rabbitmq-perf-test` on amqp091-go, persistent messages (delivery mode 2) on a durable queue, no publisher confirms; only the last message is published in confirm mode so the clock stops when the broker has every message. Consumer: auto-ack (no-ack) with `basic.qos` prefetch 1000, which RabbitMQ does not apply to no-ack consumers.\n")
	w("- **Warm-up:** after each peer starts, some messages (`peer_warm_up_messages` in the configuration) are sent and received unmeasured, so that a short run does not time a cold JVM or Erlang VM; Kafka's broker and tools are compiled Go and get none.\n")
	w("- **Transactions** (the peers' nearest notion of a batch) commit every N messages; each message is still sent on its own, so they are not Kafka's batches and are reported separately.\n")
	w("- **Storage:** disk space allocated (`st_blocks`) by the messages of a producer run: for Kafka the new topic's segment files; for the peers the growth of their data directory (KahaDB journal, index and redo log; RabbitMQ's Mnesia directory with queue indexes and message stores), counting new files whole and grown files by their growth, once the store has been unchanged for a while (6 s for ActiveMQ, longer than KahaDB's 5 s index checkpoint; 2 s for RabbitMQ). Files the store deleted in between (garbage collection of consumed messages) count nothing. Divided by the messages sent. For Kafka, `storage_apparent_bytes_per_msg` in the CSV gives the file sizes too.\n")
	w("- **Broker CPU and RSS:** CPU time as the sum of the broker process's threads' run time (`/proc/PID/task/*/schedstat`, nanoseconds) before and after each run; RSS from `/proc/PID/status` after it. The broker process is the JVM, the Erlang VM or kafka-server.\n")
	writeLimitsMethod(w, c)
	total, failed := 0, 0
	for _, r := range set.Runs {
		total++
		if !r.OK() {
			failed++
		}
	}
	w("- **Runs:** %d recorded, %d failed. Files: `runs.csv`, `runs.json` (with samples over time, every run's full configuration and the machine's description), `logs/`.\n\n", total, failed)
}

// writeLimitsMethod says how the machine's limits were measured.
func writeLimitsMethod(w func(string, ...any), c Context) {
	m := c.Machine
	if m.Disk == nil {
		w("- **Machine:** disk write bandwidth by `dd if=/dev/zero bs=1M conv=fdatasync` (%d MiB) in the data directory; loopback bandwidth by one TCP connection over 127.0.0.1 (%d MiB).\n",
			m.DiskTestBytes>>20, m.LoopbackBytes>>20)
		return
	}
	drop := "`sync; echo 3 > /proc/sys/vm/drop_caches` (root), after `posix_fadvise(DONTNEED)` of the file"
	if m.Disk.ReadDrop != "drop_caches" {
		drop = "`posix_fadvise(DONTNEED)` of the file only (not root: `drop_caches` needs root, so the machine's other cached files stayed)"
	}
	w("- **Machine limits, measured at the start of this run in the brokers' data directory:** disk writes of %d MiB of new blocks (random data, every 4 KiB block unique) through the page cache with one `fdatasync` at the end, timed to its return (as `dd bs=1M conv=fdatasync`; the way Kafka's log writes), and with `O_DIRECT` (four 1 MiB writes in flight, `fdatasync` at the end; the rate after the knee if the device's cache absorbed the start); the better of two cold sequential reads of the first file (1 MiB reads), each after %s, with `mincore` checking that none of it was cached (%.0f%% was); one TCP stream over 127.0.0.1 (the best of three tries of %d MiB each): plain (1 MiB writes, autotuned buffers), shaped as the producer's (batch-50 PRODUCE requests, Nagle on, 100 KiB socket buffers) and as a fetch's (`sendfile` of a cached file, %s per call, read into a buffer of that size).\n",
		m.Disk.Bytes>>20, drop, 100*m.Disk.ReadResident, m.LoopbackBytes>>20, "the fetch size")
}
