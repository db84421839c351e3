package experiments

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
)

// Kafka's binaries, built by `make build` into BinDir.
const (
	kafkaServerBin   = "kafka-server"
	kafkaProducerBin = "kafka-producer-perf-test"
	kafkaConsumerBin = "kafka-consumer-perf-test"
	rabbitDriverBin  = "rabbitmq-perf-test"
	payloadDriverBin = "kafka-payload-perf-test"
)

// kafkaOverhead is the per-message header of an uncompressed Kafka 0.7 message
// on disk and on the wire as this repository's producer writes it (magic 0):
// length (4), magic (1), CRC (4) — the paper's 9 bytes.
const kafkaOverhead = 9

// produceRequestBytes is the size of a PRODUCE request of batch messages
// of size bytes to the topics the experiments use (Kafka 0.7: size 4, type
// 2, topic 2+len, partition 4, message set size 4, then the messages):
// the writes of the loopback probe shaped like the producer.
func produceRequestBytes(size, batch int) int {
	const header, topic = 4 + 2 + 2 + 4 + 4, len("main-b50-r1")
	return header + topic + batch*(size+kafkaOverhead)
}

// mainBrokerProps are the broker settings of the paper's comparison. Paper §5:
// every system flushed asynchronously; here the log is flushed by time every
// second (as ActiveMQ's periodic journal sync) and at the latest every 100,000
// messages, never on the produce path of every request.
var mainBrokerProps = map[string]string{
	"num.partitions":                          "1",
	"log.flush.interval":                      "100000",
	"log.default.flush.interval.ms":           "1000",
	"log.default.flush.scheduler.interval.ms": "1000",
}

// autotunedSockets says why the paper testbed leaves Kafka's socket buffers
// to the kernel; it goes into every affected run's configuration and the report.
const autotunedSockets = "socket buffers autotuned by the kernel (broker socket.receive.buffer=0, producer buffer.size=0) " +
	"instead of Kafka 0.7's fixed 100 KiB: a fixed buffer caps the TCP window at ~100-200 KiB, less than the " +
	"1 Gbit link's bandwidth-delay product once tbf's 5 ms queue fills, and held the batch-50 producer near 75-87% of the link"

// socketTuning returns the broker properties and producer flags that depart
// from 0.7's socket defaults on the paper testbed (see autotunedSockets), and
// nothing on loopback, whose results stay comparable with earlier runs.
func (l *lab) socketTuning() (brokerProps map[string]string, producerArgs []string) {
	if l.tb.Kind != kit.Paper {
		return nil, nil
	}
	return map[string]string{"socket.receive.buffer": "0"}, []string{"--socket-buffer-size=0"}
}

// kafkaBroker is one running kafka-server.
type kafkaBroker struct {
	srv    kit.Server
	id     int
	host   kit.Host
	port   int
	logDir string
	props  map[string]string
	// profile is the broker's CPU profile, relative to the output directory,
	// written when it stops; empty: none.
	profile string
}

