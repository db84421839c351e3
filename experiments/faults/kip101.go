package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// kip101 applies the KIP101 nemesis to partition 0, whose leader is
// f.Broker: KIP-101's first scenario ("Scenario 1: High Watermark
// Truncation followed by Immediate Leader Election"), with real processes.
// See KIP101 for the steps. It returns the heal: F's rules removed, the
// leader and G restarted.
func (t *trial) kip101(ctx context.Context, f Fault) (heal func(context.Context) error, err error) {
	cl := t.cl
	leader := f.Broker
	fb, gb, err := t.pickFollowers(ctx, f)
	if err != nil {
		return nil, err
	}
	// F (drawn from the seed) truncates and is elected; G is killed first,
	// and kept down so that F is the only live ISR member when the leader
	// dies.
	fHost := brokerHost(fb)
	fw := cl.firewall()
	heal = func(ctx context.Context) error {
		return errors.Join(fw.Heal(ctx), cl.StartBroker(ctx, leader), cl.StartBroker(ctx, gb))
	}
	// F loses its way to the leader: the reply to a fetch in flight, which
	// would tell F the high watermark its fetch moved, never arrives.
	for _, port := range []int{brokerPort, replicaPort} {
		if err := fw.CutPort(ctx, fHost, brokerHost(leader), port); err != nil {
			return heal, err
		}
	}
	part := "partition=" + topic + "-0"
	following := countLines(cl.logPath(fHost), "msg=following", part)
	truncations := countLines(cl.logPath(fHost), "follower truncated", part)
	cutAt := time.Now()
	// G dies: a new epoch keeps the leader and drops G from the ISR, and F
	// is told to follow in it.
	if err := cl.StopBroker(ctx, gb, true); err != nil {
		return heal, err
	}
	// Wait for F's order and then for its truncation (replica.truncation=hw
	// cuts on its own; epoch must ask the leader, which it cannot reach, so
	// it keeps its log): at most 1 s after the order, and never past three
	// quarters of the lag time since F was cut off, while F is surely still
	// in the leader's ISR.
	deadline := cutAt.Add(t.cfg.LagTime * 3 / 4)
	ordered, truncated := false, false
	for time.Now().Before(deadline) {
		if !ordered && countLines(cl.logPath(fHost), "msg=following", part) > following {
			ordered = true
			if d := time.Now().Add(time.Second); d.Before(deadline) {
				deadline = d
			}
		}
		if countLines(cl.logPath(fHost), "follower truncated", part) > truncations {
			truncated = true
			break
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return heal, err
		}
	}
	if err := cl.StopBroker(ctx, leader, true); err != nil {
		return heal, err
	}
	t.note("%s: broker%d (F) cut from the leader's ports, broker%d (G) killed; F told to follow the new epoch: %t, F truncated: %t; leader killed %v after the cut",
		f, fb, gb, ordered, truncated, time.Since(cutAt).Round(time.Millisecond))
	return heal, nil
}

// pickFollowers returns partition 0's two followers when f.Broker leads it:
// F, the one the seed draws, and G, the other.
func (t *trial) pickFollowers(ctx context.Context, f Fault) (fb, gb int, err error) {
	pm, err := t.cl.PartitionInfo(ctx, topic, 0)
	if err != nil {
		return 0, 0, err
	}
	var fs []int
	for _, r := range pm.Replicas {
		if int(r) != f.Broker {
			fs = append(fs, int(r))
		}
	}
	slices.Sort(fs)
	if len(fs) < 2 {
		return 0, 0, noTarget(fmt.Errorf("faults: %s needs two followers of %s-0, have %v", f.Kind, topic, fs))
	}
	fi := int(t.cfg.Seed) % 2
	return fs[fi], fs[1-fi], nil
}

// logPath is a host's server log in the working directory.
func (c *Cluster) logPath(host string) string { return filepath.Join(c.cfg.Dir, host+".log") }

// countLines counts the lines of a file holding every one of subs.
func countLines(path string, subs ...string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
next:
	for sc.Scan() {
		for _, s := range subs {
			if !strings.Contains(sc.Text(), s) {
				continue next
			}
		}
		n++
	}
	return n
}
