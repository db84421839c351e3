package props

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// TopicCounts binds a Kafka 0.7 per-topic list, "topic1:8,topic2:16", to a
// map of integers in [lo, MaxInt32] (topic.partition.count.map).
func TopicCounts[C any](name string, lo int64, field func(c *C) *map[string]int) Key[C] {
	return topicMap(name, lo, field, func(n int64) int { return int(n) },
		func(n int) bool { return int64(n) >= lo }, func(n int) string { return strconv.Itoa(n) })
}

// TopicDurations binds a per-topic list of positive counts of unit,
// "topic1:1000,topic2:2000", to a map of durations
// (topic.flush.intervals.ms, topic.log.retention.hours).
func TopicDurations[C any](name string, unit time.Duration, field func(c *C) *map[string]time.Duration) Key[C] {
	return topicMap(name, 1, field, func(n int64) time.Duration { return time.Duration(n) * unit },
		func(d time.Duration) bool { return d > 0 }, func(d time.Duration) string { return formatDuration(d, unit) })
}

func topicMap[C, V any](name string, lo int64, field func(c *C) *map[string]V, from func(int64) V, ok func(V) bool, show func(V) string) Key[C] {
	return Key[C]{name: name, kind: "map",
		set: func(c *C, v string) error {
			m, err := parseTopicMap(name, v, lo)
			if err != nil {
				return err
			}
			out := make(map[string]V, len(m))
			for t, n := range m {
				out[t] = from(n)
			}
			*field(c) = out
			return nil
		},
		show: func(c *C) string {
			m := *field(c)
			parts := make([]string, 0, len(m))
			for _, t := range sortedKeys(m) {
				parts = append(parts, t+":"+show(m[t]))
			}
			return strings.Join(parts, ",")
		},
		check: func(c *C) error {
			m := *field(c)
			var errs []error
			for _, t := range sortedKeys(m) {
				if err := wire.ValidateTopic(t); err != nil {
					errs = append(errs, Invalid(name, t+":"+show(m[t]), err.Error()))
				} else if !ok(m[t]) {
					errs = append(errs, Invalid(name, t+":"+show(m[t]), fmt.Sprintf("the value must be at least %d", lo)))
				}
			}
			return errors.Join(errs...)
		}}
}

// parseTopicMap parses "topic1:v1,topic2:v2"; values are integers in
// [lo, MaxInt32]. Empty entries are skipped.
func parseTopicMap(name, v string, lo int64) (map[string]int64, error) {
	m := make(map[string]int64)
	bad := func(why string) error { return Invalid(name, strconv.Quote(v), why) }
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		topic, num, found := strings.Cut(entry, ":")
		topic, num = strings.TrimSpace(topic), strings.TrimSpace(num)
		if !found {
			return nil, bad(fmt.Sprintf("entry %q is not topic:value", entry))
		}
		if err := wire.ValidateTopic(topic); err != nil {
			return nil, bad(fmt.Sprintf("entry %q: %v", entry, err))
		}
		if _, dup := m[topic]; dup {
			return nil, bad(fmt.Sprintf("topic %q appears twice", topic))
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < lo || n > math.MaxInt32 {
			return nil, bad(fmt.Sprintf("entry %q: value must be an integer in %d..%d", entry, lo, math.MaxInt32))
		}
		m[topic] = n
	}
	return m, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
