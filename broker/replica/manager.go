package replica

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/clustertls"
	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/server"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// Config configures a broker's replication layer. The names in parentheses
// are the server.properties keys.
type Config struct {
	// BrokerID is this broker (brokerid).
	BrokerID BrokerID
	// Logs is the broker's log manager (required).
	Logs *log.Manager
	// Session is the broker's one ZooKeeper session, shared with its
	// registration (zkcoord.NewSessionRegistrar), as 0.8's KafkaServer
	// gives the registration, the controller election and the replica
	// manager one ZkClient (issue 21, rule 7): the layer and its
	// controller candidate run on it, and its owner closes it after Run.
	// nil: Run dials a session of its own from ZK for the layer and its
	// controller candidate (tests of the layer alone).
	Session *zkcoord.Conn
	// ZK is the ZooKeeper session configuration (zk.connect, ...), used
	// when Session is nil.
	ZK zkcoord.Config
	// Candidate is the broker's controller candidate
	// (broker/controller.Controller), run by Run on the layer's session
	// (nil: this broker never becomes controller).
	Candidate Candidate
	// LagTime is replica.lag.time.max.ms (default 10 s): a follower that
	// has not caught up for this long leaves the ISR.
	LagTime time.Duration
	// Truncation is replica.truncation (default epoch).
	Truncation Truncation
	// MinInsyncReplicas is min.insync.replicas (default 1): an acks=-1
	// produce to a partition with a smaller ISR is refused.
	MinInsyncReplicas int
	// UncleanElection is unclean.leader.election.enable (default false).
	UncleanElection bool
	// FetchMaxBytes is replica.fetch.max.bytes (default 1 MiB).
	FetchMaxBytes int
	// FetchWait is replica.fetch.wait.max.ms (default 500 ms): how long
	// a leader holds a follower's fetch when it has nothing new.
	FetchWait time.Duration
	// Backoff is replica.fetch.backoff.ms (default 100 ms): the wait
	// before retrying a failed fetch or election step.
	Backoff time.Duration
	// RequestTimeout bounds a round trip to another broker
	// (controller.socket.timeout.ms; default 30 s).
	RequestTimeout time.Duration
	// CheckpointInterval is replica.high.watermark.checkpoint.interval.ms
	// (default 5 s).
	CheckpointInterval time.Duration
	// MaxMessageSize is max.message.size.
	MaxMessageSize int
	// TLS is the broker's inter-broker keystore (ssl.keystore.location,
	// ssl.truststore.location): the followers and the controller dial
	// other brokers' inter-broker listeners with it, and the certificate
	// of a peer on this broker's listener is checked against the broker
	// id its requests claim (auth.go). nil: plaintext.
	TLS *clustertls.Keystore
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger receives the layer's logs (nil: discarded).
	Logger *slog.Logger
}

// Candidate is a controller candidate (broker/controller.Controller):
// the layer runs it on the broker's session, so that the candidacy lives
// and dies with the broker's registration and leaderships (rule 7).
type Candidate interface {
	// Run campaigns, and acts as controller while elected, on zk until
	// ctx ends.
	Run(ctx context.Context, zk *zkcoord.Conn)
	// Stats reports the leaders elected and the ISRs shrunk as
	// controller, for the layer's metrics.
	Stats() (leaderElections, isrShrinks uint64)
}

// DefaultConfig returns Kafka 0.8's defaults (and epoch truncation).
func DefaultConfig() Config {
	return Config{LagTime: 10 * time.Second, Truncation: TruncateEpoch, MinInsyncReplicas: 1,
		FetchMaxBytes: 1 << 20, FetchWait: 500 * time.Millisecond, Backoff: 100 * time.Millisecond,
		RequestTimeout: 30 * time.Second, CheckpointInterval: 5 * time.Second, MaxMessageSize: wire.DefaultMaxMessageSize}
}

