package experiments

import (
	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
)

// Paper §5's second reason for the consumer's rate: Kafka keeps no delivery
// state per message, while "ActiveMQ's broker has to maintain the delivery
// state of every message", writing to disk as it delivers. What each broker
// writes to storage while a consumer reads is measured, for a process from
// write_bytes of /proc/PID/io (the bytes it caused to be written: a write
// into the page cache counts when it dirties a page), for a container from
// its cgroup's io.stat (cgroup v2): Server.DiskWriteBytes (experiments/kit).

// diskWrites is a measurement of a server's storage writes around a run.
type diskWrites struct {
	srv    kit.Server
	before int64
	ok     bool
}

// startDiskWrites reads the server's storage writes before a run.
func startDiskWrites(srv kit.Server) diskWrites {
	n, err := srv.DiskWriteBytes()
	return diskWrites{srv: srv, before: n, ok: err == nil}
}

// record sets the run's BrokerDiskWriteBytes to the writes since start;
// nothing when either reading failed.
func (d diskWrites) record(run *results.Run) {
	if !d.ok {
		return
	}
	if n, err := d.srv.DiskWriteBytes(); err == nil {
		w := n - d.before
		run.BrokerDiskWriteBytes = &w
	}
}
