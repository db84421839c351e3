package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/cli/perf"
	"github.com/netdb11/kafka/experiments/results"
)

// ablationSteps returns the steps of one ablation. Each isolates one design
// decision of the paper by changing only it.
func (h *harness) ablationSteps(name results.Experiment) []step {
	switch name {
	case results.Sendfile:
		return h.sendfileSteps()
	case results.Flush:
		return h.flushSteps()
	case results.Batch:
		return h.batchSteps()
	case results.Compression:
		return h.compressionSteps()
	case results.Partitions:
		return h.partitionSteps()
	case results.Growth:
		return h.growthSteps()
	}
	return nil
}

// brokerSteps wraps body steps between starting and stopping one broker.
func (h *harness) brokerSteps(label, name string, props map[string]string, body func(get func() *kafkaBroker) []step) []step {
	var b *kafkaBroker
	get := func() *kafkaBroker { return b }
	p := []step{{label + ": start broker", results.Kafka, func(ctx context.Context) (err error) {
		b, err = h.startKafka(ctx, name, props)
		return err
	}}}
	for _, s := range body(get) {
		inner := s.run
		s.run = func(ctx context.Context) error {
			if b == nil {
				return errors.New("experiments: broker not running")
			}
			return inner(ctx)
		}
		p = append(p, s)
	}
	return append(p, step{label + ": stop broker", results.Kafka, func(context.Context) error {
		err := b.stop()
		b = nil
		return err
	}})
}

func (h *harness) ablationRun(exp results.Experiment, variant results.Variant, param float64, phase results.Phase, rep int) results.Run {
	return newRun(results.Key{System: results.Kafka, Experiment: exp, Variant: variant, Phase: phase}, param, rep)
}

// sendfileSteps: paper §3.1, the consumer's fetches served with sendfile (no copy
// through user space) or with read+write. One log per mode, read Repeats times
// from the page cache; the broker's CPU time per run shows the copies saved.
func (h *harness) sendfileSteps() []step {
	var p []step
	for _, on := range []bool{true, false} {
		v := results.Setting("sendfile", strconv.FormatBool(on))
		props := map[string]string{"fetch.use.sendfile": strconv.FormatBool(on)}
		var produced int64
		p = append(p, h.brokerSteps("sendfile ablation, "+v.String(), "sendfile-"+strconv.FormatBool(on), props, func(b func() *kafkaBroker) []step {
			s := []step{{"sendfile ablation, " + v.String() + ": fill log", results.Kafka, func(ctx context.Context) error {
				return h.measure(ctx, h.ablationRun(results.Sendfile, v, 0, results.Produce, 1), func(r *results.Run) error {
					err := h.kafkaProduce(ctx, b(), produceSpec{topic: "sendfile", messages: h.cfg.AblationMessages, batch: 50, codec: "none"}, r)
					produced = r.Result.Messages
					return err
				})
			}}}
			for rep := 1; rep <= h.cfg.Repeats; rep++ {
				s = append(s, step{fmt.Sprintf("sendfile ablation, %s: consumer (rep %d)", v, rep), results.Kafka, func(ctx context.Context) error {
					return h.measure(ctx, h.ablationRun(results.Sendfile, v, 0, results.Consume, rep), func(r *results.Run) error {
						return h.kafkaConsume(ctx, b(), "sendfile", 0, produced, r)
					})
				}})
			}
			return s
		})...)
	}
	return p
}

// flushSteps: paper §3.1, the broker flushes the log to disk only every N
// messages (log.flush.interval); the sweep shows what flushing more often costs
// the producer at batch 50.
func (h *harness) flushSteps() []step {
	var p []step
	for _, n := range h.cfg.FlushIntervals {
		v := results.SettingInt("log.flush.interval", int64(n))
		props := map[string]string{"log.flush.interval": strconv.Itoa(n)}
		p = append(p, h.brokerSteps("flush ablation, "+v.String(), fmt.Sprintf("flush-%d", n), props, func(b func() *kafkaBroker) []step {
			var s []step
			for rep := 1; rep <= h.cfg.Repeats; rep++ {
				s = append(s, step{fmt.Sprintf("flush ablation, %s (rep %d)", v, rep), results.Kafka, func(ctx context.Context) error {
					return h.measure(ctx, h.ablationRun(results.Flush, v, float64(n), results.Produce, rep), func(r *results.Run) error {
						return h.kafkaProduce(ctx, b(), produceSpec{topic: fmt.Sprintf("flush-r%d", rep), messages: h.cfg.FlushMessages, batch: 50, codec: "none"}, r)
					})
				}})
			}
			return s
		})...)
	}
	return p
}

