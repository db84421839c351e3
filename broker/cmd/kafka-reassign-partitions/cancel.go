package main

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// cancelAttempts bounds how often cancel re-reads the admin node when the
// controller rewrote it between cancel's read and its conditional write.
const cancelAttempts = 10

// cancel ends the reassignment of the partitions in plan (nil: every
// pending one), as Kafka 2.5's --cancel does: each partition goes back to
// its original replicas. It does so through the controller's own
// machinery: the entry's target becomes the original replicas (recorded by
// --execute), which the partition's assignment still holds (the controller
// only adds replicas until every new one is in the ISR), so the controller
// moves the leadership back to an original replica if need be, shrinks the
// assignment to the original replicas, sends STOP_REPLICA to the added
// ones, and removes the entry. An entry the controller has not started on
// targets the current assignment, which is the original. An entry without
// recorded originals (written by an older tool) whose replicas were already
// added cannot be restored: it is removed, and the partition keeps the
// larger assignment, which the output says.
//
// Every write is conditional on the version read, and retried on a
// conflict, so an entry the controller finishes meanwhile is not revived.
func cancel(conn *zkcoord.Conn, plan []zkcoord.Reassignment, out io.Writer) error {
	var only map[wire.TopicPartition]bool
	if plan != nil {
		only = make(map[wire.TopicPartition]bool, len(plan))
		for _, r := range plan {
			only[wire.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = true
		}
	}
	for range cancelAttempts {
		data, version, err := conn.GetVersion(zkcoord.ReassignPartitionsPath)
		if errors.Is(err, zkcoord.ErrNoNode) {
			fmt.Fprintln(out, "No reassignment is in progress.")
			return nil
		}
		if err != nil {
			return err
		}
		entries, err := zkcoord.ParseReassignments(data)
		if err != nil {
			return fmt.Errorf("%w (the controller drops such a node)", err)
		}
		var kept []zkcoord.Reassignment
		var report []string
		for _, e := range entries {
			tp := wire.TopicPartition{Topic: e.Topic, Partition: e.Partition}
			if only != nil && !only[tp] {
				kept = append(kept, e)
				continue
			}
			delete(only, tp)
			line, keep, err := cancelEntry(conn, &e)
			if err != nil {
				return err
			}
			report = append(report, line)
			if keep {
				kept = append(kept, e)
			}
		}
		if len(report) == 0 {
			fmt.Fprintln(out, "None of the given partitions is being reassigned.")
			return nil
		}
		if len(kept) == 0 {
			err = conn.DeleteIfVersion(zkcoord.ReassignPartitionsPath, version)
		} else {
			_, err = conn.SetIfVersion(zkcoord.ReassignPartitionsPath, zkcoord.MarshalReassignments(kept), version)
		}
		if errors.Is(err, zkcoord.ErrBadVersion) || errors.Is(err, zkcoord.ErrNoNode) {
			continue // the controller moved on meanwhile: look again
		}
		if err != nil {
			return err
		}
		for _, l := range report {
			fmt.Fprintln(out, l)
		}
		var notPending []string
		for tp := range only {
			notPending = append(notPending, tp.String())
		}
		slices.Sort(notPending)
		for _, tp := range notPending {
			fmt.Fprintf(out, "Partition %s is not being reassigned.\n", tp)
		}
		return nil
	}
	return fmt.Errorf("the reassignment changed under every one of %d attempts to cancel it; try again", cancelAttempts)
}

// cancelEntry turns e into its cancellation: it reports the line to print
// and whether the entry stays in the admin node (with its target changed
// to the original replicas) for the controller to carry out.
func cancelEntry(conn *zkcoord.Conn, e *zkcoord.Reassignment) (string, bool, error) {
	tp := wire.TopicPartition{Topic: e.Topic, Partition: e.Partition}
	a, _, err := zkcoord.ReplicationOn(conn).TopicAssignment(e.Topic)
	if err != nil {
		return "", false, err
	}
	cur := a[e.Partition]
	switch {
	case len(e.Original) > 0:
		e.Replicas = slices.Clone(e.Original)
	case len(cur) > 0 && !containsAll(cur, e.Replicas):
		// The controller has not added the new replicas: the assignment is
		// still the original one.
		e.Replicas, e.Original = slices.Clone(cur), slices.Clone(cur)
	default:
		return fmt.Sprintf("Partition %s: its original replicas are unknown (the reassignment was started by an older tool); "+
			"the reassignment is ended and the partition keeps replicas %v", tp, cur), false, nil
	}
	line := fmt.Sprintf("Partition %s: cancelled; the controller restores replicas %v", tp, e.Replicas)
	st, _, ok, err := zkcoord.ReplicationOn(conn).PartitionStateOf(e.Topic, e.Partition)
	if err != nil {
		return "", false, err
	}
	if ok {
		var behind []wire.BrokerID
		for _, r := range e.Replicas {
			if !slices.Contains(st.ISR, r) {
				behind = append(behind, r)
			}
		}
		if len(behind) > 0 {
			line += fmt.Sprintf(" once broker %v is back in the ISR %v", behind, st.ISR)
		}
	}
	return line, true, nil
}

func containsAll(set, xs []wire.BrokerID) bool {
	for _, x := range xs {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}
