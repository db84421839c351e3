package log

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/broker/wire"
)

// partitionDirName is the directory of a partition under log.dir:
// "<topic>-<partition>", as Kafka 0.7.
func partitionDirName(topic string, partition wire.Partition) string {
	return topic + "-" + strconv.FormatInt(int64(partition), 10)
}

// parsePartitionDirName splits "<topic>-<partition>" at its last '-'. A topic
// may itself contain '-', the partition never does.
func parsePartitionDirName(name string) (topic string, partition wire.Partition, err error) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return "", 0, fmt.Errorf("log: directory %q is not <topic>-<partition>", name)
	}
	topic = name[:i]
	if err := wire.ValidateTopic(topic); err != nil {
		return "", 0, fmt.Errorf("log: directory %q: %w", name, err)
	}
	digits := name[i+1:]
	p, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != digits {
		return "", 0, fmt.Errorf("log: directory %q: partition %q is not a non-negative decimal number", name, digits)
	}
	return topic, wire.Partition(p), nil
}
