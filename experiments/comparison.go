package experiments

import (
	"context"
	"errors"
	"fmt"

	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
)

// The paper's comparison (§5): Kafka's producer at batch 1 and 50 and its
// consumer, against ActiveMQ and RabbitMQ driven by their own clients, with
// the disk space each takes per message. report.Comparison reports it.
var comparison = part{
	name:  results.Main,
	steps: comparisonSteps,
	binaries: func(c Config) []string {
		if c.hasSystem(results.RabbitMQ) {
			return []string{rabbitDriverBin}
		}
		return nil
	},
	section: report.Comparison,
}

// comparisonSteps runs each selected system in turn: Kafka, then ActiveMQ,
// then RabbitMQ.
func comparisonSteps(l *lab) []step {
	var p []step
	if l.cfg.hasSystem(results.Kafka) {
		p = append(p, kafkaMainSteps(l)...)
	}
	for _, sys := range []results.System{results.ActiveMQ, results.RabbitMQ} {
		if l.cfg.hasSystem(sys) {
			p = append(p, peerSteps(l, sys)...)
		}
	}
	return p
}

// mainRun is the record of repetition rep of the comparison's configuration.
func mainRun(sys results.System, v results.Variant, phase results.Phase, param float64, rep int) results.Run {
	return newRun(results.Key{System: sys, Experiment: results.Main, Variant: v, Phase: phase}, param, rep)
}

// critical marks s as a step its system's later steps cannot do without.
func critical(s step) step {
	s.critical = true
	return s
}

// kafkaMainSteps: paper §5 for Kafka. Each repetition starts a broker on an
// empty log directory, runs the producer at batch 1 and at batch 50 (one topic
// each), measures the storage of the batch-50 topic, and reads it back with
// one consumer from the page cache (hot), then again after dropping it from
// the cache (cold: from the disk; issue 14). A broker that does not start
// skips every later Kafka step.
func kafkaMainSteps(l *lab) []step {
	var p []step
	for rep := 1; rep <= l.cfg.mainRepeats(); rep++ {
		b := &broker{name: fmt.Sprintf("main-r%d", rep)}
		batch50 := &produced{}
		p = append(p,
			critical(l.startStep(fmt.Sprintf("kafka: start broker (rep %d)", rep), b)),
			l.produceStep(fmt.Sprintf("kafka: producer batch=1 (rep %d)", rep), b,
				mainRun(results.Kafka, results.VariantBatch(1), results.Produce, 1, rep),
				produceSpec{topic: fmt.Sprintf("main-b1-r%d", rep), messages: l.cfg.KafkaBatch1Messages, batch: 1, codec: "none"}, nil),
			l.produceStep(fmt.Sprintf("kafka: producer batch=50 (rep %d)", rep), b,
				mainRun(results.Kafka, results.VariantBatch(50), results.Produce, 50, rep),
				produceSpec{topic: fmt.Sprintf("main-b50-r%d", rep), messages: l.cfg.KafkaMessages, batch: 50, codec: "none"}, batch50),
			l.consumeStep(fmt.Sprintf("kafka: consumer (rep %d)", rep), b,
				mainRun(results.Kafka, results.VariantConsumer, results.Consume, 0, rep), batch50, 0),
			l.coldConsumeStep(fmt.Sprintf("kafka: consumer, cold cache (rep %d)", rep), b,
				mainRun(results.Kafka, results.VariantConsumerCold, results.Consume, 0, rep), batch50),
			stopStep(fmt.Sprintf("kafka: stop broker (rep %d)", rep), b),
		)
	}
	return p
}

// peerSteps: paper §5 for ActiveMQ or RabbitMQ with its own client: install
// (first: the ActiveMQ driver compiles against the client jars of the package
// it installs), compile the driver, start, warm up; then per repetition an
// empty durable queue, the producer (one message per send, storage measured),
// the consumer reading those messages, and the transaction variant; then
// stop. A failure before the repetitions skips the peer's later steps; the
// stop step always runs.
func peerSteps(l *lab, sys results.System) []step {
	pr := &peer{name: sys}
	label := func(format string, args ...any) string { return string(sys) + ": " + fmt.Sprintf(format, args...) }
	p := []step{critical(step{label: label("install"), system: sys, run: func(ctx context.Context) error {
		return l.installPeer(ctx, pr)
	}})}
	if sys == results.ActiveMQ {
		p = append(p, critical(step{label: label("compile the JMS driver"), system: sys, run: func(ctx context.Context) error {
			return l.compileActiveMQ(ctx, pr)
		}}))
	}
	p = append(p,
		critical(step{label: label("start"), system: sys, run: func(ctx context.Context) error {
			return l.startPeer(ctx, pr)
		}}),
		critical(step{label: label("warm-up (not measured)"), system: sys, run: func(ctx context.Context) error {
			// A freshly started JVM or Erlang VM runs slowly until its code is
			// compiled and its caches are warm; the paper's 10 million messages
			// amortise that, a quick run must not measure it.
			return l.peerWarmUp(ctx, pr)
		}}))
	tx := results.VariantTx(l.cfg.TxSize)
	for rep := 1; rep <= l.cfg.mainRepeats(); rep++ {
		queued := &produced{topic: "perf"}
		p = append(p,
			step{label: label("producer, one message per send (rep %d)", rep), system: sys, run: func(ctx context.Context) error {
				return l.measure(ctx, mainRun(sys, results.VariantOnePerSend, results.Produce, 1, rep), func(r *results.Run) error {
					if err := l.peerReset(ctx, pr); err != nil {
						return err
					}
					err := l.peerRun(ctx, pr, peerSpec{mode: "produce", messages: l.cfg.PeerMessages}, true, r)
					queued.messages = r.Result.Messages
					return err
				})
			}},
			step{label: label("consumer (rep %d)", rep), system: sys, run: func(ctx context.Context) error {
				return l.measure(ctx, mainRun(sys, results.VariantConsumer, results.Consume, 0, rep), func(r *results.Run) error {
					if queued.messages == 0 {
						return errors.New("experiments: nothing was produced to consume")
					}
					return l.peerRun(ctx, pr, peerSpec{mode: "consume", messages: queued.messages}, false, r)
				})
			}},
			step{label: label("producer, %s (rep %d)", tx, rep), system: sys, run: func(ctx context.Context) error {
				return l.measure(ctx, mainRun(sys, tx, results.Produce, float64(l.cfg.TxSize), rep), func(r *results.Run) error {
					if err := l.peerReset(ctx, pr); err != nil {
						return err
					}
					return l.peerRun(ctx, pr, peerSpec{mode: "produce", messages: l.cfg.PeerTxMessages, txSize: l.cfg.TxSize}, false, r)
				})
			}},
		)
	}
	return append(p, step{label: label("stop"), run: func(context.Context) error { return l.stopPeer(pr) }})
}
