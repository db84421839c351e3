package faults

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/netdb11/kafka/experiments/kit"
)

// TestAFaultNotAppliedMakesTheTrialInvalid: a fault that finds nothing to
// strike (here a pause of a broker that is down, as when an overlapping
// kill took it) leaves the trial valid and says why in its window; a fault
// the harness could not apply makes the trial invalid, with the reason.
// Before, both were a note, and a machine without iptables ran every
// partition nemesis as a note while its trials read VALID (issue 23).
func TestAFaultNotAppliedMakesTheTrialInvalid(t *testing.T) {
	tr := &trial{cl: &Cluster{brokers: map[int]*kit.Proc{}}, start: time.Now(),
		cfg: TrialConfig{Logger: slog.New(slog.DiscardHandler)}}
	ctx := context.Background()

	down, ok := tr.runFault(ctx, Fault{Kind: Pause, Broker: 2})
	if !ok || down.Err == "" || down.Failed {
		t.Errorf("pause of a broker that is down: %+v, want an error that is not a failure", down)
	}
	broken, ok := tr.runFault(ctx, Fault{Kind: "no-such-nemesis", Broker: 1})
	if !ok || !broken.Failed {
		t.Errorf("a fault the harness cannot apply: %+v, want it failed", broken)
	}
	why := notApplied([]Window{down, broken})
	if len(why) != 1 || !strings.Contains(why[0], "no-such-nemesis broker1") || !strings.Contains(why[0], broken.Err) {
		t.Errorf("invalid because %q, want the failed fault and its error", why)
	}

	// Ended by the trial's end, a fault is neither.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if w, ok := tr.runFault(cctx, Fault{Kind: "no-such-nemesis", Broker: 1}); ok && w.Failed {
		t.Errorf("a fault cut short by the trial's end counted as failed: %+v", w)
	}

	// What the cluster cannot say is nothing to strike.
	if _, err := tr.cl.PartitionInfo(ctx, topic, 0); !errors.Is(err, errNoTarget) {
		t.Errorf("metadata with every broker down: %v, want nothing to strike", err)
	}
}

// TestFaultName: a fault that strikes no one broker is named by its kind
// alone, in the notes and in a timeline's legend (it read "admin broker0").
func TestFaultName(t *testing.T) {
	for _, c := range []struct {
		f    Fault
		want string
	}{
		{Fault{Kind: Admin, At: 10 * time.Second, For: 20 * time.Second}, "admin at 10s for 20s"},
		{Fault{Kind: ZKStop, At: time.Second, For: time.Second}, "zk-stop at 1s for 1s"},
		{Fault{Kind: Kill, Broker: 2, Role: RoleLeader, At: 3 * time.Second, For: 4 * time.Second}, "kill broker2 (leader) at 3s for 4s"},
	} {
		if got := c.f.String(); got != c.want {
			t.Errorf("%+v: String() = %q, want %q", c.f, got, c.want)
		}
	}
}
