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
	w("- **Machine:** disk write bandwidth by `dd if=/dev/zero bs=1M conv=fdatasync` (%d MiB) in the data directory; loopback bandwidth by one TCP connection over 127.0.0.1 (%d MiB).\n",
		c.Machine.DiskTestBytes>>20, c.Machine.LoopbackBytes>>20)
	total, failed := 0, 0
	for _, r := range set.Runs {
		total++
		if !r.OK() {
			failed++
		}
	}
	w("- **Runs:** %d recorded, %d failed. Files: `runs.csv`, `runs.json` (with samples over time, every run's full configuration and the machine's description), `logs/`.\n\n", total, failed)
}
