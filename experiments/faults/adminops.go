package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Admin runs the operators' tools under load (issue 23), in a loop for
// the fault's duration, from the client host: kafka-reassign-partitions
// moves a workload partition's replicas to a rotation of its assignment
// (with three brokers and RF=3 a reassignment can only change the order,
// and with it the preferred leader), waits until --verify says it is done,
// then kafka-preferred-replica-election moves the leadership of every
// partition to its (new) preferred replica; then the next partition. The
// producers and readers run all along. Healed: the loop stops (a move
// under way is left to finish).
const Admin = "admin"

// adminFor is how long the admin nemesis runs its loop.
const adminFor = 20 * time.Second

// admin starts the Admin loop; its heal stops it and waits.
func (t *trial) admin(ctx context.Context, f Fault) (heal func(context.Context) error, err error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	var mu sync.Mutex
	moves, elections, failures := 0, 0, []string{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			p := t.w.parts[i%len(t.w.parts)]
			err := t.reassign(ctx, p.part, 1+i/len(t.w.parts))
			if ctx.Err() != nil {
				return // the heal stopped a tool: not its failure
			}
			mu.Lock()
			if err != nil {
				failures = append(failures, err.Error())
			} else {
				moves++
			}
			mu.Unlock()
			err = t.tool(ctx, "kafka-preferred-replica-election", "--topic="+topic)
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			if err != nil {
				failures = append(failures, err.Error())
			} else {
				elections++
			}
			mu.Unlock()
			sleep(ctx, 500*time.Millisecond)
		}
	}()
	return func(context.Context) error {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		t.note("%s: %d reassignments done, %d preferred-replica elections, %d tool runs failed%s", f, moves, elections, len(failures), firstOf(failures))
		return nil
	}, nil
}

func firstOf(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return " (first: " + xs[0] + ")"
}

// reassign moves partition part of the workload's topic to its replicas
// rotated by rot and waits (up to 15 s) until kafka-reassign-partitions
// --verify says the move is done.
func (t *trial) reassign(ctx context.Context, part int32, rot int) error {
	pm, err := t.cl.PartitionInfo(ctx, topic, part)
	if err != nil {
		return err
	}
	rs := make([]int, len(pm.Replicas))
	for i, r := range pm.Replicas {
		rs[(i+rot)%len(rs)] = int(r)
	}
	type move struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Replicas  []int  `json:"replicas"`
	}
	b, err := json.Marshal(map[string]any{"version": 1, "partitions": []move{{topic, part, rs}}})
	if err != nil {
		return err
	}
	file := filepath.Join(t.cl.cfg.Dir, fmt.Sprintf("reassign-%d.json", part))
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return err
	}
	if err := t.tool(ctx, "kafka-reassign-partitions", "--reassignment-json-file="+file, "--execute"); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := t.tool(ctx, "kafka-reassign-partitions", "--reassignment-json-file="+file, "--verify")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("move of %s-%d to %v not done: %w", topic, part, rs, err)
		}
		sleep(ctx, 300*time.Millisecond)
	}
}

// tool runs one of the suite's command-line tools on the client host
// against the cluster's ZooKeeper.
func (t *trial) tool(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args = append([]string{"--zookeeper=" + t.cl.ZKConnect(), "--timeout=10s"}, args...)
	out, err := t.cl.tb.Command(ctx, clientHost, filepath.Join(t.cfg.Bin, name), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("faults: %s %s: %w: %s", name, strings.Join(args[1:], " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