// freePort asks the kernel for an unused port on the loopback interface. On the
// paper testbed the broker host has its own network namespace, so Kafka's usual
// port is free there.
func freePort(tb *kit.Testbed) (int, error) {
	if tb.Kind == kit.Paper {
		return 9092, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("experiments: finding a free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}

// startKafka starts kafka-server on the broker host with a fresh log directory
// and the given server.properties keys (flags of the same name).
func (l *lab) startKafka(ctx context.Context, name string, props map[string]string) (*kafkaBroker, error) {
	return l.startKafkaOn(ctx, l.tb, 0, name, props)
}

// startKafkaOn starts kafka-server with brokerid id on the broker host
// tb.Brokers[id].
func (l *lab) startKafkaOn(ctx context.Context, tb *kit.Testbed, id int, name string, props map[string]string) (*kafkaBroker, error) {
	if id < 0 || id >= len(tb.Brokers) {
		return nil, fmt.Errorf("experiments: no broker host %d (the testbed has %d)", id, len(tb.Brokers))
	}
	return l.startKafkaAt(ctx, tb, tb.Brokers[id], id, name, props)
}

// startKafkaAt starts kafka-server with brokerid id on host (several
// brokers may share a host: each gets a free port on loopback).
func (l *lab) startKafkaAt(ctx context.Context, tb *kit.Testbed, host kit.Host, id int, name string, props map[string]string) (*kafkaBroker, error) {
	port, err := freePort(tb)
	if err != nil {
		return nil, err
	}
	stateDir := filepath.Join(l.work, "kafka", name)
	if err := os.RemoveAll(stateDir); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	logDir := l.rt.DataDir(stateDir)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	all := map[string]string{
		"brokerid":         strconv.Itoa(id),
		"hostname":         host.Addr(),
		"port":             strconv.Itoa(port),
		"log.dir":          logDir,
		"enable.zookeeper": "false",
	}
	for k, v := range mainBrokerProps {
		all[k] = v
	}
	tuned, _ := l.socketTuning()
	for k, v := range tuned {
		all[k] = v
	}
	for k, v := range props {
		all[k] = v
	}
	argv := []string{l.bin(kafkaServerBin)}
	for _, k := range sortedKeys(all) {
		argv = append(argv, "--"+k+"="+all[k])
	}
	profArgs, profile := l.serverProfile(ctx, name)
	argv = append(argv, profArgs...)
	srv, err := l.rt.StartServer(ctx, kit.ServerSpec{System: results.Kafka, Host: host, Name: "kafka-server " + name,
		Dir: stateDir, LogPath: filepath.Join(l.logs, "kafka-server-"+name+".log"), Argv: argv})
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("kafka-server %s accepting connections on %s:%d", name, host.Addr(), port)
	if err := kit.WaitFor(ctx, 30*time.Second, what, srv, func() bool { return tb.Reachable(ctx, host.Addr(), port) }); err != nil {
		return nil, errors.Join(err, srv.Stop(10*time.Second))
	}
	l.cleanups.Add(func() {
		if err := srv.Stop(60 * time.Second); err != nil {
			l.log.Warn("stopping broker", "err", err)
		}
	})
	return &kafkaBroker{srv: srv, id: id, host: host, port: port, logDir: logDir, props: all, profile: profile}, nil
}

func (b *kafkaBroker) stop() error {
	if b == nil {
		return nil
	}
	return b.srv.Stop(60 * time.Second)
}

func (b *kafkaBroker) brokerList() string {
	return strconv.Itoa(b.id) + ":" + b.host.Addr() + ":" + strconv.Itoa(b.port)
}

// topicDirs lists the partition directories of a topic (Kafka 0.7: log.dir/T-P).
func (b *kafkaBroker) topicDirs(topic string) []string {
	dirs, _ := filepath.Glob(filepath.Join(b.logDir, topic+"-*"))
	return dirs
}

// topicBytes is the apparent and allocated size of a topic's segments.
func (b *kafkaBroker) topicBytes(topic string) (allocated, apparent int64) {
	for _, d := range b.topicDirs(topic) {
		a, p, err := kit.DiskUsage(d)
		if err == nil {
			allocated += a
			apparent += p
		}
	}
	return allocated, apparent
}

// produceSpec is one Kafka producer run.
type produceSpec struct {
	topic    string
	messages int64
	batch    int
	codec    string
	payloads *logPayloads // log-like payloads; nil: the tool's own payload
	// confirm is kafka-producer-perf-test's --confirm (close, send); empty:
	// the tool's default (close).
	confirm string
}

// kafkaProduce runs kafka-producer-perf-test on the client host and measures, from
// the broker's side, the log's growth over time, the storage per message and the
// broker's CPU time and RSS.
func (l *lab) kafkaProduce(ctx context.Context, b *kafkaBroker, spec produceSpec, run *results.Run) error {
	driver := kafkaProducerBin
	payloadFile := ""
	if spec.payloads != nil {
		if spec.payloads.path == "" {
			return errors.New("experiments: the log-like payloads were not written")
		}
		payloadFile = spec.payloads.path
	}
	argv := []string{l.bin(kafkaProducerBin),
		"--broker-list=" + b.brokerList(),
		"--topic=" + spec.topic,
		"--messages=" + strconv.FormatInt(spec.messages, 10),
		"--message-size=" + strconv.Itoa(l.cfg.MessageSize),
		"--batch-size=" + strconv.Itoa(spec.batch),
		"--compression-codec=" + strconv.Itoa(codecID(spec.codec)),
		"--threads=1",
		"--progress=false",
		"--json",
	}
	if spec.confirm != "" {
		argv = append(argv, "--confirm="+spec.confirm)
	}
	_, tuned := l.socketTuning()
	argv = append(argv, tuned...)
	if payloadFile != "" {
		// The perf tool sends random letters; log-like payloads need this driver.
		driver = payloadDriverBin
		argv = []string{l.bin(payloadDriverBin),
			"--broker-list=" + b.brokerList(),
			"--topic=" + spec.topic,
			"--messages=" + strconv.FormatInt(spec.messages, 10),
			"--batch-size=" + strconv.Itoa(spec.batch),
			"--compression-codec=" + strconv.Itoa(codecID(spec.codec)),
			"--payload-file=" + payloadFile,
			"--json",
		}
	}
	run.Config = mergeConfig(b.props, map[string]string{
		"driver": driver, "topic": spec.topic, "messages": strconv.FormatInt(spec.messages, 10),
		"message_size": strconv.Itoa(l.cfg.MessageSize), "batch_size": strconv.Itoa(spec.batch),
		"compression": spec.codec, "payload": payloadName(payloadFile), "acks": "none (Kafka 0.7 produce has no response)",
	})
	if spec.confirm != "" {
		run.Config["confirm"] = spec.confirm
	}
	argv = append(argv, l.profileArgs(ctx, driver, run)...)
	if b.profile != "" {
		run.Config["broker_cpu_profile"] = b.profile
	}
	if len(tuned) > 0 && payloadFile == "" {
		run.Config["producer_socket_buffer"] = "0 (autotuned)"
		run.Config["socket_buffers"] = autotunedSockets
	}
	cpu0, _ := b.srv.CPUSeconds()
	// The paper's producer figure (§5) plots throughput over time; the broker's log grows by a fixed
	// number of bytes per message, so sampling its size gives the messages the
	// broker has taken at each instant.
	d := kit.DriverRun{Host: l.tb.Client, Argv: argv, LogPath: l.logPath(run.ID), Link: l.tb.WatchLink(run, l.log), Usage: run.Conditions,
		Sample: func(_ int, start time.Time) *perf.Sampler {
			return perf.StartSampler(start, 100*time.Millisecond, func() int64 {
				_, app := b.topicBytes(spec.topic)
				return app
			})
		}}
	res, err := d.Run(ctx)
	if err != nil {
		return err
	}
	if _, app := b.topicBytes(spec.topic); app > 0 && res.Messages > 0 {
		perMsg := float64(app) / float64(res.Messages)
		for i := range res.Samples {
			res.Samples[i].Messages = int64(float64(res.Samples[i].Messages) / perMsg)
		}
	}
	run.Result = res
	if cpu1, err := b.srv.CPUSeconds(); err == nil {
		run.BrokerCPUSeconds = cpu1 - cpu0
	}
	// The segments need no settling: Kafka preallocates nothing, and the file
	// size is final once the producer has finished and the broker has appended.
	var alloc, app int64
	for _, dir := range b.topicDirs(spec.topic) {
		a, p, err := kit.Settle(ctx, dir, 300*time.Millisecond, 3*time.Second)
		if err != nil {
			return err
		}
		alloc, app = alloc+a, app+p
	}
	if res.Messages > 0 {
		if after, err := kit.FileBlocks(filepath.Join(b.logDir)); err == nil {
			mine := map[string]int64{}
			for path, n := range after {
				if strings.HasPrefix(filepath.Base(filepath.Dir(path)), spec.topic+"-") {
					mine[path] = n
				}
			}
			run.Config["storage_by_file"] = kit.DescribeKinds(kit.GrowthByKind(nil, mine), res.Messages) + " (bytes per message)"
		}
		run.StorageBytesPerMsg = float64(alloc) / float64(res.Messages)
		run.StorageApparentBytesPerMsg = float64(app) / float64(res.Messages)
	}
	run.BrokerRSSBytes, _ = b.srv.RSSBytes()
	return nil
}

// waitVisible waits until a partition's messages are visible to consumers, so
// that a timed consumer run reads a complete log as in the paper's test rather
// than waiting for the broker's next flush (paper §3.1: a message is exposed to
// consumers only after it is flushed). On loopback it polls the flushed end
// (OFFSETS, latest) against the partition's size; on the emulated testbed, whose
// broker the harness cannot reach, an untimed consumer run reads the messages
// first.
func (l *lab) waitVisible(ctx context.Context, b *kafkaBroker, topic string, partition int, messages int64) (err error) {
	if l.tb.Kind != kit.Loopback {
		var r results.Run
		r.ID = fmt.Sprintf("kafka/pre-read/%s-%d", topic, partition)
		return l.kafkaConsumeOnce(ctx, b, topic, partition, messages, &r)
	}
	sc, err := consumer.NewSimpleConsumer(net.JoinHostPort(b.host.Addr(), strconv.Itoa(b.port)), consumer.DefaultConfig())
	if err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	defer func() {
		if cerr := sc.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("experiments: %w", cerr)
		}
	}()
	dir := filepath.Join(b.logDir, fmt.Sprintf("%s-%d", topic, partition))
	deadline := time.Now().Add(time.Minute)
	for {
		_, size, err := kit.DiskUsage(dir)
		if err != nil {
			return err
		}
		offs, err := sc.OffsetsBefore(ctx, topic, wire.Partition(partition), wire.LatestTime, 1)
		if err != nil {
			return fmt.Errorf("experiments: asking the flushed end of %s-%d: %w", topic, partition, err)
		}
		if len(offs) > 0 && offs[0] >= wire.Offset(size) && size > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("experiments: %s-%d not flushed after a minute (%v of %d bytes visible)", topic, partition, offs, size)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kafkaConsume waits until the messages are visible, then runs
// kafka-consumer-perf-test on one partition from offset 0.
func (l *lab) kafkaConsume(ctx context.Context, b *kafkaBroker, topic string, partition int, messages int64, run *results.Run) error {
	if err := l.waitVisible(ctx, b, topic, partition, messages); err != nil {
		return err
	}
	recordResidency(run, b.segmentFiles(topic, partition))
	return l.kafkaConsumeOnce(ctx, b, topic, partition, messages, run)
}

// kafkaConsumeOnce runs kafka-consumer-perf-test on one partition from offset 0.
func (l *lab) kafkaConsumeOnce(ctx context.Context, b *kafkaBroker, topic string, partition int, messages int64, run *results.Run) error {
	argv := []string{l.bin(kafkaConsumerBin),
		"--broker-list=" + b.brokerList(),
		"--topic=" + topic,
		"--partition=" + strconv.Itoa(partition),
		"--messages=" + strconv.FormatInt(messages, 10),
		"--fetch-size=" + strconv.Itoa(l.cfg.fetchSize()),
		"--progress=false",
		"--json",
	}
	run.Config = mergeConfig(b.props, map[string]string{
		"driver": kafkaConsumerBin, "topic": topic, "partition": strconv.Itoa(partition),
		"messages": strconv.FormatInt(messages, 10), "fetch_size": strconv.Itoa(l.cfg.fetchSize()),
	})
	argv = append(argv, l.profileArgs(ctx, kafkaConsumerBin, run)...)
	if b.profile != "" {
		run.Config["broker_cpu_profile"] = b.profile
	}
	cpu0, _ := b.srv.CPUSeconds()
	bytesPerMsg := int64(l.cfg.MessageSize + kafkaOverhead)
	d := kit.DriverRun{Host: l.tb.Client, Argv: argv, LogPath: l.logPath(run.ID), Link: l.tb.WatchLink(run, l.log), Usage: run.Conditions}
	// Bytes the consumer has read from its socket, over time. Once the process
	// has exited its counters are gone: keep the last value read.
	d.Sample = func(pid int, start time.Time) *perf.Sampler {
		var last int64
		return perf.StartSampler(start, 100*time.Millisecond, func() int64 {
			if r, _, err := kit.IOChars(pid); err == nil && r/bytesPerMsg > last {
				last = r / bytesPerMsg
			}
			return last
		})
	}
	writes := startDiskWrites(b.srv)
	res, err := d.Run(ctx)
	if err != nil {
		return err
	}
	run.Result = res
	writes.record(run)
	if cpu1, err := b.srv.CPUSeconds(); err == nil {
		run.BrokerCPUSeconds = cpu1 - cpu0
	}
	run.BrokerRSSBytes, _ = b.srv.RSSBytes()
	return nil
}

func payloadName(path string) string {
	if path == "" {
		return "random lowercase letters (" + kafkaProducerBin + ")"
	}
	return "log-like lines (" + filepath.Base(path) + ")"
}

func mergeConfig(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// broker is a kafka-server that one step of a part starts and a later one
// stops; the steps between are handed it.
type broker struct {
	// name names its log directory under the work directory, and its log.
	name string
	// props are server.properties keys beyond the comparison's
	// (mainBrokerProps).
	props map[string]string
	// running is the started broker: nil before the start step has
	// succeeded and after the stop step.
	running *kafkaBroker
}

// started returns the running broker, or why there is none.
func (b *broker) started() (*kafkaBroker, error) {
	if b.running == nil {
		return nil, errors.New("experiments: broker not running")
	}
	return b.running, nil
}

// startStep starts b on the testbed's broker host with a fresh log directory.
func (l *lab) startStep(label string, b *broker) step {
	return step{label: label, system: results.Kafka, run: func(ctx context.Context) (err error) {
		b.running, err = l.startKafka(ctx, b.name, b.props)
		return err
	}}
}

// stopStep stops b.
func stopStep(label string, b *broker) step {
	return step{label: label, system: results.Kafka, run: func(context.Context) error {
		err := b.running.stop()
		b.running = nil
		return err
	}}
}

// produced is what a producer step wrote to a topic (or a peer's queue): the
// input of the steps that read it back.
type produced struct {
	topic string
	// messages is how many the producer wrote; 0 until it has run.
	messages int64
}

// kafkaRun is the record of repetition rep of a configuration of Kafka.
func kafkaRun(exp results.Experiment, v results.Variant, param float64, phase results.Phase, rep int) results.Run {
	return newRun(results.Key{System: results.Kafka, Experiment: exp, Variant: v, Phase: phase}, param, rep)
}

// produceStep measures one producer run (spec) against b and, when out is
// not nil, records there what it wrote.
func (l *lab) produceStep(label string, b *broker, run results.Run, spec produceSpec, out *produced) step {
	return step{label: label, system: results.Kafka, run: func(ctx context.Context) error {
		kb, err := b.started()
		if err != nil {
			return err
		}
		return l.measure(ctx, run, func(r *results.Run) error {
			err := l.kafkaProduce(ctx, kb, spec, r)
			if out != nil {
				out.topic, out.messages = spec.topic, r.Result.Messages
			}
			return err
		})
	}}
}

// consumeStep measures one consumer reading partition 0 of what in holds from
// offset 0: all of it, or its first limit messages when limit > 0.
func (l *lab) consumeStep(label string, b *broker, run results.Run, in *produced, limit int64) step {
	return step{label: label, system: results.Kafka, run: func(ctx context.Context) error {
		kb, err := b.started()
		if err != nil {
			return err
		}
		return l.measure(ctx, run, func(r *results.Run) error {
			if in.messages == 0 {
				return errors.New("experiments: nothing was produced to consume")
			}
			n := in.messages
			if limit > 0 {
				n = min(n, limit)
			}
			return l.kafkaConsume(ctx, kb, in.topic, 0, n, r)
		})
	}}
}
