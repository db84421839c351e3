package faults

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/experiments/faults/check"
)

// Retention nemeses (issue 23): a follower is down while the leader's
// retention deletes the head of the log, so that the follower comes back
// with a log that ends below the leader's log start (issue 21 rule 4: it
// must start over there, not fetch forever at an offset the leader no
// longer has). They strike a topic of their own (retainedTopic, one
// partition, RF=3), written by a producer of their own, so that what
// retention deletes is not counted as lost by the checker; the workload
// runs beside it as usual. At the end the retained partition's replicas
// are compared (check.TypeReplica events: diverged when they differ or one
// ends short).
const (
	// RetentionJump moves the modification times of the leader's segments
	// two hours back (a forward clock jump as retention sees it;
	// topic.log.retention.hours=retained:1), again every half second, while
	// the follower is down, until the leader's retention has deleted past
	// the follower's end; then the follower is restarted.
	RetentionJump = "retention-jump"
	// RetentionSize is the same with retention by size
	// (log.retention.size): while the follower is down the producer writes
	// as fast as it can until the leader's log outgrows the follower's end
	// by the limit, and the leader's retention deletes the oldest segments.
	RetentionSize = "retention-size"
)

var retentionNemeses = []string{RetentionJump, RetentionSize}

const (
	retainedTopic = "retained"
	// retentionSegment is log.file.size in trials with a retention
	// nemesis: small, so that retention has segments to delete.
	retentionSegment = 4 << 20
	// retentionLimit is log.retention.size there: above what a workload
	// partition writes in a 90 s trial (about 50 MB; a longer compound
	// trial's is held below it, retentionBudget), below what the retained
	// topic's fast producer writes.
	retentionLimit = 96 << 20
	// retentionBudget is what the workload's producers may send to one
	// partition there (workload.budget): the limit less two segments, so
	// that retention (which deletes whole segments of a log above the
	// limit) never touches the workload's topic, however long the trial.
	retentionBudget = retentionLimit - 2*retentionSegment
	// retentionLength is the run of a trial with a retention nemesis: the
	// brokers apply retention every log.cleanup.interval.mins (1 min at
	// least), first a minute after they start.
	retentionLength = 90 * time.Second
)

// strikesWith reports whether cfg's trial strikes with one of kinds: its
// nemesis, or one of its compound schedule's.
func strikesWith(cfg TrialConfig, kinds []string) bool {
	if slices.Contains(kinds, cfg.Nemesis) {
		return true
	}
	if cfg.Nemesis != Compound {
		return false
	}
	for _, f := range ScheduleCompound(cfg.Seed, cfg.Setup, cfg.Brokers, cfg.ZooKeeper == ZKEnsemble, cfg.stretch) {
		if slices.Contains(kinds, f.Kind) {
			return true
		}
	}
	return false
}

// retentionProps are the brokers' keys in a trial with a retention nemesis.
func retentionProps() map[string]string {
	return map[string]string{
		"log.file.size":             strconv.Itoa(retentionSegment),
		"log.cleanup.interval.mins": "1",
		"topic.log.retention.hours": retainedTopic + ":1",
		"log.retention.size":        strconv.Itoa(retentionLimit),
	}
}

// retained is the retained topic's producer.
type retained struct {
	fast   atomic.Bool // write as fast as acknowledged (a follower is down)
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sent   atomic.Int64 // bytes acknowledged
}

// startRetained creates the retained topic and starts its producer: slow
// (64 KB every 100 ms), fast while RetentionSize needs it (1 MB batches,
// no pause).
func (t *trial) startRetained(ctx context.Context) error {
	if err := t.cl.CreateTopic(ctx, retainedTopic, 1, t.setup.RF); err != nil {
		return err
	}
	if err := t.cl.WaitHealthy(ctx, retainedTopic, 1, time.Minute); err != nil {
		return err
	}
	r := &retained{}
	pctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	t.ret = r
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		slow := wire.NewMessageSet(slices.Repeat([][]byte{make([]byte, 4<<10)}, 16)...)
		fast := wire.NewMessageSet(slices.Repeat([][]byte{make([]byte, 16<<10)}, 64)...)
		var c *conn
		defer func() {
			if c != nil {
				c.Close()
			}
		}()
		for pctx.Err() == nil {
			if c == nil {
				b, err := t.cl.Leader(pctx, retainedTopic, 0)
				if err == nil {
					c, err = newConn(pctx, t.cl.Dial, t.cl.BrokerAddr(b), 2*time.Second)
				}
				if err != nil {
					c = nil
					sleep(pctx, 200*time.Millisecond)
					continue
				}
			}
			set := slow
			if r.fast.Load() {
				set = fast
			}
			code, _, err := c.produceAcks(t.setup.wireAcks(), 2*time.Second, retainedTopic, 0, set)
			switch {
			case err != nil || code != wire.CodeNone:
				if c != nil {
					c.Close()
				}
				c = nil
				sleep(pctx, 100*time.Millisecond)
			case !r.fast.Load():
				r.sent.Add(int64(len(set)))
				sleep(pctx, 100*time.Millisecond)
			default:
				r.sent.Add(int64(len(set)))
			}
		}
	}()
	return nil
}