// Validate reports missing or bad settings.
func (c *Config) Validate() error {
	var errs []error
	if c.Logs == nil {
		errs = append(errs, errors.New("replica: Config.Logs is nil"))
	}
	if c.Session == nil && c.ZK.Connect == "" {
		errs = append(errs, errors.New("replica: replication needs zk.connect"))
	}
	if _, err := ParseTruncation(string(c.Truncation)); err != nil {
		errs = append(errs, err)
	}
	for name, d := range map[string]time.Duration{"replica.lag.time.max.ms": c.LagTime, "replica.fetch.backoff.ms": c.Backoff,
		"controller.socket.timeout.ms": c.RequestTimeout, "replica.high.watermark.checkpoint.interval.ms": c.CheckpointInterval} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("replica: %s=%v must be positive", name, d))
		}
	}
	if c.FetchWait < 0 {
		errs = append(errs, fmt.Errorf("replica: replica.fetch.wait.max.ms=%v must not be negative", c.FetchWait))
	}
	if c.MinInsyncReplicas < 1 {
		errs = append(errs, fmt.Errorf("replica: min.insync.replicas=%d must be at least 1", c.MinInsyncReplicas))
	}
	if c.FetchMaxBytes < wire.Overhead {
		errs = append(errs, fmt.Errorf("replica: replica.fetch.max.bytes=%d is too small", c.FetchMaxBytes))
	}
	return errors.Join(errs...)
}

// Manager is a broker's replication layer: it keeps the replicated
// partitions' state, leads or follows each as the controller orders, serves
// the replication requests (as the broker server's Extension), and runs the
// broker's controller candidate (Config.Candidate). Create it with New, pass it to the server as its
// Extension, and Run it.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu         sync.Mutex
	parts      map[partKey]*partition // guarded by mu
	zk         *zkcoord.Conn          // set by Run; guarded by mu
	replicated map[string]bool        // topics looked up: whether each has a replica assignment; guarded by mu
	ctx        context.Context        // Run's; guarded by mu

	// sawRegistration: this broker's /brokers/ids/N has been seen, so its
	// absence (or, on a shared session, its belonging to another session)
	// means the controller may count it dead (a broker run without
	// registration never suspends for it); used by checkSession on Run's
	// goroutine only.
	sawRegistration bool

	// fatal carries the storage error that halts the layer (and the
	// broker): a replica that cannot record its role gives it up.
	fatal chan error

	stats stats
}

// ErrHalted wraps the storage error that made the replication layer halt.
var ErrHalted = errors.New("replica: halted on a storage error")

// abdicate gives up a role this broker could not take (rule 5): a failed
// write of the leader-epoch file (as a new leader, or as a follower that
// truncates or appends a new epoch), of a truncation, or of a log that
// failed earlier leaves the replica unable to lead or follow correctly,
// so, as 0.8 halts the broker on storage errors, the layer stops the
// broker; its registration goes and the controller elects another ISR
// member. It returns the code for the order's answer.
func (m *Manager) abdicate(p *partition, err error) wire.ErrorCode {
	m.log.Error("storage error while taking a role: halting the broker", "partition", p.partKey.String(), "err", err)
	select {
	case m.fatal <- fmt.Errorf("%w: %s: %w", ErrHalted, p.partKey, err):
	default: // already halting
	}
	return wire.CodeOf(err)
}

var _ server.Extension = (*Manager)(nil)

// New makes the layer. It finds the partitions of log.dir that were
// replicated (they hold a leader-epoch or high-watermark file), so that
// until the controller speaks their consumers see only below the
// checkpointed high watermark.
func New(cfg Config) (*Manager, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, log: cfg.Logger.With("brokerid", cfg.BrokerID), parts: make(map[partKey]*partition), ctx: context.Background(),
		replicated: make(map[string]bool), fatal: make(chan error, 1)}
	for topic, n := range cfg.Logs.Topics() {
		for i := 0; i < n; i++ {
			l, err := cfg.Logs.Get(topic, wire.Partition(i))
			if err != nil {
				continue
			}
			if !fileExists(filepath.Join(l.Dir(), EpochsFile)) && !fileExists(filepath.Join(l.Dir(), HWFile)) {
				continue
			}
			p, err := openPartition(l)
			if err != nil {
				return nil, err
			}
			m.addLocked(p)
		}
	}
	return m, nil
}

