package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/experiments/faults/check"
	"github.com/netdb11/kafka/zkcoord"
)

// monitorEvery is how often the invariant monitor polls (issue 23: every
// 10-50 ms). A round over three partitions and three brokers takes a few
// milliseconds on an idle testbed; 50 ms keeps the polling a small part of
// a shared 2-core machine's load.
const monitorEvery = 50 * time.Millisecond

// monitor polls, while a replicated trial runs, ZooKeeper's state of every
// partition of the workload's topic and each broker's admin endpoint, and
// checks the replication invariants of the TLA+ model (check.Monitor) on
// every round. Its own ZooKeeper session and HTTP connections go from the
// client host, like the workload's: the nemeses that cut a broker off cut
// the monitor's view of it too, and the broker is then left out of the
// rounds (a broker that does not answer is not judged).
type monitor struct {
	t      *trial
	zk     *zkcoord.Conn
	http   map[int]*http.Client
	cancel context.CancelFunc
	done   chan struct{}

	regs map[int]registration // each broker's process's registration, as last seen

	mu     sync.Mutex
	events []check.Event // the violations
	rounds int           // rounds polled
	judged int           // partition samples with a stable ZooKeeper state
	zkErrs int           // rounds ZooKeeper did not answer
}

// startMonitor starts the invariant monitor of t's cluster; stop ends it.
func (t *trial) startMonitor(ctx context.Context) (*monitor, error) {
	cl := t.cl
	zk, err := zkcoord.Dial(ctx, zkcoord.Config{
		Connect:        cl.ZKConnect(), // one server, or the ensemble's three
		SessionTimeout: 10 * time.Second,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Dial: func(_, addr string, timeout time.Duration) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			return cl.Dial(ctx, addr)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("faults: invariant monitor's ZooKeeper session: %w", err)
	}
	m := &monitor{t: t, zk: zk, http: map[int]*http.Client{}, regs: map[int]registration{}, done: make(chan struct{})}
	for b := 1; b <= t.cfg.Brokers; b++ {
		m.http[b] = &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{
			DialContext:         func(ctx context.Context, _, addr string) (net.Conn, error) { return cl.Dial(ctx, addr) },
			MaxIdleConnsPerHost: 1,
		}}
	}
	ctx, m.cancel = context.WithCancel(ctx)
	go m.run(ctx)
	return m, nil
}

