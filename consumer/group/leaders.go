package group

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/zkcoord"
)

// leaderFetchers fetches the owned partitions of replicated topics as Kafka
// 0.8's consumer does (ConsumerFetcherManager): one fetcher per leader
// broker, on one connection to it, pulling all the partitions it leads in
// one MULTIFETCH (0.8's ConsumerFetcherThread, one per source broker), and
// a leader finder (0.8's LeaderFinderThread) that asks a broker for the
// partitions' leaders with METADATA and hands each partition to the fetcher
// of its leader. A fetcher gives its partitions back to the finder when the
// leader refuses one (NotLeaderForPartition, or a broker without the
// replica: WrongPartition), when its position is beyond the replica's end,
// and all of them when the connection fails; the finder looks again after
// refreshLeaderBackoff, as 0.8's refresh.leader.backoff.ms. A partition
// moves with its position (the next offset to fetch): below the high
// watermark every in-sync replica holds the same bytes at the same
// offsets, and a new leader comes from the ISR, so nothing is skipped and
// nothing read twice.
//
// The broker addresses to ask first come from the broker registry read at
// the rebalance; afterwards METADATA's list of live brokers; the registry
// is read again only when no known broker answers. A fetcher without
// partitions ends and closes its connection, so the consumer holds at most
// one connection per broker for its replicated partitions (the finder's
// METADATA requests ride on those connections).
//
// Deviation: 0.8's broker refuses a consumer's fetch from a follower, so a
// fetcher learns that a live leader was deposed from the refusal. This
// layer's broker serves 0.7 FETCH from any replica, up to that replica's
// high watermark; a fetcher whose fetch brought nothing asks METADATA
// (the answer is shared by the consumer's fetchers for leaderRecheck)
// whether its partitions' leaders moved. It replaces one ZooKeeper read per
// idle partition per second.
type leaderFetchers struct {
	c      *Consumer
	log    *slog.Logger
	topics []string // the replicated topics owned, asked about in METADATA
	ctx    context.Context
	wg     sync.WaitGroup
	wake   chan struct{} // capacity 1: a partition was handed to the finder

	mu       sync.Mutex
	addrs    []string                   // brokers to ask METADATA, known last; guarded by mu
	conns    map[string]*brokerConn     // per broker address; guarded by mu
	fetchers map[string]*leaderFetcher  // per leader address; guarded by mu
	lost     []*partitionState          // partitions waiting for the finder; guarded by mu
	md       *wire.MetadataResponse     // the last METADATA answer; guarded by mu
	mdAt     time.Time                  // when it came; guarded by mu
	where    map[*partitionState]string // the leader each partition is fetched from; guarded by mu
}

// refreshLeaderBackoff is 0.8's refresh.leader.backoff.ms: the finder's
// wait before looking again for leaders it did not find.
const refreshLeaderBackoff = 200 * time.Millisecond

// leaderRecheck bounds how often the fetchers of idle partitions ask
// METADATA whether their leaders moved (see leaderFetchers' Deviation):
// one request per consumer at most this often, which the broker answers
// with a ZooKeeper read per partition of the topics asked about.
const leaderRecheck = 5 * time.Second

// brokerConn is the consumer's one connection to a broker for replicated
// partitions, shared by the broker's fetcher and the leader finder.
type brokerConn struct {
	addr string
	mu   sync.Mutex // held for one request and the use of its answer
	b    Broker     // nil until the first request; guarded by mu
	shut bool       // closed for good; guarded by mu
}

// errConnClosed: the connection was closed (its fetcher ended) while the
// finder was about to use it.
var errConnClosed = errors.New("group: broker connection closed")

// do runs fn with the connection, opening it first if need be.
func (bc *brokerConn) do(c *Consumer, fn func(Broker) error) error {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.shut {
		return errConnClosed
	}
	if bc.b == nil {
		b, err := c.cfg.dialBroker(bc.addr, c.log)
		if err != nil {
			return err
		}
		bc.b = b
	}
	return fn(bc.b)
}

// close closes the connection for good.
func (bc *brokerConn) close(log *slog.Logger) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	bc.shut = true
	if bc.b != nil {
		if err := bc.b.Close(); err != nil {
			log.Warn("closing broker connection", "broker", bc.addr, "err", err)
		}
		bc.b = nil
	}
}

