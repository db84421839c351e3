package report

import (
	"math"

	"github.com/netdb11/kafka/experiments/results"
	"github.com/netdb11/kafka/experiments/stats"
)

// DiskWritePerMsg is what the broker wrote to storage per message during a
// run (NaN: not measured).
func DiskWritePerMsg(r results.Run) float64 {
	if r.BrokerDiskWriteBytes == nil || r.Result.Messages == 0 {
		return math.NaN()
	}
	return float64(*r.BrokerDiskWriteBytes) / float64(r.Result.Messages)
}

// writeDeliveryState writes what each broker wrote to storage while a
// consumer read from it. Paper §5's second reason for Kafka's consumer:
// "ActiveMQ's broker has to maintain the delivery state of every message
// ... written to disk", Kafka's none.
func writeDeliveryState(w Printf, set *results.Set) {
	type row struct {
		sys string
		s   stats.Summary
	}
	var rows []row
	for _, sys := range []results.System{results.Kafka, results.ActiveMQ, results.RabbitMQ} {
		var measured []results.Run
		for _, r := range sel(set, sys, results.VariantConsumer, results.Consume) {
			if r.BrokerDiskWriteBytes != nil {
				measured = append(measured, r)
			}
		}
		if len(measured) > 0 {
			rows = append(rows, row{names[sys], Summary(measured, DiskWritePerMsg)})
		}
	}
	if len(rows) == 0 {
		return
	}
	w("### Written to disk while consuming\n\n")
	w("Paper §5: Kafka's broker keeps no delivery state per message, while ActiveMQ's writes it to disk as it delivers. What each broker process wrote to storage during the consumer runs (`write_bytes` of `/proc/PID/io`: bytes it dirtied in the page cache or wrote directly; for a container its cgroup's `io.stat`), per message consumed:\n\n")
	w("| System | Bytes written per message consumed | Runs |\n|---|---|---|\n")
	for _, r := range rows {
		w("| %s | %s | %d |\n", r.sys, Cell(r.s), r.s.N)
	}
	w("\n")
}