// LogEnds returns the replicated logs as they are now, for the broker's
// registration (zkcoord.Registrar.SetLogEnds): where each ends and
// whether it was recovered after a crash. The controller reads them when
// no member of a partition's ISR is known to hold all the ISR
// acknowledged (KIP-966's unclean-shutdown news, in our registry).
func (m *Manager) LogEnds() []zkcoord.LogEnd {
	ps := m.partitions()
	out := make([]zkcoord.LogEnd, 0, len(ps))
	for _, p := range ps {
		out = append(out, zkcoord.LogEnd{Topic: p.topic, Partition: p.partition, End: int64(p.log.WrittenEnd()), Recovered: p.log.Recovered()})
	}
	slices.SortFunc(out, func(a, b zkcoord.LogEnd) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// PublishWith gives the broker's registrar (broker.PublishingLayer) the
// log ends to write before each registration, when it can carry them (a
// zkcoord.Registrar). Without them the controller counts every log of
// this broker as perhaps short after a restart.
func (m *Manager) PublishWith(r broker.Registrar) {
	lr, ok := r.(interface{ SetLogEnds(func() []zkcoord.LogEnd) })
	if !ok {
		m.log.Warn("the registrar cannot publish the log ends; after a restart the controller counts this broker's logs as perhaps short")
		return
	}
	lr.SetLogEnds(m.LogEnds)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// partition returns a replicated partition, or nil.
func (m *Manager) partition(topic string, partition wire.Partition) *partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[partKey{topic, partition}]
}

// openOrCreate returns the replicated partition, creating its log if need be.
func (m *Manager) openOrCreate(topic string, partition wire.Partition) (*partition, error) {
	if p := m.partition(topic, partition); p != nil {
		return p, nil
	}
	l, err := m.cfg.Logs.GetOrCreateAssigned(topic, partition)
	if err != nil {
		return nil, err
	}
	p, err := openPartition(l)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.parts[p.partKey]; q != nil {
		return q, nil
	}
	m.addLocked(p)
	return p, nil
}

// addLocked makes p the replicated partition of its log, whose retention
// it then bounds by its HW: no replica deletes a segment not wholly
// committed (Kafka since 0.8), which a follower could still lack and an
// election could ask this replica to truncate below. The caller holds mu
// (or owns m, in New).
func (m *Manager) addLocked(p *partition) {
	m.parts[p.partKey] = p
	p.log.BoundRetention(p.highWatermark)
}

func (m *Manager) partitions() []*partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*partition, 0, len(m.parts))
	for _, p := range m.parts {
		out = append(out, p)
	}
	return out
}

func (m *Manager) zkConn() *zkcoord.Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.zk
}

func (m *Manager) runCtx() context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ctx
}

