// Command kafka-audit-producer sends log-like messages at a steady rate
// through an audited producer (producer/audit: every message in an envelope
// with its creation time and host, a monitoring event per window to the
// audit topic), queuing them as 0.7's async producer does (a batch leaves
// when --batch-size messages wait or the oldest has waited --queue-time) and
// sending each batch with a confirmed send, so that it can say how long
// each message waited in the queue:
//
//	kafka-audit-producer --zookeeper=HOST:PORT[/chroot] --topic=T --rate=200 --duration=60s
//
// It is the front-end server of paper §4's pipeline experiment. At the end it
// prints a summary (--json: one JSON object) with the queue time per window.
package main

import (
	"os"

	"github.com/netdb11/kafka/broker/cli"
)

func main() { os.Exit(cli.Main(command)) }
