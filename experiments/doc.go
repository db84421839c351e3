// Package experiments reruns the paper's Section 5 — the producer, consumer and
// storage comparison of Kafka with ActiveMQ and RabbitMQ — against the real peer
// systems, and adds one ablation per design decision of Kafka (sendfile, flush
// interval, batch size, compression, partitions, log growth). Run(ctx, Config)
// performs everything and writes, under Config.Out, every run as CSV and JSON
// with its full configuration and the machine's description, the PNG figures
// and report.md; the command kafka-experiments is its thin front end.
//
// The experiments are made of parts, one file each: the paper's comparison
// (comparison.go), the scale-out (scaleout.go) and one per ablation
// (sendfile.go, flush.go, batch.go, compression.go, partitions.go,
// growth.go). A part declares its steps, its figures and the section of
// report.md that reports it, conclusion included, and is listed once in parts
// (parts.go), which fixes the order of the plan and of the report. Steps run
// in a lab (the configuration, the testbed, the kit.Runtime that starts and
// measures the systems, the record of runs) and hand each other typed values:
// the broker they start, what a producer wrote, the peer. An experiment is
// added by adding its file and its line in parts; runs.json then holds its
// runs under its own results.Experiment:
//
//	// mirrorExp names the runs of the part.
//	const mirrorExp results.Experiment = "mirror"
//
//	// mirror is ... (what it measures, citing the paper).
//	var mirror = part{
//		name:    mirrorExp,
//		steps:   mirrorSteps, // func(*lab) []step: none unless the configuration selects it
//		section: report.Section{Has: hasMirrorRuns, Figures: mirrorFigures, Write: writeMirror},
//	}
//
// An ablation of Kafka is declared with ablation(steps, report.Ablation{...})
// and runs when --ablations names it.
//
// Each system runs as real processes: Kafka as kafka-server with
// kafka-producer-perf-test and kafka-consumer-perf-test (and
// kafka-payload-perf-test for log-like payloads); ActiveMQ and RabbitMQ as
// Debian's packages started by scripts/peers.sh, driven by their own clients
// (a JMS program compiled at run time, package activemqperf; amqp091-go,
// package rabbitperf). Processes start on a kit.Host: this machine over
// loopback, or the hosts of the emulated paper testbed (package testbed),
// broker and client joined by a 1 Gbit link. Package kit holds what starts,
// waits for, measures and stops them, for the fault suite and the pipeline
// too.
//
// Paper §5: one producer sends 200-byte messages without waiting for
// acknowledgements, Kafka at batch sizes 1 and 50, the peers one message per
// send; one consumer pulls about 1000 messages (~200 KB) at a time, the peers
// acknowledging automatically; all systems flush asynchronously.
//
// Deviation: the quick mode sends far fewer than the paper's 10 million
// messages and caps each peer run at a few seconds, so that it ends in minutes
// on a 2-core machine; the report says which runs were capped and, for each
// producer run, whether its rate is a burst into the page cache or the
// disk's sustained pace. --paper sends Kafka's 10 million (the peers' runs
// capped at 30 s) and --full 10 million everywhere.
//
// Issue 14: the machine's limits (disk writes, a cold disk read, one TCP
// stream over loopback) are measured at the start of every invocation
// (package machine), Kafka's consumer reads each log hot and then cold
// (cold.go), and every run records the conditions that can explain a slow
// repetition (results.Conditions); the report gives every Kafka figure as a
// share of its limit and explains every range wider than 1.5×.
//
// Issue 14, the producer's sustained rate: on a machine with much memory
// the page cache absorbs gigabytes of unwritten log before the kernel
// throttles the broker, so even --paper's 10 million messages (1.95 GiB)
// are mostly a burst. --dirty-bytes=SIZE (root) sets vm.dirty_bytes to SIZE
// and vm.dirty_background_bytes to a quarter of it for the run, restoring
// the previous ratios or byte counts on every exit (limitDirtyBytes): the
// page cache then absorbs as little as a small machine's, the run is
// mostly its disk-bound sustained phase, and the report's machine line and
// limits section name the setting.
//
// Deviation: a freshly started peer first sends and receives some messages
// unmeasured (Config.PeerWarmUpMessages), so a short run does not time a cold
// JVM or Erlang VM; the paper's long runs made that unnecessary.
//
// Deviation: Kafka's consumer runs start once the broker has flushed the whole
// log (a message is visible only once flushed, paper §3.1), as the paper's
// consumer read an existing log; without that, a run started right after the
// producer would time the broker's next flush.
package experiments
