package testbed

import (
	"context"
	"testing"
	"time"
)

// TestTwoDCLinkShapedToWANRate: the two-datacenter testbed's link carries
// about its tbf rate, and no limit once the shaping is removed.
func TestTwoDCLinkShapedToWANRate(t *testing.T) {
	tb := up(t, Options{Hosts: []string{"live", "analysis"}, Link: LinkNone})
	if err := tb.ShapeTwoDC(context.Background(), "100mbit"); err != nil {
		t.Fatal(err)
	}
	const rate = 100e6
	goodput, _ := bulkTransfer(t, tb, "live", "analysis", 2*time.Second)
	t.Logf("shaped to 100mbit: TCP payload %.1f Mbit/s", goodput/1e6)
	if goodput > rate || goodput < 0.8*rate {
		t.Errorf("TCP payload %.1f Mbit/s over a link shaped to 100 Mbit/s", goodput/1e6)
	}
	if err := tb.ShapeTwoDC(context.Background(), "none"); err != nil {
		t.Fatal(err)
	}
	goodput, _ = bulkTransfer(t, tb, "analysis", "live", 2*time.Second)
	t.Logf("unshaped: TCP payload %.1f Mbit/s", goodput/1e6)
	if goodput < 2*rate {
		t.Errorf("TCP payload %.1f Mbit/s without shaping: the shaping was not removed", goodput/1e6)
	}
	if err := tb.ShapeTwoDC(context.Background(), "fast"); err == nil {
		t.Error("a rate of \"fast\" was accepted")
	}
}