// retention applies RetentionJump or RetentionSize to the retained topic:
// a follower F (drawn from the seed) is SIGKILLed, then the leader's
// retention is made to delete past F's end; healed by restarting F.
func (t *trial) retention(ctx context.Context, f Fault) (heal func(context.Context) error, err error) {
	cl := t.cl
	if t.ret == nil {
		return nil, errors.New("faults: no retained topic in this trial")
	}
	pm, err := cl.PartitionInfo(ctx, retainedTopic, 0)
	if err != nil {
		return nil, err
	}
	leader := int(pm.Leader)
	var fs []int
	for _, r := range pm.Replicas {
		if int(r) != leader && cl.Running(int(r)) {
			fs = append(fs, int(r))
		}
	}
	if leader <= 0 || len(fs) == 0 {
		return nil, noTarget(fmt.Errorf("faults: %s-0 has leader %d and no live follower", retainedTopic, leader))
	}
	slices.Sort(fs)
	fb := fs[int(t.cfg.Seed)%len(fs)]
	heal = func(ctx context.Context) error { t.ret.fast.Store(false); return cl.StartBroker(ctx, fb) }
	if err := cl.StopBroker(ctx, fb, true); err != nil {
		return heal, err
	}
	fEnd, err := logEnd(partitionDir(cl.BrokerDir(fb), retainedTopic, 0))
	if err != nil {
		return heal, err
	}
	// Retention by size deletes down to retentionLimit: the leader's log
	// must outgrow F's end by that, and two segments more.
	t.ret.fast.Store(f.Kind == RetentionSize)
	down := time.Now()
	deadline := t.start.Add(t.cfg.Length - 15*time.Second)
	ldir := partitionDir(cl.BrokerDir(leader), retainedTopic, 0)
	for time.Now().Before(deadline) {
		if f.Kind == RetentionJump {
			if err := backdate(ldir, 2*time.Hour); err != nil {
				return heal, err
			}
		}
		var ap admin.Partition
		if err := t.adminGet(ctx, leader, retainedTopic, 0, &ap); err == nil {
			if int64(ap.EndOffset-ap.StartOffset) > fEnd+retentionLimit+2*retentionSegment {
				t.ret.fast.Store(false)
			}
			if int64(ap.StartOffset) > fEnd {
				t.note("%s: broker%d (F) of %s-0 down at log end %d; the leader broker%d's retention moved its log start to %d after %v",
					f, fb, retainedTopic, fEnd, leader, ap.StartOffset, time.Since(down).Round(time.Millisecond))
				return heal, nil
			}
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return heal, err
		}
	}
	t.note("%s: broker%d (F) of %s-0 down at log end %d; the leader broker%d's retention did not pass it in %v (retention runs once a minute)",
		f, fb, retainedTopic, fEnd, leader, time.Since(down).Round(time.Millisecond))
	return heal, nil
}

