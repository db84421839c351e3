package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/experiments/faults/check"
	"github.com/netdb11/kafka/experiments/kit"
)

// adminPort is where every broker of a replicated trial serves its admin
// endpoint (metrics.listen): the nemeses read each replica's flushed end
// there.
const adminPort = 9100

// adminFlushed is the flushed end of p on broker b, as b's admin endpoint
// reports it (broker/admin.Info.FlushedOffset). Unlike OFFSETS it answers on
// a follower too, and whatever OFFSETS promises clients.
func (t *trial) adminFlushed(ctx context.Context, b int, p partition) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{
		DialContext:       func(ctx context.Context, _, addr string) (net.Conn, error) { return t.cl.Dial(ctx, addr) },
		DisableKeepAlives: true,
	}}
	url := fmt.Sprintf("http://%s/admin/partitions/%s/%d", net.JoinHostPort(t.cl.Addr(brokerHost(b)), strconv.Itoa(adminPort)), p.topic, p.part)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("faults: %s: %s", url, resp.Status)
	}
	var info admin.Info
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return 0, fmt.Errorf("faults: %s: %w", url, err)
	}
	return int64(info.FlushedOffset), nil
}

// loseTails is a power loss on brokers at once: each one's flushed end of
// every partition it holds is read, then every one of them is SIGKILLed
// and its partitions' logs cut back to those ends (the disk loses what was
// not fsynced), before any of them can restart. The cuts go into the
// history (check.TypeCut); a partition whose every in-sync replica was
// cut is marked Everywhere: what none of them had flushed is not promised. The
// brokers stay down until healed. A broker already down (another fault
// of a compound schedule) is left as it is: its flushed end is unknown.
// In the 2011 system the flush point is
// what OFFSETS shows, read while the workload's readers wait, so that no
// reader learns of a flush between the reading and the kill.
func (t *trial) loseTails(ctx context.Context, f Fault, brokers []int) (heal func(context.Context) error, err error) {
	cl := t.cl
	heal = func(ctx context.Context) error {
		var errs []error
		for _, b := range brokers {
			errs = append(errs, cl.StartBroker(ctx, b))
		}
		return errors.Join(errs...)
	}
	type key struct {
		b int
		p partition
	}
	points := map[key]int64{}
	// isr holds the in-sync replicas of each replicated partition when the
	// strike comes: what safe promises rests on one of them keeping its
	// log (a replica out of the ISR cannot be elected cleanly, and a down
	// one holds nothing acknowledged after it left).
	isr := map[partition][]int{}
	// Which brokers are up is read under the gate, which an overlapping
	// power loss holds from its first read to its last kill: read before,
	// a broker it was killing looked up, and reading its flushed end
	// failed this whole strike (the replay of the soak's seed 351).
	t.w.gate.Lock()
	var up []int
	for _, b := range brokers {
		if cl.Running(b) {
			up = append(up, b)
		} else {
			t.note("%s: broker%d is down already: its tail is left as it is", f, b)
		}
	}
	if len(up) == 0 {
		t.w.gate.Unlock()
		return heal, noTarget(fmt.Errorf("faults: %s: every broker it strikes is down already", f.Kind))
	}
	brokers = up
	gone := map[int]bool{}
	for _, p := range t.w.parts {
		if p.broker != 0 {
			if !slices.Contains(brokers, p.broker) {
				continue
			}
			end, err := t.flushPoint(ctx, p.broker, p)
			if err != nil {
				t.w.gate.Unlock()
				return heal, noTarget(err)
			}
			points[key{p.broker, p}] = end
			continue
		}
		pm, err := cl.PartitionInfo(ctx, p.topic, p.part)
		if err != nil {
			t.w.gate.Unlock()
			return heal, err
		}
		for _, r := range pm.ISR {
			isr[p] = append(isr[p], int(r))
		}
		for _, r := range pm.Replicas {
			if !slices.Contains(brokers, int(r)) {
				continue
			}
			end, err := t.adminFlushed(ctx, int(r), p)
			if err != nil && !cl.Running(int(r)) {
				// Another fault (a kill) took it meanwhile: left as it is.
				t.note("%s: broker%d went down while its flushed ends were read: its tail is left as it is", f, r)
				gone[int(r)] = true
				continue
			}
			if err != nil {
				t.w.gate.Unlock()
				// Running, but not answering (starting, cut off):
				// its flushed end is unknown, nothing to cut to.
				return heal, noTarget(fmt.Errorf("faults: flushed end of %s on broker%d: %w", p.tp, r, err))
			}
			points[key{int(r), p}] = end
		}
	}
	brokers = slices.DeleteFunc(brokers, func(b int) bool { return gone[b] })
	maps.DeleteFunc(points, func(k key, _ int64) bool { return gone[k.b] })
	if len(brokers) == 0 {
		t.w.gate.Unlock()
		return heal, noTarget(fmt.Errorf("faults: %s: every broker it strikes went down before it struck", f.Kind))
	}
	struck := time.Now()
	// No restart (another fault's heal) between a kill and its cut: the
	// log must not be open while it is cut.
	cl.startMu.Lock()
	defer cl.startMu.Unlock()
	for _, b := range brokers {
		if err := cl.StopBroker(ctx, b, true); err != nil {
			t.w.gate.Unlock()
			return heal, err
		}
	}
	struckAll := t.struck(brokers)
	// Until now the brokers not yet killed went on acknowledging: the
	// checker promises nothing acknowledged before this moment above the
	// floor (check.TypeCut's End).
	dead := time.Now()
	t.w.gate.Unlock()
	for k, end := range points {
		cut, err := truncateTo(partitionDir(cl.BrokerDir(k.b), k.p.topic, k.p.part), end)
		if err != nil {
			return heal, err
		}
		// Everywhere: every member of the ISR has lost its unflushed
		// tail, in this strike or in an earlier one that left it down (the
		// soak's seed 351: the leader 0.15 s before the two others, still
		// in the ISR because its session had not expired). A replica down
		// for another reason kept its log.
		everywhere := len(isr[k.p]) > 0
		for _, h := range isr[k.p] {
			everywhere = everywhere && slices.Contains(struckAll, h)
		}
		t.cut(check.Event{Type: check.TypeCut, Name: f.Kind, Target: brokerHost(k.b), Broker: int32(k.b),
			Topic: k.p.tp.Topic, Partition: k.p.tp.Partition, Offset: end, Start: struck, End: dead, Everywhere: everywhere})
		t.note("%s: cut %s on broker%d to its flush point %d (%d bytes lost)", f, k.p.tp, k.b, end, cut)
	}
	return heal, nil
}

