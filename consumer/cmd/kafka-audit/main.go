// Command kafka-audit checks the audit of paper §4 at one tier (the live
// cluster, or a mirrored one): it reads the audit topic's monitoring events
// and the audited topics' envelopes (broker/audit; producers send them with
// producer/audit) and prints, per window and topic, the messages sent and
// received, missing and duplicate counts, and end-to-end latency
// percentiles from the messages' creation times:
//
//	kafka-audit --zookeeper=HOST:PORT[/chroot] [--follow]
//
// Without --follow it reads everything the cluster holds, prints the table
// and exits: 0 when nothing is missing, 3 when something is. It prints no
// latency then, and says why on stderr: reading after the fact, it cannot
// know when each message arrived. The producers column counts producer
// instances (audit sessions), each once however many monitoring events it
// published a window in. With --follow
// it keeps reading, prints each window once it has ended and --grace has
// passed, and on SIGTERM or SIGINT catches up, prints the rest and exits the
// same way.
package main

import (
	"os"

	"github.com/netdb11/kafka/broker/cli"
)

func main() { os.Exit(cli.Main(command)) }
