package replica

import (
	"math"
	"strconv"
	"time"

	"github.com/netdb11/kafka/broker/props"
)

// Keys is the replication layer's key table: its server.properties keys
// (Kafka 0.8+ names, not in 0.7), bound to the fields of Config with
// their bounds. kafka-server binds it beside the broker's table
// (broker.AddFlags, broker.LoadConfig with props.Bind(Keys, &cfg)), so
// the keys come from the same file and flags while the 2011 broker's
// Config knows nothing of them. The inter-broker listener's keys
// (replica.port, replica.listener.host, ssl.*) stay in broker.Keys: the
// broker opens that listener.
var Keys = props.NewTable("replica",
	props.Millis("replica.lag.time.max.ms", 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.LagTime }).
		Doc("ms", "replication: a follower not caught up for this long leaves the ISR"),
	props.String("replica.truncation", func(c *Config) *string { return (*string)(&c.Truncation) }, func(c *Config) error {
		if c.Truncation != TruncateEpoch && c.Truncation != TruncateHW {
			return props.Invalid("replica.truncation", strconv.Quote(string(c.Truncation)), "must be epoch or hw")
		}
		return nil
	}).Doc("string", "replication: how a follower cuts its log for a new leader: epoch (KIP-101) or hw (0.8, loses acknowledged messages)"),
	props.Int("min.insync.replicas", 1, math.MaxInt32, "", func(c *Config) *int { return &c.MinInsyncReplicas }).
		Doc("int", "replication: an acks=-1 produce needs at least this many in-sync replicas"),
	props.Bool("unclean.leader.election.enable", func(c *Config) *bool { return &c.UncleanElection }).
		Doc("bool", "replication: let an out-of-sync replica lead when no in-sync one is alive (may lose messages)"),
	props.Int("replica.fetch.max.bytes", 64, math.MaxInt32, "", func(c *Config) *int { return &c.FetchMaxBytes }).
		Doc("bytes", "replication: bytes a follower asks for per fetch"),
	props.Millis("replica.fetch.wait.max.ms", 0, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.FetchWait }).
		Doc("ms", "replication: how long a leader holds a follower's fetch when it has nothing new"),
	props.Millis("replica.fetch.backoff.ms", 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.Backoff }).
		Doc("ms", "replication: wait before retrying a failed follower fetch"),
	props.Millis("replica.high.watermark.checkpoint.interval.ms", 1, math.MaxInt32, "", func(c *Config) *time.Duration { return &c.CheckpointInterval }).
		Doc("ms", "replication: how often each replica writes its high watermark to disk"),
)