// struck records a power loss of brokers, just killed, and returns them
// with those an earlier power loss left down: each of those lost its tail
// and has not restarted since (no other process started in its place).
func (t *trial) struck(brokers []int) []int {
	all := slices.Clone(brokers)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.powerLost == nil {
		t.powerLost = map[int]*kit.Proc{}
	}
	for b, p := range t.powerLost {
		if !slices.Contains(brokers, b) && p == t.cl.process(b) && !t.cl.Running(b) {
			all = append(all, b)
		}
	}
	for _, b := range brokers {
		t.powerLost[b] = t.cl.process(b)
	}
	slices.Sort(all)
	return all
}

// cut records a lost tail for the history.
func (t *trial) cut(e check.Event) {
	e.Wall, e.StartMono, e.Mono = time.Now(), e.Start.Sub(t.start).Nanoseconds(), e.End.Sub(t.start).Nanoseconds()
	t.mu.Lock()
	t.cuts = append(t.cuts, e)
	t.mu.Unlock()
}

// loseTailRejoin applies the LoseTailRejoin nemesis to partition 0, whose
// leader is f.Broker: issue 21's rule 1. Follower F (drawn from the seed)
// loses its unflushed tail (power loss: SIGKILL, logs cut to their flushed
// ends) and is restarted at once, with its connections to the leader's port
// dropped (iptables in F's host; the controller still reaches F) so that
// it cannot fetch back what it lost; once F is told to follow again (its
// old ZooKeeper registration expired, it registered anew) and while it is
// still in the leader's ISR by the leader's lag timer
// (replica.lag.time.max.ms, 8 s here, longer than F's absence), the leader
// and the other follower G are SIGKILLed. A controller that moves a dead
// broker's replicas out of every ISR (0.8, TLA+ ControllerShrinkIsr) has
// removed F when its session expired, so nothing is elected until the
// leader or G returns; one that leaves that to the leader's lag timer
// elects F, and the others truncate to F: every acknowledged write F had
// not flushed is lost. Healed: F's rules removed, the leader and G
// restarted.
func (t *trial) loseTailRejoin(ctx context.Context, f Fault) (heal func(context.Context) error, err error) {
	cl := t.cl
	leader := f.Broker
	fb, gb, err := t.pickFollowers(ctx, f)
	if err != nil {
		return nil, err
	}
	fHost := brokerHost(fb)
	fw := cl.firewall()
	heal = func(ctx context.Context) error {
		return errors.Join(fw.Heal(ctx), cl.StartBroker(ctx, leader), cl.StartBroker(ctx, gb), cl.StartBroker(ctx, fb))
	}
	part := "partition=" + topic + "-0"
	following := countLines(cl.logPath(fHost), "msg=following", part)
	killedAt := time.Now()
	if _, err := t.loseTails(ctx, f, []int{fb}); err != nil {
		return heal, err
	}
	for _, port := range []int{brokerPort, replicaPort} {
		if err := fw.BlockPort(ctx, fHost, brokerHost(leader), port); err != nil {
			return heal, err
		}
	}
	if err := cl.StartBroker(ctx, fb); err != nil {
		return heal, err
	}
	// F registers once its old session has expired; the controller then
	// tells it to follow. Never past three quarters of the lag time since
	// F died: F must still be in the leader's ISR by the lag timer.
	deadline := killedAt.Add(t.cfg.LagTime * 3 / 4)
	ordered := false
	for time.Now().Before(deadline) {
		if countLines(cl.logPath(fHost), "msg=following", part) > following {
			ordered = true
			break
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return heal, err
		}
	}
	isr := "unknown"
	if pm, err := cl.partitionInfoFrom(ctx, leader, topic, 0); err == nil {
		isr = fmt.Sprint(pm.ISR)
	}
	for _, b := range []int{leader, gb} {
		if err := cl.StopBroker(ctx, b, true); err != nil {
			return heal, err
		}
	}
	t.note("%s: broker%d (F) lost its unflushed tail and was restarted without a way to the leader's port; F told to follow: %t; ISR %s; leader and broker%d (G) killed %v after F",
		f, fb, ordered, isr, gb, time.Since(killedAt).Round(time.Millisecond))
	return heal, nil
}
