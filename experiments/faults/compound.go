package faults

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// compoundWarm is how long a compound trial's workload runs before its
// first fault and after its last one ends.
const compoundWarm = 4 * time.Second

// compoundPool are the nemeses a compound schedule draws from for setup:
// every single nemesis that applies to it (the ensemble's only with it).
func compoundPool(setup string, ensemble bool) []string {
	var pool []string
	for _, n := range Nemeses {
		if n != None && n != Compound && applies(setup, n) && (ensemble || !NeedsEnsemble(n)) {
			pool = append(pool, n)
		}
	}
	return pool
}

// ScheduleCompound draws a compound trial's faults from its seed (Jepsen's
// combined nemesis): 2 to 4 faults, each of a kind drawn from the single
// nemeses that apply to setup (with ensemble, the ZooKeeper ensemble's
// too), on a broker and role drawn as Schedule draws them, lasting
// lengthOf(kind). The first strikes after
// compoundWarm; each next one either overlaps the one before (it strikes
// while that one lasts) or follows it (up to 2 s after it ends), a coin
// toss each. The same seed gives the same schedule.
func ScheduleCompound(seed int64, setup string, brokers int, ensemble bool, lengthOf func(kind string) time.Duration) []Fault {
	r := rand.New(rand.NewPCG(uint64(seed), 0x636f6d706f756e64))
	pool := compoundPool(setup, ensemble)
	n := 2 + r.IntN(3)
	var fs []Fault
	at := compoundWarm
	for i := range n {
		kind := pool[r.IntN(len(pool))]
		b, role := target(kind, 1+r.IntN(brokers), []string{RoleLeader, RoleFollower, RoleController}[r.IntN(3)])
		d := lengthOf(kind)
		if i > 0 {
			prev := fs[i-1]
			if r.IntN(2) == 0 {
				at = prev.At + time.Duration(r.Int64N(int64(prev.For)))
			} else {
				at = prev.At + prev.For + time.Duration(r.Int64N(int64(2*time.Second)))
			}
		}
		fs = append(fs, Fault{Kind: kind, Broker: b, Role: role, At: at, For: d})
	}
	return fs
}

// runOverlapping runs each fault on its own: applied at its time, healed
// after its duration, whatever the others do, so that faults overlap as
// scheduled. Whatever is still broken when ctx ends is healed then. The
// windows come back in the order the faults struck.
func (t *trial) runOverlapping(ctx context.Context, faults []Fault) []Window {
	var (
		mu sync.Mutex
		ws []Window
		wg sync.WaitGroup
	)
	for _, f := range faults {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, ok := t.runFault(ctx, f)
			if ok {
				mu.Lock()
				ws = append(ws, w)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(ws, func(a, b Window) int { return int(min(max(a.Start-b.Start, -1), 1)) })
	return ws
}

// runFaults applies each fault at its time and heals it after its
// duration, one after the other; whatever is still broken when ctx ends is
// healed then.
func (t *trial) runFaults(ctx context.Context, faults []Fault) []Window {
	var ws []Window
	for _, f := range faults {
		w, ok := t.runFault(ctx, f)
		if !ok {
			break
		}
		ws = append(ws, w)
	}
	return ws
}

// notStruck reports whether err, from resolving or applying a fault, is
// the harness failing to act (Window.Failed): neither a fault that found
// nothing to strike (errNoTarget) nor one the trial's end cut short.
func notStruck(ctx context.Context, err error) bool {
	return !errors.Is(err, errNoTarget) && ctx.Err() == nil
}

// runFault waits for f's time, applies it, waits its duration and heals
// it; false when ctx ended before it struck.
func (t *trial) runFault(ctx context.Context, f Fault) (Window, bool) {
	if sleep(ctx, time.Until(t.start.Add(f.At))) != nil {
		return Window{}, false
	}
	w := Window{Fault: f}
	b, err := t.resolve(ctx, f)
	if err == nil && f.Kind == ZKCutBroker {
		b = t.notController(b)
	}
	w.Start = time.Since(t.start)
	if err != nil {
		w.Err, w.Failed = err.Error(), notStruck(ctx, err)
		w.End = w.Start
		t.note("%s: %v", f, err)
		return w, true
	}
	f.Broker, w.Broker = b, b
	if !t.setup.Replicated() {
		f.Role, w.Role = "", ""
	}
	heal, err := t.apply(ctx, f)
	if err != nil {
		w.Err, w.Failed = err.Error(), notStruck(ctx, err)
		t.note("%s: %v", f, err)
	}
	if t.cfg.Trace != nil {
		t.cfg.Trace("fault", f.String())
	}
	sleep(ctx, time.Until(t.start.Add(w.Start+f.For)))
	// Heal even after ctx ended: a trial leaves its cluster whole.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if heal != nil {
		if err := heal(hctx); err != nil {
			w.Err = errors.Join(errors.New(w.Err), err).Error()
			t.note("heal %s: %v", f, err)
		}
	}
	w.End = time.Since(t.start)
	return w, true
}
