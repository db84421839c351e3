package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// HWFile is the name of a partition's high-watermark checkpoint, kept in its
// log directory.
//
// Deviation: 0.8 keeps one replication-offset-checkpoint file per log.dir
// for all partitions; one file per partition lives and dies with the
// partition's directory and needs no shared lock.
const HWFile = "high-watermark-checkpoint"

type partKey struct {
	topic     string
	partition wire.Partition
}

func (k partKey) String() string { return k.topic + "-" + strconv.Itoa(int(k.partition)) }

// partition is one replicated partition on this broker: its log, its
// leader-epoch file, and whether it leads (lead) or follows (fetch).
type partition struct {
	partKey
	log    *log.Log
	epochs *Epochs

	// transition serializes becoming leader, follower or stopped.
	transition sync.Mutex
	// appending makes the leader check and the append of a client's
	// messages one step with respect to a change of role (rule 3, 0.8's
	// leaderIsrUpdateLock): a produce holds it for reading from its
	// leader check to the end of its append, and a replica ceasing to
	// lead (becoming follower, stopped, suspended) holds it for writing
	// while it gives the role up, so that no append that passed the check
	// lands after the replica became a follower and truncated. Taken
	// before mu.
	appending sync.RWMutex

	mu              sync.Mutex
	leaderEpoch     int32 // -1 before the first LEADER_AND_ISR; guarded by mu
	leader          BrokerID
	replicas        []BrokerID
	controllerEpoch int32         // of the order that set the state; guarded by mu
	zkVersion       int32         // of the state node; guarded by mu
	lead            *LeaderState  // non-nil while leading; guarded by mu
	suspended       *LeaderState  // the leadership a session expiry suspended; guarded by mu
	hw              Offset        // the HW while following; guarded by mu
	checkpointed    Offset        // HW last written to HWFile; guarded by mu
	fetch           *fetcher      // non-nil while following; guarded by mu
	data            chan struct{} // closed (and set to nil) by the next append while leading; nil while no fetch waits; guarded by mu
	isrWriting      bool          // an ISR write is in flight; guarded by mu
	deleted         bool          // STOP_REPLICA deleted its files; guarded by mu
}

// openPartition opens the replication state of a log.
func openPartition(l *log.Log) (*partition, error) {
	e, err := OpenEpochs(filepath.Join(l.Dir(), EpochsFile))
	if err != nil {
		return nil, err
	}
	hw, err := readHW(filepath.Join(l.Dir(), HWFile))
	if err != nil {
		return nil, err
	}
	leo := l.WrittenEnd()
	hw = min(hw, leo)
	// Epochs starting beyond the log end lost their bytes in a crash.
	if err := e.TruncateFrom(leo + 1); err != nil {
		return nil, err
	}
	return &partition{partKey: partKey{l.Topic(), l.Partition()}, log: l, epochs: e,
		leaderEpoch: -1, leader: NoBroker, hw: hw, checkpointed: hw}, nil
}

func readHW(path string) (Offset, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("replica: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("replica: bad high-watermark checkpoint %s: %q", path, b)
	}
	return Offset(n), nil
}

// highWatermark is what consumers of this replica may see up to.
func (p *partition) highWatermark() Offset {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lead != nil {
		return p.lead.HW()
	}
	return p.hw
}

// appendHook, when set (by tests), is called by a produce between its
// leader check and its append, with appending held for reading.
var appendHook atomic.Pointer[func(topic string)]

// beginAppend checks that this replica leads and, if so, holds appending
// for reading until the returned release is called; nil means refused.
func (p *partition) beginAppend() (lead *LeaderState, release func()) {
	p.appending.RLock()
	if lead = p.leaderState(); lead == nil {
		p.appending.RUnlock()
		return nil, nil
	}
	if h := appendHook.Load(); h != nil {
		(*h)(p.topic)
	}
	return lead, p.appending.RUnlock
}

// leaderState returns the leader state while this replica leads unfenced.
func (p *partition) leaderState() *LeaderState {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lead == nil || p.lead.Fenced() {
		return nil
	}
	return p.lead
}

// appended tells the leader state and waiting replica fetches that the log
// grew. Only a fetch that found nothing new waits, so most appends under
// load make no channel.
func (p *partition) appended() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lead != nil {
		p.lead.Appended(p.log.WrittenEnd())
		if p.data != nil {
			close(p.data)
			p.data = nil
		}
	}
}

// dataWait returns a channel the next append closes (while leading).
func (p *partition) dataWait() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.data == nil {
		p.data = make(chan struct{})
	}
	return p.data
}

// setFollowerHW records the HW a follower learned, bounded by its log end.
func (p *partition) setFollowerHW(hw Offset) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hw = min(hw, p.log.WrittenEnd())
}

// checkpointHW writes the HW to HWFile if it moved since the last write.
// It holds transition, so that STOP_REPLICA cannot delete the directory
// under the write.
func (p *partition) checkpointHW() error {
	p.transition.Lock()
	defer p.transition.Unlock()
	hw := p.highWatermark()
	p.mu.Lock()
	same := hw == p.checkpointed || p.deleted
	p.mu.Unlock()
	if same {
		return nil
	}
	if err := writeFileAtomic(filepath.Join(p.log.Dir(), HWFile), []byte(strconv.FormatInt(int64(hw), 10)+"\n")); err != nil {
		return err
	}
	p.mu.Lock()
	p.checkpointed = hw
	p.mu.Unlock()
	return nil
}

// epochMarks returns the leader's epoch entries a follower needs for the
// bytes [from, to): the one covering from and those starting inside.
func (p *partition) epochMarks(from, to Offset) []wire.EpochMark {
	var out []wire.EpochMark
	for _, e := range p.epochs.Entries() {
		switch {
		case e.Start <= from:
			out = append(out[:0], wire.EpochMark{Epoch: e.Epoch, Start: e.Start})
		case e.Start < to:
			out = append(out, wire.EpochMark{Epoch: e.Epoch, Start: e.Start})
		}
	}
	return out
}

// isBoundary reports whether offset starts a message in l's written bytes
// (or is its end). With no index (paper §3.1) the log decides as its reads
// do: it decodes the message found at offset, checking its size, header and
// CRC (see log.Log.Read).
func isBoundary(l *log.Log, offset Offset) bool {
	r, err := l.ReadWritten(offset, 1)
	r.Release()
	return err == nil
}

func containsBroker(xs []BrokerID, id BrokerID) bool { return slices.Contains(xs, id) }