// batchSteps: paper §3.1/§5, the producer sends a set of messages per request;
// the sweep goes from 1 to 1000 messages per request.
func (h *harness) batchSteps() []step {
	return h.brokerSteps("batch ablation", "batch", nil, func(b func() *kafkaBroker) []step {
		var s []step
		for _, n := range h.cfg.BatchSizes {
			v := results.VariantBatch(n)
			// Small batches are slow: fewer messages keep each run short.
			msgs := min(h.cfg.AblationMessages, h.cfg.KafkaBatch1Messages*int64(n))
			for rep := 1; rep <= h.cfg.Repeats; rep++ {
				s = append(s, step{fmt.Sprintf("batch ablation, %s (rep %d)", v, rep), results.Kafka, func(ctx context.Context) error {
					return h.measure(ctx, h.ablationRun(results.Batch, v, float64(n), results.Produce, rep), func(r *results.Run) error {
						return h.kafkaProduce(ctx, b(), produceSpec{topic: fmt.Sprintf("batch-%d-r%d", n, rep), messages: msgs, batch: n, codec: "none"}, r)
					})
				}})
			}
		}
		return s
	})
}

// compressionSteps: compressed message sets (Kafka 0.7's compression.codec),
// stored and served as they are. Payloads are log-like lines, not random bytes,
// so the ratio means something. Each run produces at batch 50, measures the
// bytes stored per message and reads the topic back (the consumer decompresses).
func (h *harness) compressionSteps() []step {
	return h.brokerSteps("compression ablation", "compression", nil, func(b func() *kafkaBroker) []step {
		var s []step
		var payload string
		s = append(s, step{"compression ablation: payloads", results.Kafka, func(ctx context.Context) (err error) {
			payload, err = h.logPayloadFile(ctx)
			return err
		}})
		msgs := max(h.cfg.AblationMessages/4, 1)
		for _, codec := range h.cfg.Codecs {
			v := results.Setting("codec", codec)
			for rep := 1; rep <= h.cfg.Repeats; rep++ {
				topic := fmt.Sprintf("comp-%s-r%d", codec, rep)
				var produced int64
				s = append(s,
					step{fmt.Sprintf("compression ablation, %s: producer (rep %d)", v, rep), results.Kafka, func(ctx context.Context) error {
						return h.measure(ctx, h.ablationRun(results.Compression, v, float64(codecID(codec)), results.Produce, rep), func(r *results.Run) error {
							err := h.kafkaProduce(ctx, b(), produceSpec{topic: topic, messages: msgs, batch: 50, codec: codec, payloadFile: payload}, r)
							produced = r.Result.Messages
							return err
						})
					}},
					step{fmt.Sprintf("compression ablation, %s: consumer (rep %d)", v, rep), results.Kafka, func(ctx context.Context) error {
						return h.measure(ctx, h.ablationRun(results.Compression, v, float64(codecID(codec)), results.Consume, rep), func(r *results.Run) error {
							return h.kafkaConsume(ctx, b(), topic, 0, produced, r)
						})
					}})
			}
		}
		return s
	})
}

// logPayloadFile writes the log-like payloads of the compression ablation.
func (h *harness) logPayloadFile(context.Context) (string, error) {
	return writeLogLines(h.work, h.cfg.MessageSize, 100_000)
}

// partitionSteps: paper §3 and §3.2, a topic is split into partitions, the unit of
// parallelism. One producer spreads messages over P partitions; then P consumers,
// one per partition, read them concurrently and the run reports their combined
// throughput.
func (h *harness) partitionSteps() []step {
	var p []step
	for _, n := range h.cfg.PartitionCounts {
		v := results.SettingInt("partitions", int64(n))
		props := map[string]string{"num.partitions": strconv.Itoa(n)}
		p = append(p, h.brokerSteps("partitions ablation, "+v.String(), fmt.Sprintf("partitions-%d", n), props, func(b func() *kafkaBroker) []step {
			var s []step
			for rep := 1; rep <= h.cfg.Repeats; rep++ {
				topic := fmt.Sprintf("part-r%d", rep)
				var produced int64
				s = append(s,
					step{fmt.Sprintf("partitions ablation, %s: producer (rep %d)", v, rep), results.Kafka, func(ctx context.Context) error {
						return h.measure(ctx, h.ablationRun(results.Partitions, v, float64(n), results.Produce, rep), func(r *results.Run) error {
							err := h.kafkaProduce(ctx, b(), produceSpec{topic: topic, messages: h.cfg.AblationMessages, batch: 50, codec: "none"}, r)
							produced = r.Result.Messages
							return err
						})
					}},
					step{fmt.Sprintf("partitions ablation, %s: %d consumers (rep %d)", v, n, rep), results.Kafka, func(ctx context.Context) error {
						return h.measure(ctx, h.ablationRun(results.Partitions, v, float64(n), results.Consume, rep), func(r *results.Run) error {
							return h.consumeAllPartitions(ctx, b(), topic, n, produced, r)
						})
					}})
			}
			return s
		})...)
	}
	return p
}

