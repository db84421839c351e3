package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// maxPlanBytes bounds the plan file. The plan goes into one ZooKeeper node,
// and ZooKeeper refuses a value above jute.maxbuffer, 1 MiB by default
// (about 15,000 partitions of three replicas); reading more is pointless.
const maxPlanBytes = 1 << 20

// readPlan reads and parses a plan file of at most maxPlanBytes, so that a
// file like /dev/zero is refused after 1 MiB, not read until memory runs out.
func readPlan(name string) ([]zkcoord.Reassignment, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPlanBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxPlanBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes, the most a ZooKeeper node holds", name, maxPlanBytes)
	}
	plan, err := zkcoord.ParseReassignments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(plan) == 0 {
		return nil, fmt.Errorf("%s: no partition to reassign", name)
	}
	return plan, nil
}

// checkPlan refuses a plan the controller cannot carry out, with one line
// per problem: a partition listed twice (the second entry would silently
// replace the first), an empty replica list, a broker named twice in one
// list (the assignment would hold fewer replicas than asked), a broker not
// registered in /brokers/ids (its replica never joins the ISR, so the
// reassignment never ends and blocks every later one), an invalid topic,
// and a partition that does not exist or is not replicated.
func checkPlan(plan []zkcoord.Reassignment, live map[wire.BrokerID]zkcoord.BrokerInfo, assignment func(topic string) (zkcoord.Assignment, error)) error {
	var errs []error
	seen := make(map[wire.TopicPartition]bool, len(plan))
	for i, r := range plan {
		tp := wire.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("entry %d (%s): %s", i, tp, fmt.Sprintf(format, args...)))
		}
		if err := wire.ValidateTopic(r.Topic); err != nil {
			bad("%v", err)
			continue
		}
		if seen[tp] {
			bad("the partition is listed twice")
			continue
		}
		seen[tp] = true
		if len(r.Replicas) == 0 {
			bad("no replicas")
		}
		var dup, dead []string
		for j, id := range r.Replicas {
			if slices.Contains(r.Replicas[:j], id) {
				dup = append(dup, fmt.Sprint(id))
			} else if _, ok := live[id]; !ok {
				dead = append(dead, fmt.Sprint(id))
			}
		}
		if len(dup) > 0 {
			bad("broker %s listed more than once in replicas %v", strings.Join(dup, ", "), r.Replicas)
		}
		if len(dead) > 0 {
			bad("broker %s is not a live broker (live: %v)", strings.Join(dead, ", "), liveIDs(live))
		}
		a, err := assignment(r.Topic)
		if err != nil {
			return err
		}
		if len(a[r.Partition]) == 0 {
			bad("the partition does not exist (or is not replicated)")
		}
	}
	return errors.Join(errs...)
}

func liveIDs(live map[wire.BrokerID]zkcoord.BrokerInfo) []wire.BrokerID {
	ids := make([]wire.BrokerID, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