// Run connects to ZooKeeper (or takes Config.Session), runs the controller
// candidate on the same session, shrinks the ISR of lagging followers and
// checkpoints high watermarks until ctx ends; then it stops every fetcher
// and writes the last checkpoints.
func (m *Manager) Run(ctx context.Context) error {
	zk, owned := m.cfg.Session, false
	for zk == nil {
		var err error
		if zk, err = zkcoord.Dial(ctx, m.cfg.ZK); err == nil {
			owned = true
			break
		}
		if ctx.Err() != nil {
			return nil // shut down before ZooKeeper answered
		}
		// ZooKeeper is not there yet: keep trying, as the registration does.
		m.log.Warn("replication layer: connecting to ZooKeeper; retrying", "err", err)
		if !sleepCtx(ctx, m.cfg.Backoff*10) {
			return nil
		}
	}
	events := zk.Listen() // this role sets no watches: session news only
	defer events.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.mu.Lock()
	m.zk, m.ctx = zk, ctx
	m.mu.Unlock()
	m.dropUnassigned(zk)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.refreshReplicated(ctx, zk)
	}()
	if m.cfg.Candidate != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.cfg.Candidate.Run(ctx, zk)
		}()
	}
	tick := min(m.cfg.LagTime/2, time.Second)
	isrTicker := time.NewTicker(max(tick, 5*time.Millisecond))
	defer isrTicker.Stop()
	cpTicker := time.NewTicker(m.cfg.CheckpointInterval)
	defer cpTicker.Stop()
	sessionTicker := time.NewTicker(max(m.zombieAfter()/5, 5*time.Millisecond))
	defer sessionTicker.Stop()
	var halted error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case halted = <-m.fatal:
			break loop
		case ev := <-events.Events():
			switch ev.Type {
			case zkcoord.EventSessionExpired:
				m.suspendLeaders("ZooKeeper session expired")
			case zkcoord.EventNewSession, zkcoord.EventReconnected:
				// Resume what ZooKeeper still gives this broker, once its
				// registration is back in this session.
				m.checkSession(zk)
			}
		case <-isrTicker.C:
			m.shrinkISRs()
		case <-cpTicker.C:
			m.checkpoint()
		case <-sessionTicker.C:
			m.checkSession(zk)
		}
	}
	for _, p := range m.partitions() {
		p.transition.Lock()
		p.mu.Lock()
		f := p.fetch
		p.fetch = nil
		p.mu.Unlock()
		if f != nil {
			f.halt()
		}
		p.transition.Unlock()
	}
	m.checkpoint()
	cancel() // a halt ends the controller candidate too
	wg.Wait()
	if owned {
		return errors.Join(halted, zk.Close())
	}
	return halted
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// dropUnassigned deletes, when the layer starts, the replicas this broker
// holds whose topic's assignment in ZooKeeper no longer names it: a
// reassignment dropped them while the broker was down, so the controller's
// STOP_REPLICA with delete never reached it. A topic without an assignment
// (or a ZooKeeper that does not answer) leaves the files alone.
//
// Deviation: 0.8 leaves such stray replicas on disk (later Kafka versions
// find and delete them at startup only in KRaft mode). Here no stale copy
// of a moved partition stays behind.
func (m *Manager) dropUnassigned(zk *zkcoord.Conn) {
	for _, p := range m.partitions() {
		a, ok, err := zkcoord.ReplicationOn(zk).TopicAssignment(p.topic)
		if err != nil || !ok {
			continue
		}
		if containsBroker(a[p.partition], m.cfg.BrokerID) {
			continue
		}
		p.transition.Lock()
		p.mu.Lock()
		idle := p.lead == nil && p.fetch == nil
		p.mu.Unlock()
		if idle {
			m.log.Info("replica no longer assigned to this broker; deleting it", "partition", p.partKey.String(), "replicas", a[p.partition])
			m.deletePartition(p)
		}
		p.transition.Unlock()
	}
}

// suspendLeaders fences every partition this broker leads when it can no
// longer be sure it leads (rule 6): its ZooKeeper session expired, or its
// connection has been lost for zombieAfter (the server may expire the
// session meanwhile, and the controller elect another leader, without this
// broker learning of it until it reconnects). A zombie acknowledges
// nothing, acks=1 included.
//
// Deviation: 0.8 fences a leader only when its session expiry is reported
// (a reconnection), or when a conditional ISR write fails; a leader cut off
// from ZooKeeper goes on acknowledging acks=1 writes that a new leader
// discards. Here leadership is suspended a third of the session timeout
// after the connection is lost, so that it ends before the server can
// expire the session: the client notices silence after at most two thirds
// of the timeout.
func (m *Manager) suspendLeaders(reason string) {
	for _, p := range m.partitions() {
		m.suspend(p, reason)
	}
}

