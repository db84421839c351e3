package kit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Ensemble is a replicated ZooKeeper: servers that elect a leader among
// themselves and serve while a majority of them runs. The fault suite's
// ensemble nemeses kill, stop and cut its members.
type Ensemble struct {
	members []ZooKeeper

	mu    sync.Mutex // guards procs
	procs map[int]*Proc
}

// NewEnsemble describes an ensemble of the given members, each with its own
// ID (its myid), Host, Port and Dir; peers are the server.N lines every
// member is given (see Peers). Nothing is started.
func NewEnsemble(members []ZooKeeper, peers []Peer) (*Ensemble, error) {
	if len(members) == 0 || len(members) != len(peers) {
		return nil, fmt.Errorf("kit: an ensemble needs members, one per peer (%d members, %d peers)", len(members), len(peers))
	}
	e := &Ensemble{procs: map[int]*Proc{}}
	for _, m := range members {
		if !slices.ContainsFunc(peers, func(p Peer) bool { return p.ID == m.ID }) {
			return nil, fmt.Errorf("kit: ensemble member %q has ID %d, which no peer has", m.Name, m.ID)
		}
		m.Peers = peers
		e.members = append(e.members, m)
	}
	return e, nil
}

// Peers builds the server.N lines of an ensemble whose member i (ID i+1)
// runs on addrs[i], every one with the same quorum and election ports (the
// testbed gives each its own address). On one address, give each member
// ports of its own instead.
func Peers(addrs []string, quorumPort, electionPort int) []Peer {
	var out []Peer
	for i, a := range addrs {
		out = append(out, Peer{ID: i + 1, Addr: a, QuorumPort: quorumPort, ElectionPort: electionPort})
	}
	return out
}

// IDs are the members' IDs.
func (e *Ensemble) IDs() []int {
	var ids []int
	for _, m := range e.members {
		ids = append(ids, m.ID)
	}
	return ids
}

// Member is the member with the given ID.
func (e *Ensemble) Member(id int) (ZooKeeper, bool) {
	for _, m := range e.members {
		if m.ID == id {
			return m, true
		}
	}
	return ZooKeeper{}, false
}

// Connect is the clients' connect string: every member's host:port.
func (e *Ensemble) Connect() string {
	var s []string
	for _, m := range e.members {
		s = append(s, m.Connect())
	}
	return strings.Join(s, ",")
}

// Start launches every member not running and waits until each serves (as
// leader or follower).
func (e *Ensemble) Start(ctx context.Context, timeout time.Duration) error {
	for _, id := range e.IDs() {
		if err := e.Launch(ctx, id); err != nil {
			return err
		}
	}
	for _, id := range e.IDs() {
		if err := e.WaitServing(ctx, id, timeout); err != nil {
			return err
		}
	}
	return nil
}

// Launch starts member id unless it runs, without waiting for it to serve
// (it joins the quorum on its own).
func (e *Ensemble) Launch(ctx context.Context, id int) error {
	m, ok := e.Member(id)
	if !ok {
		return fmt.Errorf("kit: no ensemble member %d", id)
	}
	if e.Running(id) {
		return nil
	}
	p, err := m.Launch(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.procs[id] = p
	e.mu.Unlock()
	return nil
}

// WaitServing waits until member id serves clients (it is in a quorum).
func (e *Ensemble) WaitServing(ctx context.Context, id int, timeout time.Duration) error {
	m, ok := e.Member(id)
	if !ok {
		return fmt.Errorf("kit: no ensemble member %d", id)
	}
	return WaitFor(ctx, timeout, m.Name+" serving", e.exiter(id), func() bool { return m.Mode(ctx) != "" })
}

// exiter is member id's process for WaitFor; nil (not a nil *Proc) when it
// has none.
func (e *Ensemble) exiter(id int) Exiter {
	if p := e.Proc(id); p != nil {
		return p
	}
	return nil
}

// Proc is member id's process, nil when it was never started.
func (e *Ensemble) Proc(id int) *Proc {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.procs[id]
}

// Running reports whether member id's process is alive.
func (e *Ensemble) Running(id int) bool {
	p := e.Proc(id)
	return p != nil && p.Running()
}

// Mode is member id's answer to srvr ("leader", "follower"), "" when it does
// not serve.
func (e *Ensemble) Mode(ctx context.Context, id int) string {
	m, ok := e.Member(id)
	if !ok {
		return ""
	}
	return m.Mode(ctx)
}

// Leader is the ID of the member that says it leads, 0 when none does.
func (e *Ensemble) Leader(ctx context.Context) int {
	for _, id := range e.IDs() {
		if e.Mode(ctx, id) == "leader" {
			return id
		}
	}
	return 0
}

// Kill crashes member id (SIGKILL) and waits for it to end.
func (e *Ensemble) Kill(id int) {
	if p := e.Proc(id); p != nil {
		p.Kill()
	}
}

// Stop ends member id gracefully (see Proc.Stop).
func (e *Ensemble) Stop(id int, timeout time.Duration) error {
	if p := e.Proc(id); p != nil {
		return p.Stop(timeout)
	}
	return nil
}

// Close kills every member. Safe to call more than once.
func (e *Ensemble) Close() {
	e.mu.Lock()
	var procs []*Proc
	for _, p := range e.procs {
		procs = append(procs, p)
	}
	e.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
}
