package experiments

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/netdb11/kafka/experiments/machine"
	"github.com/netdb11/kafka/experiments/results"
)

// segmentFiles lists the segment files of one partition of a topic.
func (b *kafkaBroker) segmentFiles(topic string, partition int) []string {
	files, _ := filepath.Glob(filepath.Join(b.logDir, fmt.Sprintf("%s-%d", topic, partition), "*.kafka"))
	return files
}

// recordResidency stores in run the share of a partition's log that is in
// the page cache now, before a consumer reads it: a "hot" run that found
// part of its log evicted reads that part from the disk.
func recordResidency(run *results.Run, files []string) {
	if run.Conditions == nil || len(files) == 0 {
		return
	}
	res, total, err := machine.Resident(files...)
	if err != nil || total == 0 {
		return
	}
	share := float64(res) / float64(total)
	run.Conditions.CacheResident = &share
}

// coldConsumeStep measures one consumer reading partition 0 of what in
// holds from offset 0 after the broker has flushed it and its segment files
// have been dropped from the page cache (machine.DropCaches: the whole
// machine's cache as root, the files' own pages otherwise): the consumer
// from the disk, the paper's consumer test as a reader of old data sees it
// (issue 14: hot and cold).
func (l *lab) coldConsumeStep(label string, b *broker, run results.Run, in *produced) step {
	return step{label: label, system: results.Kafka, run: func(ctx context.Context) error {
		kb, err := b.started()
		if err != nil {
			return err
		}
		return l.measure(ctx, run, func(r *results.Run) error {
			if in.messages == 0 {
				return errors.New("experiments: nothing was produced to consume")
			}
			if err := l.waitVisible(ctx, kb, in.topic, 0, in.messages); err != nil {
				return err
			}
			files := kb.segmentFiles(in.topic, 0)
			how, err := machine.DropCaches(files...)
			if err != nil {
				return err
			}
			if r.Conditions != nil {
				r.Conditions.CacheDrop = how
			}
			recordResidency(r, files)
			if err := l.kafkaConsumeOnce(ctx, kb, in.topic, 0, in.messages, r); err != nil {
				return err
			}
			r.Config["page_cache"] = "cold: dropped before the run (" + how + ")"
			return nil
		})
	}}
}
