package testbed

import "context"

// ShapeTwoDC shapes the link between the hosts live and analysis of a
// two-datacenter testbed (scripts/testbed.sh twodc) to rate in both
// directions with tbf ("100mbit"; "none" removes the shaping). Added delay
// is not possible: this kernel has no netem.
func (tb *Testbed) ShapeTwoDC(ctx context.Context, rate string) error {
	_, err := tb.run(ctx, "twodc", "shape", rate)
	return err
}