// finishRetained stops the retained topic's producer, waits for its
// replicas to be in sync and returns one replica event per replica: the
// hash of its bytes from the highest log start among them to the leader's
// high watermark (diverged when they differ, or a replica ends short). A
// partition that does not get its ISR back makes the trial invalid.
func (t *trial) finishRetained(ctx context.Context) []check.Event {
	if t.ret == nil {
		return nil
	}
	t.ret.cancel()
	t.ret.wg.Wait()
	cl := t.cl
	if err := cl.WaitHealthy(ctx, retainedTopic, 1, time.Minute); err != nil {
		return []check.Event{{Type: check.TypeInvalid, Error: fmt.Sprintf("%s-0 not in sync a minute after the faults: %v", retainedTopic, err)}}
	}
	pm, err := cl.PartitionInfo(ctx, retainedTopic, 0)
	if err != nil {
		return []check.Event{{Type: check.TypeInvalid, Error: err.Error()}}
	}
	var ap admin.Partition
	if err := t.adminGet(ctx, int(pm.Leader), retainedTopic, 0, &ap); err != nil || ap.Replication == nil {
		return []check.Event{{Type: check.TypeInvalid, Error: fmt.Sprintf("%s-0's high watermark: %v", retainedTopic, err)}}
	}
	hw := int64(ap.Replication.HighWatermark)
	// The leader's retention may delete the segment a hash is reading
	// (retention runs while the replicas are hashed): a replica that
	// fails while the highest log start moved past from is hashed again
	// from the new start. Only a replica that ends short of hw, or
	// differs, with every log start where it was, is reported.
	var evs []check.Event
	var from int64
	for attempt := 0; attempt < 3; attempt++ {
		from = t.retainedStart(pm.Replicas)
		evs = evs[:0]
		failed := false
		for _, r := range pm.Replicas {
			sum, held, err := hashRange(partitionDir(cl.BrokerDir(int(r)), retainedTopic, 0), from, hw)
			e := check.Event{Type: check.TypeReplica, Topic: retainedTopic, Partition: 0, Broker: int32(r), HW: hw, SHA256: sum}
			if err != nil {
				e.SHA256, e.Held = "", held
				failed = true
			}
			evs = append(evs, e)
		}
		if !failed || t.retainedStart(pm.Replicas) == from {
			break
		}
		t.note("%s-0: a log start moved past %d while the replicas were hashed (retention); hashing again", retainedTopic, from)
	}
	t.note("%s-0: %d MB acknowledged; replicas compared over [%d, %d)", retainedTopic, t.ret.sent.Load()>>20, from, hw)
	return evs
}

// retainedStart is the highest log start among the retained topic's
// replicas, as their segment files show it now.
func (t *trial) retainedStart(replicas []wire.BrokerID) int64 {
	from := int64(0)
	for _, r := range replicas {
		if segs, err := segments(partitionDir(t.cl.BrokerDir(int(r)), retainedTopic, 0)); err == nil && len(segs) > 0 {
			from = max(from, segs[0].start)
		}
	}
	return from
}

// logEnd is the end of a partition directory's log: its last segment's
// start plus its size (0 for no log).
func logEnd(dir string) (int64, error) {
	segs, err := segments(dir)
	if errors.Is(err, os.ErrNotExist) || len(segs) == 0 {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	last := segs[len(segs)-1]
	return last.start + last.size, nil
}

// backdate moves the modification time of every segment file in dir back
// by d.
func backdate(dir string, d time.Duration) error {
	segs, err := segments(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a segment deleted while listed: the next round
	}
	if err != nil {
		return err
	}
	at := time.Now().Add(-d)
	for _, s := range segs {
		if err := os.Chtimes(s.path, at, at); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// hashRange is the sha256 of a partition's log bytes [from, to), or an
// error and how far the log reaches when it ends before to (or starts
// after from).
func hashRange(dir string, from, to int64) (string, int64, error) {
	segs, err := segments(dir)
	if err != nil {
		return "", 0, err
	}
	h := sha256.New()
	n := from
	for _, s := range segs {
		if n >= to {
			break
		}
		if s.start+s.size <= n {
			continue
		}
		if s.start > n {
			return "", n, fmt.Errorf("faults: %s: a gap at %d", dir, n)
		}
		fh, err := os.Open(s.path)
		if err != nil {
			return "", n, err
		}
		m, err := io.Copy(h, io.NewSectionReader(fh, n-s.start, min(to, s.start+s.size)-n))
		fh.Close()
		n += m
		if err != nil {
			return "", n, err
		}
	}
	if n < to {
		return "", n, &shortError{dir, n, to}
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// adminGet decodes broker b's /admin/partitions/{topic}/{part} into v.
func (t *trial) adminGet(ctx context.Context, b int, topic string, part int32, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{
		DialContext:       func(ctx context.Context, _, addr string) (net.Conn, error) { return t.cl.Dial(ctx, addr) },
		DisableKeepAlives: true,
	}}
	url := fmt.Sprintf("http://%s/admin/partitions/%s/%d", net.JoinHostPort(t.cl.Addr(brokerHost(b)), strconv.Itoa(adminPort)), topic, part)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("faults: %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
