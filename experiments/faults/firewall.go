package faults

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// firewall is the iptables rules one fault adds in the testbed's hosts.
// Each rule carries the fault's tag (an iptables comment), and Heal removes
// the tagged rules and no others: faults that overlap on one host (a
// compound schedule) each keep their rules until their own heal. Before,
// a heal flushed the host's chains and ended an overlapping fault early
// while its window said it went on.
type firewall struct {
	c   *Cluster
	tag string

	mu    sync.Mutex
	hosts []string // where rules went in, for Heal
}

// firewall returns a new, empty set of rules with a tag of its own.
func (c *Cluster) firewall() *firewall {
	return &firewall{c: c, tag: fmt.Sprintf("fault-%d", c.firewalls.Add(1))}
}

// Isolate drops, inside host, every packet to and from the given hosts.
func (fw *firewall) Isolate(ctx context.Context, host string, from []string) error {
	for _, f := range from {
		a := fw.c.Addr(f)
		if err := fw.drop(ctx, host, "INPUT", "-s", a); err != nil {
			return err
		}
		if err := fw.drop(ctx, host, "OUTPUT", "-d", a); err != nil {
			return err
		}
	}
	return nil
}

// Refuse drops, inside host, every packet it sends to the given hosts,
// and nothing it receives from them (a one-way partition).
func (fw *firewall) Refuse(ctx context.Context, host string, to []string) error {
	for _, h := range to {
		if err := fw.drop(ctx, host, "OUTPUT", "-d", fw.c.Addr(h)); err != nil {
			return err
		}
	}
	return nil
}

// BlockPort drops, inside host, its connections to port on host to (TCP,
// outgoing), leaving connections from to into host alone: host cannot
// fetch from to's broker, but to's controller can still send host orders.
func (fw *firewall) BlockPort(ctx context.Context, host, to string, port int) error {
	return fw.drop(ctx, host, "OUTPUT", "-d", fw.c.Addr(to), "-p", "tcp", "--dport", strconv.Itoa(port))
}

// CutPort drops, inside host, all traffic of its connections to port on
// host to, both ways: what host sends to that port does not leave, what
// comes back from it does not arrive (a response already on its way when
// the rules go in is dropped too). Connections from to into host are left
// alone: to's controller can still send host orders.
func (fw *firewall) CutPort(ctx context.Context, host, to string, port int) error {
	p := strconv.Itoa(port)
	if err := fw.drop(ctx, host, "INPUT", "-s", fw.c.Addr(to), "-p", "tcp", "--sport", p); err != nil {
		return err
	}
	return fw.drop(ctx, host, "OUTPUT", "-d", fw.c.Addr(to), "-p", "tcp", "--dport", p)
}

// drop inserts a tagged DROP rule matching match into host's chain.
func (fw *firewall) drop(ctx context.Context, host, chain string, match ...string) error {
	fw.mu.Lock()
	if !slices.Contains(fw.hosts, host) {
		fw.hosts = append(fw.hosts, host)
	}
	fw.mu.Unlock()
	args := append([]string{"-I", chain}, match...)
	return fw.c.iptables(ctx, host, append(args, "-m", "comment", "--comment", fw.tag, "-j", "DROP")...)
}

// Heal removes the rules this firewall added, in every host it touched.
func (fw *firewall) Heal(ctx context.Context) error {
	fw.mu.Lock()
	hosts := slices.Clone(fw.hosts)
	fw.mu.Unlock()
	for _, h := range hosts {
		rules, err := fw.c.rules(ctx, h)
		if err != nil {
			return err
		}
		for _, r := range rules {
			if !slices.Contains(r, fw.tag) {
				continue
			}
			// "-A CHAIN spec..." as iptables -S prints it: deleted by
			// the same spec.
			if err := fw.c.iptables(ctx, h, append([]string{"-D"}, r[1:]...)...); err != nil {
				return err
			}
		}
	}
	return nil
}

// rules lists host's rules as iptables -S prints them ("-A INPUT -s
// 10.211.0.3/32 -m comment --comment fault-1 -j DROP"), split into
// fields; the chains' policies ("-P") are left out.
func (c *Cluster) rules(ctx context.Context, host string) ([][]string, error) {
	out, err := c.tb.Command(ctx, host, "iptables", "-w", "-S").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("faults: iptables -S in %s: %w: %s", host, err, out)
	}
	var rs [][]string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "-A" {
			rs = append(rs, f)
		}
	}
	return rs, nil
}

// Rules counts the DROP rules in host (for tests and the cleanup check).
func (c *Cluster) Rules(ctx context.Context, host string) (int, error) {
	rs, err := c.rules(ctx, host)
	n := 0
	for _, r := range rs {
		if slices.Contains(r, "DROP") {
			n++
		}
	}
	return n, err
}

func (c *Cluster) iptables(ctx context.Context, host string, args ...string) error {
	args = append([]string{"-w"}, args...)
	out, err := c.tb.Command(ctx, host, "iptables", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("faults: iptables %s in %s: %w: %s", strings.Join(args, " "), host, err, out)
	}
	return nil
}
