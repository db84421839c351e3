// Command kafka-mirror copies topics from one or more source clusters to a
// target cluster (Kafka 0.7's MirrorMaker; paper §4: the analysis
// datacenter's cluster pulls the live datacenters' data across with
// embedded consumers):
//
//	kafka-mirror --source-zookeeper=HOST:PORT[/chroot] [--source-zookeeper=...] \
//	    --target-zookeeper=HOST:PORT[/chroot] | --target-broker-list=ID:HOST:PORT,... \
//	    --whitelist=REGEX | --blacklist=REGEX [--num-streams=N] \
//	    [--consumer-config=consumer.properties] [--producer-config=producer.properties]
//
// One group consumer per source cluster reads every topic the filter
// selects, with --num-streams streams per topic; one producer writes to the
// target. It lives under producer/cmd because it imports both libraries and
// the consumer side must not import the producer.
package main

import (
	"os"

	"github.com/netdb11/kafka/broker/cli"
)

func main() { os.Exit(cli.Main(command)) }