// startLeaderFetchers starts the finder for parts, the owned partitions of
// replicated topics; brokers is the registry as the rebalance read it.
// The fetchers run until ctx ends; wait for them with stop.
func (c *Consumer) startLeaderFetchers(ctx context.Context, parts []*partitionState, brokers map[wire.BrokerID]zkcoord.BrokerInfo) *leaderFetchers {
	l := &leaderFetchers{c: c, log: c.log, ctx: ctx, wake: make(chan struct{}, 1),
		conns: make(map[string]*brokerConn), fetchers: make(map[string]*leaderFetcher),
		lost: parts, where: make(map[*partitionState]string)}
	for _, ps := range parts {
		if !slices.Contains(l.topics, ps.topic) {
			l.topics = append(l.topics, ps.topic)
		}
	}
	slices.Sort(l.topics)
	l.setAddrs(brokers)
	l.wg.Add(1)
	go l.findLeaders()
	return l
}

// setAddrs replaces the brokers to ask with the registry's.
func (l *leaderFetchers) setAddrs(brokers map[wire.BrokerID]zkcoord.BrokerInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addrs = l.addrs[:0]
	for _, id := range slices.Sorted(maps.Keys(brokers)) {
		l.addrs = append(l.addrs, brokers[id].Addr())
	}
}

// stop waits for the finder and the fetchers (ctx ended) and closes the
// connections.
func (l *leaderFetchers) stop() {
	l.wg.Wait()
	l.mu.Lock()
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	for _, bc := range conns {
		bc.close(l.log)
	}
}

// fetchingFrom returns, for tests, the leader address each partition is
// fetched from now (topic -> partition -> address).
func (l *leaderFetchers) fetchingFrom() map[string]map[wire.Partition]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]map[wire.Partition]string)
	for ps, addr := range l.where {
		if out[ps.topic] == nil {
			out[ps.topic] = make(map[wire.Partition]string)
		}
		out[ps.topic][ps.bp.Partition] = addr
	}
	return out
}

// openConns returns, for tests, the addresses of the open connections.
func (l *leaderFetchers) openConns() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.conns))
}

// handBack gives partitions back to the finder (0.8's
// addPartitionsWithError).
func (l *leaderFetchers) handBack(ps ...*partitionState) {
	if len(ps) == 0 {
		return
	}
	l.mu.Lock()
	for _, p := range ps {
		delete(l.where, p)
	}
	l.lost = append(l.lost, ps...)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// findLeaders is the leader finder (0.8's LeaderFinderThread): it waits
// for lost partitions, asks METADATA for their leaders, hands each to its
// leader's fetcher, and waits refreshLeaderBackoff before the next lookup.
func (l *leaderFetchers) findLeaders() {
	defer l.wg.Done()
	var warned quietWarner
	for {
		l.mu.Lock()
		lost := l.lost
		l.lost = nil
		l.mu.Unlock()
		if len(lost) == 0 {
			select {
			case <-l.wake:
				continue
			case <-l.ctx.Done():
				return
			}
		}
		md, err := l.metadata(0, nil)
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			warned.warn(l.log, "no broker answered METADATA; looking again", "partitions", len(lost), "err", err)
			l.handBack(lost...)
		} else {
			var still []*partitionState
			for _, ps := range lost {
				id, addr, err := consumer.LeaderAddr(md, ps.topic, ps.bp.Partition)
				if err != nil {
					warned.warn(l.log, "no leader to fetch from; looking again", "topic", ps.topic,
						"partition", ps.bp.Partition, "err", err)
					still = append(still, ps)
					continue
				}
				l.log.Info("fetching from the leader", "topic", ps.topic, "partition", ps.bp.Partition,
					"leader", id, "broker", addr, "offset", ps.fetched.Load())
				l.assign(ps, addr)
			}
			if len(still) == 0 {
				warned.ok(l.log, "found every leader")
			}
			l.handBack(still...)
		}
		if !l.c.pause(l.ctx, refreshLeaderBackoff) {
			return
		}
	}
}

