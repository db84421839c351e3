package log

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxTopicLen is the longest topic name Kafka accepts.
const MaxTopicLen = 255

// ValidateTopic checks a topic name against Kafka's rule: 1 to 255
// characters, each a letter, a digit, '.', '_' or '-', and neither "." nor
// "..". The error wraps ErrInvalidTopic and quotes the name. Because '/' and
// NUL are refused, a valid name never leaves log.dir.
func ValidateTopic(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopic)
	case len(name) > MaxTopicLen:
		return fmt.Errorf("%w: %d characters, more than %d", ErrInvalidTopic, len(name), MaxTopicLen)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has %q at byte %d (allowed: [a-zA-Z0-9._-])", ErrInvalidTopic, name, c, i)
		}
	}
	return nil
}

// partitionDirName is the directory of a partition under log.dir:
// "<topic>-<partition>", as Kafka 0.7.
func partitionDirName(topic string, partition int32) string {
	return topic + "-" + strconv.FormatInt(int64(partition), 10)
}

// parsePartitionDirName splits "<topic>-<partition>" at its last '-'. A topic
// may itself contain '-', the partition never does.
func parsePartitionDirName(name string) (topic string, partition int32, err error) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return "", 0, fmt.Errorf("log: directory %q is not <topic>-<partition>", name)
	}
	topic = name[:i]
	if err := ValidateTopic(topic); err != nil {
		return "", 0, fmt.Errorf("log: directory %q: %w", name, err)
	}
	digits := name[i+1:]
	p, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != digits {
		return "", 0, fmt.Errorf("log: directory %q: partition %q is not a non-negative decimal number", name, digits)
	}
	return topic, int32(p), nil
}
