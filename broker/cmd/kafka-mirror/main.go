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
// target. It lives in broker/cmd, among the tools that compose parts (as
// Kafka keeps MirrorMaker among its tools), because joining the two client
// libraries is its job: the producer and consumer trees import neither
// each other nor anything that joins them (scripts/layers).
package main

import (
	"os"

	"github.com/netdb11/kafka/broker/cli"
)

func main() { os.Exit(cli.Main(command)) }