// assign adds ps to the fetcher of the broker at addr, starting it if need be
// (0.8's addFetcher).
func (l *leaderFetchers) assign(ps *partitionState, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.where[ps] = addr
	if f := l.fetchers[addr]; f != nil {
		f.parts = append(f.parts, ps)
		return
	}
	f := &leaderFetcher{l: l, bc: l.connLocked(addr), parts: []*partitionState{ps}}
	l.fetchers[addr] = f
	l.wg.Add(1)
	go f.run()
}

// closeSpare closes the connections no fetcher uses but keep: the finder
// keeps at most the one that answered it last.
func (l *leaderFetchers) closeSpare(keep *brokerConn) {
	var spare []*brokerConn
	l.mu.Lock()
	for addr, bc := range l.conns {
		if bc != keep && l.fetchers[addr] == nil {
			delete(l.conns, addr)
			spare = append(spare, bc)
		}
	}
	l.mu.Unlock()
	for _, bc := range spare {
		bc.close(l.log)
	}
}

// closeIfSpare closes bc, which failed, unless a fetcher uses it (the
// fetcher finds out itself).
func (l *leaderFetchers) closeIfSpare(bc *brokerConn) {
	l.mu.Lock()
	spare := l.fetchers[bc.addr] == nil && l.conns[bc.addr] == bc
	if spare {
		delete(l.conns, bc.addr)
	}
	l.mu.Unlock()
	if spare {
		bc.close(l.log)
	}
}

// connLocked returns the connection to addr, making it if need be.
func (l *leaderFetchers) connLocked(addr string) *brokerConn {
	bc := l.conns[addr]
	if bc == nil {
		bc = &brokerConn{addr: addr}
		l.conns[addr] = bc
	}
	return bc
}

// metadata returns a METADATA answer about the owned replicated topics no
// older than maxAge: the last one, or a new one asked on via (when not nil,
// the caller's connection) or on any known broker's connection. The broker
// list of the answer becomes the brokers to ask next time; when none
// answers, the registry is read again.
func (l *leaderFetchers) metadata(maxAge time.Duration, via *brokerConn) (*wire.MetadataResponse, error) {
	l.mu.Lock()
	if l.md != nil && maxAge > 0 && time.Since(l.mdAt) < maxAge {
		md := l.md
		l.mu.Unlock()
		return md, nil
	}
	var try []*brokerConn
	if via != nil {
		try = append(try, via)
	} else {
		for _, addr := range slices.Sorted(maps.Keys(l.conns)) { // open connections first
			try = append(try, l.conns[addr])
		}
		for _, addr := range l.addrs {
			if _, ok := l.conns[addr]; !ok && l.conns != nil {
				try = append(try, l.connLocked(addr))
			}
		}
	}
	l.mu.Unlock()
	var errs []error
	for _, bc := range try {
		var md *wire.MetadataResponse
		err := bc.do(l.c, func(b Broker) (err error) {
			md, err = b.Metadata(l.ctx, l.topics...)
			return err
		})
		if err != nil {
			errs = append(errs, err)
			l.closeIfSpare(bc)
			if l.ctx.Err() != nil {
				break
			}
			continue
		}
		l.mu.Lock()
		l.md, l.mdAt = md, time.Now()
		if len(md.Brokers) > 0 {
			l.addrs = l.addrs[:0]
			for _, b := range md.Brokers {
				l.addrs = append(l.addrs, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
			}
		}
		l.mu.Unlock()
		l.closeSpare(bc)
		return md, nil
	}
	if via == nil && l.ctx.Err() == nil {
		if brokers, err := zkcoord.RegistryOn(l.c.conn).Brokers(false); err == nil {
			l.setAddrs(brokers)
		} else {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		// Nobody was asked (no connection, no known broker): an error,
		// never a nil answer (the fault suite's lose-tail-all, with every
		// broker down, crashed on one).
		errs = append(errs, errNoBrokerToAsk)
	}
	return nil, errors.Join(errs...)
}

// errNoBrokerToAsk: METADATA had no broker to go to; the registry's list
// is read again for the next attempt.
var errNoBrokerToAsk = errors.New("group: no broker to ask for METADATA")