// suspend fences one partition's leadership, keeping it to resume if
// ZooKeeper still names this broker with the same epoch.
func (m *Manager) suspend(p *partition, reason string) {
	p.appending.Lock()
	defer p.appending.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lead != nil {
		m.log.Warn("no longer acknowledging as leader: "+reason, "partition", p.partKey.String(), "epoch", p.leaderEpoch)
		p.hw = p.lead.HW()
		p.lead.Fence()
		p.suspended, p.lead = p.lead, nil
		m.stats.suspensions.Add(1)
	}
}

// zombieAfter is how long a lost ZooKeeper connection is tolerated before
// leadership is suspended: a third of the session timeout.
func (m *Manager) zombieAfter() time.Duration {
	s := m.cfg.ZK.SessionTimeout
	if m.cfg.Session != nil {
		s = m.cfg.Session.SessionTimeout()
	}
	if s <= 0 {
		s = zkcoord.DefaultSessionTimeout
	}
	return s / 3
}

// checkSession suspends the leaderships once the connection to ZooKeeper
// has been lost for zombieAfter, and, once connected again, resumes those
// ZooKeeper still gives this broker.
//
// It also ties leadership to the broker's registration: while
// /brokers/ids/N is absent the controller counts this broker dead and may
// elect other leaders, so its leaderships stay suspended until the
// registration is back. On a session shared with the registration
// (Config.Session, rule 7) an expiry drops the registration and the
// leaderships together; this check keeps them apart on the way back: a
// new session resumes no leadership before the registration is written
// in it (a node of the expired session, not yet deleted, does not count),
// and a registration deleted by hand suspends them too.
func (m *Manager) checkSession(zk *zkcoord.Conn) {
	if lost := zk.DisconnectedSince(); !lost.IsZero() {
		if time.Since(lost) > m.zombieAfter() {
			m.suspendLeaders(fmt.Sprintf("ZooKeeper unreachable for %v", time.Since(lost).Round(time.Millisecond)))
		}
		return
	}
	owner, registered, err := zk.EphemeralOwner(zkcoord.BrokerPath(m.cfg.BrokerID))
	if err != nil {
		return // tried again at the next check
	}
	if m.cfg.Session != nil && owner != zk.SessionID() {
		registered = false
	}
	switch {
	case registered:
		m.sawRegistration = true
	case m.sawRegistration:
		m.suspendLeaders("this broker's registration is not in its ZooKeeper session")
		return
	}
	m.resumeLeaders(zk)
}

// newerEpochSeen handles a request carrying a leader epoch newer than this
// leader's (a follower already has a newer order): if ZooKeeper names
// another leader, this one is deposed and stops acknowledging at once
// (rule 6). If it names this broker, the newer order keeping its
// leadership (rule 8) is on its way.
func (m *Manager) newerEpochSeen(p *partition, epoch int32) {
	zk := m.zkConn()
	if zk == nil {
		return
	}
	st, _, ok, err := zkcoord.ReplicationOn(zk).PartitionStateOf(p.topic, p.partition)
	if err != nil || !ok || st.LeaderEpoch < epoch || st.Leader == m.cfg.BrokerID {
		return
	}
	m.suspend(p, fmt.Sprintf("a follower holds leader epoch %d, and ZooKeeper names broker %d", epoch, st.Leader))
}

