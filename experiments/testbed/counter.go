package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// qdisc names the tbf qdisc that shapes one direction of a link.
type qdisc struct{ netns, dev string }

// LinkCounter reads the tbf counters of one host's link with one `tc`
// process per direction: about 8 ms of CPU against ~200 ms for a run of
// `testbed.sh stats`, cheap enough to sample a link every few hundred
// milliseconds while an experiment runs on the same two cores.
type LinkCounter struct {
	sent, received qdisc
}

// ErrUnshaped means the link has no tbf qdisc to count frames with.
var ErrUnshaped = errors.New("testbed: the link is not shaped (--link=none); it has no tbf counters")

// LinkCounter returns a counter of host's link. The link must be shaped.
func (tb *Testbed) LinkCounter(ctx context.Context, host string) (*LinkCounter, error) {
	if tb.LinkRate() == 0 {
		return nil, ErrUnshaped
	}
	if _, err := tb.Host(host); err != nil {
		return nil, err
	}
	out, err := tb.run(ctx, "link", host)
	if err != nil {
		return nil, err
	}
	f := strings.Fields(out)
	if len(f) != 4 {
		return nil, fmt.Errorf("testbed: link %s: want NS DEV PEER_NS PEER_DEV, got %q", host, out)
	}
	return &LinkCounter{sent: qdisc{f[0], f[1]}, received: qdisc{f[2], f[3]}}, nil
}

// Sent is the bytes the host has sent on its link so far.
func (c *LinkCounter) Sent(ctx context.Context) (uint64, error) { return c.sent.bytes(ctx) }

// Received is the bytes sent to the host on its link so far.
func (c *LinkCounter) Received(ctx context.Context) (uint64, error) { return c.received.bytes(ctx) }

// Read returns both directions.
func (c *LinkCounter) Read(ctx context.Context) (LinkStats, error) {
	s, err1 := c.Sent(ctx)
	r, err2 := c.Received(ctx)
	return LinkStats{Sent: s, Received: r}, errors.Join(err1, err2)
}

func (q qdisc) bytes(ctx context.Context) (uint64, error) {
	out, err := exec.CommandContext(ctx, "tc", "-n", q.netns, "-s", "qdisc", "show", "dev", q.dev).Output()
	if err != nil {
		return 0, fmt.Errorf("testbed: tc -n %s -s qdisc show dev %s: %w", q.netns, q.dev, err)
	}
	n, err := parseQdiscSent(string(out))
	if err != nil {
		return 0, fmt.Errorf("testbed: %s %s: %w", q.netns, q.dev, err)
	}
	return n, nil
}

// parseQdiscSent reads the byte count of the first " Sent N bytes M pkt" line
// of `tc -s qdisc show`: the root qdisc's, which tbf is.
func parseQdiscSent(out string) (uint64, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[0] == "Sent" && f[2] == "bytes" {
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bad byte count %q in tc output", f[1])
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("no \"Sent N bytes\" line in tc output %q", out)
}