// stop ends the monitor and returns the violations it saw, in order, and a
// line for the trial's notes. A nil monitor (2011 trials) has none.
func (m *monitor) stop() ([]check.Event, string) {
	if m == nil {
		return nil, ""
	}
	m.cancel()
	<-m.done
	m.zk.Close()
	for _, c := range m.http {
		c.CloseIdleConnections()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.events, fmt.Sprintf("invariants: %d rounds every %v, %d partition samples judged, %d rounds without ZooKeeper, %d violations",
		m.rounds, monitorEvery, m.judged, m.zkErrs, len(m.events))
}

func (m *monitor) run(ctx context.Context) {
	defer close(m.done)
	mon := check.NewMonitor()
	tick := time.NewTicker(monitorEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var evs []check.Event
		judged, zkErr := 0, false
		m.registrations()
		for _, p := range m.t.w.parts {
			s, err := m.sample(ctx, p)
			if err != nil {
				zkErr = true
				continue
			}
			if s.Stable {
				judged++
			}
			evs = append(evs, mon.Observe(s)...)
		}
		m.mu.Lock()
		m.rounds++
		m.judged += judged
		if zkErr {
			m.zkErrs++
		}
		m.events = append(m.events, evs...)
		m.mu.Unlock()
		for _, e := range evs {
			m.t.note("invariant %s broken on %s-%d: %s", e.Name, e.Topic, e.Partition, e.Error)
		}
	}
}

// sample is one round of p: ZooKeeper's state, the leader it names, the
// other brokers, ZooKeeper's state again. An error is ZooKeeper's.
func (m *monitor) sample(ctx context.Context, p partition) (check.PartitionSample, error) {
	s := check.PartitionSample{TP: p.tp, At: time.Now()}
	st, v, written, ok, err := zkcoord.ReplicationOn(m.zk).PartitionStateWritten(p.topic, wire.Partition(p.part))
	if err != nil || !ok {
		return s, fmt.Errorf("faults: state of %s: ok %t, %v", p.tp, ok, err)
	}
	s.ZK = check.ZKState{Leader: int32(st.Leader), Epoch: st.LeaderEpoch, Version: v, Written: written}
	for _, r := range st.ISR {
		s.ZK.ISR = append(s.ZK.ISR, int32(r))
	}
	order := []int{int(st.Leader)}
	for b := 1; b <= m.t.cfg.Brokers; b++ {
		if b != int(st.Leader) {
			order = append(order, b)
		}
	}
	for _, b := range order {
		if r, ok := m.replica(ctx, b, p); ok {
			s.Replicas = append(s.Replicas, r)
		}
	}
	_, v2, ok, err := zkcoord.ReplicationOn(m.zk).PartitionStateOf(p.topic, wire.Partition(p.part))
	if err != nil || !ok {
		return s, fmt.Errorf("faults: state of %s: ok %t, %v", p.tp, ok, err)
	}
	s.Stable = v2 == v
	return s, nil
}

// registration is a broker process's registration in ZooKeeper: the
// process (pid) and the zxid that created the node (its broker epoch).
type registration struct {
	pid  int
	zxid int64
}

// registrations reads each running broker's registration and keeps it as
// its process's when it was made after the process started (0.7's
// creatorId carries the time it was made): until then the node, if any,
// is the previous process's, whose session has not expired yet.
func (m *monitor) registrations() {
	for b := 1; b <= m.t.cfg.Brokers; b++ {
		proc := m.t.cl.broker(b)
		if proc == nil || m.regs[b].pid == proc.Pid() {
			continue
		}
		id := wire.BrokerID(b)
		data, _, zxid, err := m.zk.GetWritten(zkcoord.BrokerPath(id))
		if err != nil {
			continue
		}
		info, err := zkcoord.ParseBrokerInfo(id, string(data))
		if err != nil {
			continue
		}
		if at, ok := info.Created(); ok && !at.Before(proc.Started().Truncate(time.Millisecond)) {
			m.regs[b] = registration{pid: proc.Pid(), zxid: zxid}
			m.t.note("invariants: broker%d's process %d registered (zxid %#x)", b, proc.Pid(), zxid)
		}
	}
}

// replica is broker b's view of p, false when b is down, does not answer
// in time, or does not hold p.
func (m *monitor) replica(ctx context.Context, b int, p partition) (check.ReplicaSample, bool) {
	pid := m.t.cl.pid(b)
	if pid == 0 {
		return check.ReplicaSample{}, false
	}
	var registered int64
	if reg := m.regs[b]; reg.pid == pid {
		registered = reg.zxid
	}
	url := fmt.Sprintf("http://%s/admin/partitions/%s/%d", net.JoinHostPort(m.t.cl.Addr(brokerHost(b)), strconv.Itoa(adminPort)), p.topic, p.part)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return check.ReplicaSample{}, false
	}
	resp, err := m.http[b].Do(req)
	if err != nil {
		return check.ReplicaSample{}, false
	}
	defer resp.Body.Close()
	var ap admin.Partition
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&ap) != nil || ap.Replication == nil {
		return check.ReplicaSample{}, false
	}
	r := ap.Replication
	return check.ReplicaSample{Broker: int32(b), Pid: pid, Role: r.Role, Leader: int32(r.Leader), Epoch: r.LeaderEpoch,
		HW: int64(r.HighWatermark), LogEnd: int64(r.LogEnd), Start: int64(ap.StartOffset), Registered: registered}, true
}

// pid is broker id's process id, 0 when it is not running.
func (c *Cluster) pid(id int) int {
	p := c.broker(id)
	if p == nil {
		return 0
	}
	return p.Pid()
}