// resumeLeaders, once connected with a session, takes back the leadership
// of partitions whose state in ZooKeeper still names this broker with the
// same leader epoch (no one was elected meanwhile); the others wait for the
// controller's order. A partition whose state cannot be read stays
// suspended, to be tried again at the next check.
func (m *Manager) resumeLeaders(zk *zkcoord.Conn) {
	for _, p := range m.partitions() {
		p.mu.Lock()
		pending := p.suspended != nil
		p.mu.Unlock()
		if !pending {
			continue
		}
		p.transition.Lock()
		p.mu.Lock()
		old, epoch := p.suspended, p.leaderEpoch
		p.mu.Unlock()
		if old != nil {
			st, version, ok, err := zkcoord.ReplicationOn(zk).PartitionStateOf(p.topic, p.partition)
			p.mu.Lock()
			switch {
			case err != nil:
				// Rule 5: retried at the next check, not dropped.
			case ok && st.Leader == m.cfg.BrokerID && st.LeaderEpoch == epoch && p.lead == nil && p.fetch == nil && p.suspended == old:
				leo := p.log.WrittenEnd()
				p.lead = NewLeaderState(LeaderConfig{ID: m.cfg.BrokerID, Replicas: p.replicas, ISR: st.ISR, Epoch: epoch,
					EpochStart: old.EpochStart(), LEO: leo, HW: p.hw, LagTime: m.cfg.LagTime, Now: m.cfg.Now()})
				p.zkVersion = version
				p.suspended = nil
				m.log.Info("ZooKeeper reachable again: still the leader", "partition", p.partKey.String(), "epoch", epoch)
			default:
				p.suspended = nil
			}
			p.mu.Unlock()
		}
		p.transition.Unlock()
	}
}

// checkpoint writes the high-watermark file of every partition whose HW
// moved.
//
// Deviation: 0.8's checkpointHighWatermarks halts the broker when the file
// cannot be written; here the failure is logged and the next interval tries
// again. An old checkpoint only makes a restarted replica start from a lower
// HW, and epoch truncation (the default) does not cut by it.
func (m *Manager) checkpoint() {
	for _, p := range m.partitions() {
		if err := p.checkpointHW(); err != nil {
			m.log.Error("high-watermark checkpoint", "partition", p.partKey.String(), "err", err)
		}
	}
}

// shrinkISRs drops followers that lag by time from the ISR of every
// partition this broker leads.
func (m *Manager) shrinkISRs() {
	now := m.cfg.Now()
	for _, p := range m.partitions() {
		lead := p.leaderState()
		if lead == nil {
			continue
		}
		lagging := lead.Lagging(now)
		if len(lagging) == 0 {
			continue
		}
		m.log.Info("shrinking ISR", "partition", p.partKey.String(), "lagging", lagging)
		m.writeISR(p, lead, func(cur []BrokerID) []BrokerID {
			return slices.DeleteFunc(cur, func(r BrokerID) bool { return slices.Contains(lagging, r) })
		})
	}
}

