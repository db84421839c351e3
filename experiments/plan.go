package experiments

import (
	"context"
	"fmt"

	"github.com/netdb11/kafka/experiments/results"
)

// plan lists every step of the invocation: the paper's comparison for each
// selected system, then the scale-out and the ablations (Kafka only). Each system runs alone on the
// machine: a peer is started just before its tests and stopped right after.
func (h *harness) plan() []step {
	var p []step
	if h.cfg.hasSystem(results.Kafka) {
		p = append(p, h.kafkaMainSteps()...)
	}
	for _, sys := range []results.System{results.ActiveMQ, results.RabbitMQ} {
		if h.cfg.hasSystem(sys) {
			p = append(p, h.peerSteps(sys)...)
		}
	}
	if h.cfg.hasSystem(results.Kafka) {
		p = append(p, h.scaleOutSteps()...)
		for _, a := range AllAblations {
			if h.cfg.hasAblation(a) {
				p = append(p, h.ablationSteps(a)...)
			}
		}
	}
	return p
}

// newRun is the record of repetition rep of the configuration k.
func newRun(k results.Key, param float64, rep int) results.Run {
	return results.Run{ID: k.ID(rep), Key: k, Param: param, Rep: rep}
}

// kafkaMainSteps: paper §5 for Kafka. Each repetition starts a broker on an empty
// log directory, runs the producer at batch 1 and at batch 50 (one topic each),
// measures the storage of the batch-50 topic, and reads it back with one consumer.
func (h *harness) kafkaMainSteps() []step {
	var p []step
	sys := results.Kafka
	for rep := 1; rep <= h.cfg.Repeats; rep++ {
		var b *kafkaBroker
		topic50 := fmt.Sprintf("main-b50-r%d", rep)
		var produced int64
		p = append(p,
			step{fmt.Sprintf("kafka: start broker (rep %d)", rep), sys, func(ctx context.Context) (err error) {
				b, err = h.startKafka(ctx, fmt.Sprintf("main-r%d", rep), nil)
				return h.fail(sys, err)
			}},
			step{fmt.Sprintf("kafka: producer batch=1 (rep %d)", rep), sys, func(ctx context.Context) error {
				v := results.VariantBatch(1)
				return h.measure(ctx, newRun(results.Key{System: sys, Experiment: results.Main, Variant: v, Phase: results.Produce}, 1, rep),
					func(r *results.Run) error {
						return h.kafkaProduce(ctx, b, produceSpec{topic: fmt.Sprintf("main-b1-r%d", rep), messages: h.cfg.KafkaBatch1Messages, batch: 1, codec: "none"}, r)
					})
			}},
			step{fmt.Sprintf("kafka: producer batch=50 (rep %d)", rep), sys, func(ctx context.Context) error {
				v := results.VariantBatch(50)
				return h.measure(ctx, newRun(results.Key{System: sys, Experiment: results.Main, Variant: v, Phase: results.Produce}, 50, rep),
					func(r *results.Run) error {
						err := h.kafkaProduce(ctx, b, produceSpec{topic: topic50, messages: h.cfg.KafkaMessages, batch: 50, codec: "none"}, r)
						produced = r.Result.Messages
						return err
					})
			}},
			step{fmt.Sprintf("kafka: consumer (rep %d)", rep), sys, func(ctx context.Context) error {
				v := results.VariantConsumer
				return h.measure(ctx, newRun(results.Key{System: sys, Experiment: results.Main, Variant: v, Phase: results.Consume}, 0, rep),
					func(r *results.Run) error {
						if produced == 0 {
							return fmt.Errorf("experiments: nothing was produced to consume")
						}
						return h.kafkaConsume(ctx, b, topic50, 0, produced, r)
					})
			}},
			step{fmt.Sprintf("kafka: stop broker (rep %d)", rep), sys, func(ctx context.Context) error {
				return b.stop()
			}},
		)
	}
	return p
}

// peerSteps: paper §5 for ActiveMQ or RabbitMQ with its own client: per
// repetition an empty durable queue, the producer (one message per send, storage
// measured), the consumer reading those messages, and the transaction variant.
func (h *harness) peerSteps(sys results.System) []step {
	var pr *peer
	// Install first: the ActiveMQ driver compiles against the client jars
	// of the package the install step puts on the machine.
	p := []step{{fmt.Sprintf("%s: install", sys), sys, func(ctx context.Context) error {
		return h.fail(sys, h.installPeer(ctx, sys))
	}}}
	if sys == results.ActiveMQ {
		p = append(p, step{fmt.Sprintf("%s: compile the JMS driver", sys), sys, func(ctx context.Context) error {
			return h.fail(sys, h.compileActiveMQ(ctx))
		}})
	}
	p = append(p, step{fmt.Sprintf("%s: start", sys), sys, func(ctx context.Context) (err error) {
		pr, err = h.startPeer(ctx, sys)
		return h.fail(sys, err)
	}}, step{fmt.Sprintf("%s: warm-up (not measured)", sys), sys, func(ctx context.Context) error {
		// A freshly started JVM or Erlang VM runs slowly until its code is
		// compiled and its caches are warm; the paper's 10 million messages
		// amortise that, a quick run must not measure it.
		return h.fail(sys, h.peerWarmUp(ctx, pr))
	}})
	for rep := 1; rep <= h.cfg.Repeats; rep++ {
		var produced int64
		p = append(p,
			step{fmt.Sprintf("%s: producer, one message per send (rep %d)", sys, rep), sys, func(ctx context.Context) error {
				v := results.VariantOnePerSend
				return h.measure(ctx, newRun(results.Key{System: sys, Experiment: results.Main, Variant: v, Phase: results.Produce}, 1, rep),
					func(r *results.Run) error {
						if err := h.peerReset(ctx, pr); err != nil {
							return err
						}
						err := h.peerRun(ctx, pr, peerSpec{mode: "produce", messages: h.cfg.PeerMessages}, true, r)
						produced = r.Result.Messages
						return err
					})
			}},
			step{fmt.Sprintf("%s: consumer (rep %d)", sys, rep), sys, func(ctx context.Context) error {
				v := results.VariantConsumer
				return h.measure(ctx, newRun(results.Key{System: sys, Experiment: results.Main, Variant: v, Phase: results.Consume}, 0, rep),
					func(r *results.Run) error {
						if produced == 0 {
							return fmt.Errorf("experiments: nothing was produced to consume")
						}
						return h.peerRun(ctx, pr, peerSpec{mode: "consume", messages: produced}, false, r)
					})
			}},
			step{fmt.Sprintf("%s: producer, %s (rep %d)", sys, results.VariantTx(h.cfg.TxSize), rep), sys, func(ctx context.Context) error {
				v := results.VariantTx(h.cfg.TxSize)
				return h.measure(ctx, newRun(results.Key{System: sys, Experiment: results.Main, Variant: v, Phase: results.Produce}, float64(h.cfg.TxSize), rep),
					func(r *results.Run) error {
						if err := h.peerReset(ctx, pr); err != nil {
							return err
						}
						return h.peerRun(ctx, pr, peerSpec{mode: "produce", messages: h.cfg.PeerTxMessages, txSize: h.cfg.TxSize}, false, r)
					})
			}},
		)
	}
	p = append(p, step{fmt.Sprintf("%s: stop", sys), "", func(ctx context.Context) error {
		if pr == nil {
			return nil
		}
		return h.stopPeer(ctx, pr)
	}})
	return p
}