// consumeAllPartitions runs one consumer per partition at once; the combined
// throughput is all messages over the slowest consumer's time.
func (h *harness) consumeAllPartitions(ctx context.Context, b *kafkaBroker, topic string, n int, produced int64, run *results.Run) error {
	if produced == 0 {
		return errors.New("experiments: nothing was produced to consume")
	}
	// Messages are spread at random; all have the same size, so each
	// partition's share follows from its log's size.
	_, total := b.topicBytes(topic)
	per := float64(total) / float64(produced)
	if per <= 0 {
		return fmt.Errorf("experiments: topic %s has no data", topic)
	}
	cpu0, _ := b.meter().cpuSeconds()
	subs := make([]results.Run, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dirApp := int64(0)
		if _, a, err := diskUsage(filepath.Join(b.logDir, fmt.Sprintf("%s-%d", topic, i))); err == nil {
			dirApp = a
		}
		msgs := int64(math.Round(float64(dirApp) / per))
		if msgs == 0 {
			continue
		}
		subs[i].ID = fmt.Sprintf("%s/partition=%d", run.ID, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.kafkaConsume(ctx, b, topic, i, msgs, &subs[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var msgs, bytes int64
	var secs float64
	for _, s := range subs {
		msgs += s.Result.Messages
		bytes += s.Result.Bytes
		secs = max(secs, s.Result.Seconds)
	}
	run.Result = perf.NewResult(msgs, bytes, secs, nil)
	if cpu1, err := b.meter().cpuSeconds(); err == nil {
		run.BrokerCPUSeconds = cpu1 - cpu0
	}
	run.Config = mergeConfig(subs[0].Config, map[string]string{"consumers": strconv.Itoa(n), "partition": "all, one consumer each"})
	run.BrokerRSSBytes, _ = b.meter().residentBytes()
	return nil
}

// growthSteps: paper §3.1/§5, performance does not degrade as the log grows.
// The broker's log is filled to each size in turn; at each, a producer probe
// writes a new topic and a consumer probe reads the big one, and the broker's RSS
// is recorded (the broker caches nothing itself: paper §3.1).
func (h *harness) growthSteps() []step {
	return h.brokerSteps("growth ablation", "growth", nil, func(b func() *kafkaBroker) []step {
		var s []step
		var filled int64 // messages in the big topic
		for _, size := range h.cfg.GrowthSizes {
			v := results.Setting("log", humanBytes(size))
			s = append(s, step{"growth ablation: fill log to " + humanBytes(size), results.Kafka, func(ctx context.Context) error {
				n, err := h.fillLog(ctx, b(), "growth", size)
				filled += n
				return err
			}})
			for rep := 1; rep <= h.cfg.Repeats; rep++ {
				s = append(s,
					step{fmt.Sprintf("growth ablation, %s: producer (rep %d)", v, rep), results.Kafka, func(ctx context.Context) error {
						return h.measure(ctx, h.ablationRun(results.Growth, v, float64(size), results.Produce, rep), func(r *results.Run) error {
							return h.kafkaProduce(ctx, b(), produceSpec{topic: fmt.Sprintf("probe-%d-r%d", size, rep), messages: h.cfg.GrowthProbeMessages, batch: 50, codec: "none"}, r)
						})
					}},
					step{fmt.Sprintf("growth ablation, %s: consumer (rep %d)", v, rep), results.Kafka, func(ctx context.Context) error {
						return h.measure(ctx, h.ablationRun(results.Growth, v, float64(size), results.Consume, rep), func(r *results.Run) error {
							return h.kafkaConsume(ctx, b(), "growth", 0, min(h.cfg.GrowthProbeMessages, filled), r)
						})
					}})
			}
		}
		return s
	})
}

// fillLog produces to topic until its log holds at least size bytes, and returns
// how many messages it added.
func (h *harness) fillLog(ctx context.Context, b *kafkaBroker, topic string, size int64) (int64, error) {
	_, have := b.topicBytes(topic)
	if have >= size {
		return 0, nil
	}
	msgs := (size - have + int64(h.cfg.MessageSize+kafkaOverhead) - 1) / int64(h.cfg.MessageSize+kafkaOverhead)
	var r results.Run
	r.ID = "kafka/growth/fill-" + humanBytes(size)
	start := time.Now()
	err := h.kafkaProduce(ctx, b, produceSpec{topic: topic, messages: msgs, batch: 200, codec: "none"}, &r)
	h.log.Info("filled log", "topic", topic, "bytes", size, "seconds", time.Since(start).Seconds(), "err", err)
	return r.Result.Messages, err
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dB", n)
}