// writeISR writes a new ISR, change applied to the leader's current one,
// to the partition's state with a conditional write on the version this
// leader knows. The new ISR is computed under the same lock as the epoch
// and version it is written with, and only one write is in flight, so a
// write cannot undo one that completed meanwhile (rule 3: a shrink that
// finished cannot be reverted by an expansion computed before it). A write
// refused because someone else wrote the state fences the leader unless
// ZooKeeper still names it (the controller shrank the ISR in a new epoch
// that keeps it: its order is on the way).
func (m *Manager) writeISR(p *partition, lead *LeaderState, change func(cur []BrokerID) []BrokerID) {
	zk := m.zkConn()
	if zk == nil {
		lead.EndJoins()
		return
	}
	p.mu.Lock()
	if p.isrWriting {
		// The write under way ends the joins when it is done.
		p.mu.Unlock()
		return
	}
	if p.lead != lead {
		p.mu.Unlock()
		lead.EndJoins()
		return
	}
	isr := change(lead.ISR())
	if slices.Equal(isr, lead.ISR()) {
		p.mu.Unlock()
		lead.EndJoins()
		return
	}
	p.isrWriting = true
	st := zkcoord.PartitionState{ControllerEpoch: p.controllerEpoch, Leader: m.cfg.BrokerID, LeaderEpoch: p.leaderEpoch, ISR: isr}
	version := p.zkVersion
	p.mu.Unlock()
	v, err := zkcoord.ReplicationOn(zk).WritePartitionState(p.topic, p.partition, st, version)
	// A refused write fences the leader unless ZooKeeper still names it in
	// a newer epoch; read that before taking p.mu, which produces need.
	keptByController := false
	if errors.Is(err, zkcoord.ErrBadVersion) {
		now, _, ok, rerr := zkcoord.ReplicationOn(zk).PartitionStateOf(p.topic, p.partition)
		keptByController = rerr == nil && ok && now.Leader == m.cfg.BrokerID && now.LeaderEpoch > st.LeaderEpoch
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isrWriting = false
	// Whatever became of the write, no expansion is pending after it: an
	// adopted one is in the ISR (SetISR), the others are given up.
	defer lead.EndJoins()
	switch {
	case err == nil:
		if p.lead == lead {
			p.zkVersion = v
			if len(isr) < len(lead.ISR()) {
				m.stats.isrShrinks.Add(1)
			} else {
				m.stats.isrExpands.Add(1)
			}
			lead.SetISR(isr)
		}
	case keptByController:
		m.log.Info("ISR write refused: the controller wrote a newer epoch that keeps this leader", "partition", p.partKey.String())
	case errors.Is(err, zkcoord.ErrBadVersion):
		m.log.Warn("ISR write refused: a newer leader exists; fenced", "partition", p.partKey.String(), "epoch", st.LeaderEpoch)
		lead.Fence()
	default:
		m.log.Error("ISR write failed", "partition", p.partKey.String(), "err", err)
	}
}

// Handles reports the replication request types.
func (m *Manager) Handles(t wire.RequestType) bool { return t.IsReplication() }

// ProduceAllowed refuses a 0.7 PRODUCE to a replicated partition this
// broker does not lead.
func (m *Manager) ProduceAllowed(topic string, partition wire.Partition) error {
	p := m.partition(topic, partition)
	if p == nil {
		if m.isReplicated(topic) {
			return fmt.Errorf("replica: %s-%d: %w", topic, partition, wire.ErrNotLeaderForPartition)
		}
		return nil
	}
	if p.leaderState() == nil {
		return fmt.Errorf("replica: %s: %w", p.partKey, wire.ErrNotLeaderForPartition)
	}
	return nil
}

// Produced tells a replicated partition's leader state about a 0.7 append.
func (m *Manager) Produced(topic string, partition wire.Partition) {
	if p := m.partition(topic, partition); p != nil {
		p.appended()
	}
}

// OffsetsLimit answers OFFSETS of a replicated partition only on its leader,
// bounded at the high watermark (rule 2; 0.8's handleOffsetRequest for
// ordinary clients): a consumer that starts at "latest" must not start in
// bytes a failover may discard, nor learn offsets from a follower.
func (m *Manager) OffsetsLimit(topic string, partition wire.Partition) (wire.Offset, bool, error) {
	p := m.partition(topic, partition)
	if p == nil {
		if m.isReplicated(topic) {
			return 0, false, fmt.Errorf("replica: %s-%d: %w", topic, partition, wire.ErrNotLeaderForPartition)
		}
		return 0, false, nil
	}
	lead := p.leaderState()
	if lead == nil {
		return 0, false, fmt.Errorf("replica: %s: %w", p.partKey, wire.ErrNotLeaderForPartition)
	}
	return lead.HW(), true, nil
}

// FetchLimit bounds fetches of a replicated partition at its high watermark.
func (m *Manager) FetchLimit(topic string, partition wire.Partition) (wire.Offset, bool) {
	if p := m.partition(topic, partition); p != nil {
		return p.highWatermark(), true
	}
	return 0, false
}
