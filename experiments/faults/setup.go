package faults

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Setup is a configuration under test: the 2011 broker with one of the
// producer's acknowledgement modes, or the replication layer (issue 12)
// with acks, min.insync.replicas, unclean election and truncation rule.
type Setup struct {
	Name string
	// RF is the replication factor; 1 is the 2011 system: one partition
	// on each broker, written with 0.7's PRODUCE.
	RF int
	// Acks: AckNone, AckAppend or AckFlush when RF is 1; "1" or "all" when
	// the topic is replicated (PRODUCE with acks).
	Acks       string
	MinInsync  int
	Unclean    bool
	Truncation string // epoch or hw
}

// Replicated reports whether the setup uses the replication layer.
func (s Setup) Replicated() bool { return s.RF > 1 }

func (s Setup) String() string {
	if !s.Replicated() {
		return fmt.Sprintf("2011 broker (one copy), acks=%s", s.Acks)
	}
	return fmt.Sprintf("RF=%d acks=%s min.insync.replicas=%d unclean.leader.election.enable=%t replica.truncation=%s",
		s.RF, s.Acks, s.MinInsync, s.Unclean, s.Truncation)
}

// wireAcks is request.required.acks on the wire.
func (s Setup) wireAcks() int16 {
	if s.Acks == "all" {
		return -1
	}
	return 1
}

// props are the brokers' replication keys.
func (s Setup) props(lag time.Duration) map[string]string {
	if !s.Replicated() {
		return nil
	}
	return map[string]string{
		"min.insync.replicas":            strconv.Itoa(s.MinInsync),
		"unclean.leader.election.enable": strconv.FormatBool(s.Unclean),
		"replica.truncation":             s.Truncation,
		"replica.lag.time.max.ms":        strconv.FormatInt(lag.Milliseconds(), 10),
	}
}

// Setups are the configurations by name.
var Setups = map[string]Setup{
	AckNone:   {Name: AckNone, RF: 1, Acks: AckNone},
	AckAppend: {Name: AckAppend, RF: 1, Acks: AckAppend},
	AckFlush:  {Name: AckFlush, RF: 1, Acks: AckFlush},
	// The modern promise: acks=all, two in-sync copies, clean elections,
	// truncation by leader epoch.
	"safe": {Name: "safe", RF: 3, Acks: "all", MinInsync: 2, Truncation: "epoch"},
	// acks=1: the leader alone acknowledges.
	"acks1": {Name: "acks1", RF: 3, Acks: "1", MinInsync: 1, Truncation: "epoch"},
	// acks=all with an ISR allowed to shrink to the leader.
	"minisr1": {Name: "minisr1", RF: 3, Acks: "all", MinInsync: 1, Truncation: "epoch"},
	// Unclean election on: an out-of-sync replica may lead (Jepsen 2013).
	"unclean": {Name: "unclean", RF: 3, Acks: "all", MinInsync: 1, Unclean: true, Truncation: "epoch"},
	// 0.8's truncation to the local high watermark (KIP-101's loss).
	"hw": {Name: "hw", RF: 3, Acks: "all", MinInsync: 1, Truncation: "hw"},
}

// SetupNames lists the setups in report order.
var SetupNames = []string{AckNone, AckAppend, AckFlush, "safe", "acks1", "minisr1", "unclean", "hw"}

// setup returns the named setup.
func setup(name string) (Setup, error) {
	s, ok := Setups[name]
	if !ok {
		names := make([]string, 0, len(Setups))
		for n := range Setups {
			names = append(names, n)
		}
		sort.Strings(names)
		return Setup{}, fmt.Errorf("faults: unknown configuration %q (want one of %s)", name, strings.Join(names, ", "))
	}
	return s, nil
}
