package experiments

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netdb11/kafka/experiments/report"
	"github.com/netdb11/kafka/experiments/results"
)

// scaleOutSet has three runs per broker count with the given rates (msg/s),
// steady link utilisation, broker-core busy share and the brokers' own share
// of that core per count.
func scaleOutSet(rates, link, core0, own []float64) *results.Set {
	set := &results.Set{}
	for i := range rates {
		n := i + 1
		for rep := 1; rep <= 3; rep++ {
			d := 1 + float64(rep-2)*0.01
			r := fakeRun(results.Kafka, scaleOutExp, results.VariantBrokers(n), results.Produce, float64(n), rep, rates[i]*d)
			r.LinkUtilisation, r.BrokerCoreBusy, r.ClientCoreBusy = link[i], core0[i], 0.3
			// 1 s timed run (run's default) of rate*d messages at 250 wire bytes each.
			r.LinkBytesSent = uint64(rates[i] * d * 250)
			r.LinkUtilisationTimed = float64(r.LinkBytesSent) * 8 / 1e9
			r.BrokerCPUSeconds = own[i] * d // of a 1 s run
			set.Runs = append(set.Runs, r)
		}
	}
	return set
}

func TestScaleOutLinkBound(t *testing.T) {
	set := scaleOutSet([]float64{480_000, 482_000, 479_000}, []float64{0.99, 0.99, 0.99}, []float64{0.25, 0.24, 0.26}, []float64{0.2, 0.2, 0.2})
	got := concludeScaleOut(scaleOutPoints(set))
	for _, want := range []string{
		"From 1 to 3 broker hosts", "linear scaling would be 3×",
		"With 1 broker the client's link was already 99% full", "caps the aggregate at the client's link",
		"The brokers had CPU to spare", "20% of core 0", "about 5.00× one link's load",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("conclusion lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "stops them from taking more") {
		t.Errorf("conclusion blames the broker core, which was 26%% busy:\n%s", got)
	}
	// The link is full at 1e9/8/250 = 500,000 messages/s.
	if c := linkCapMsgs(set.Runs); math.Abs(c-500_000) > 1 {
		t.Errorf("linkCapMsgs = %v, want 500000", c)
	}

	dir := t.TempDir()
	figs, err := report.WriteFigures(dir, set, sections())
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(parts, func(p part) bool { return p.name == scaleOutExp }); len(figs[i]) != 1 {
		t.Fatalf("no scale-out figure among %+v", figs)
	}
	checkPNGFile(t, filepath.Join(dir, "fig-scaleout.png"))
	md := report.Markdown(set, report.Context{TestbedKind: "paper", Mode: "quick"}, sections(), figs)
	for _, want := range []string{"## Scale-out: brokers 1 to 3", "![Scale-out", "| 3 | 479,000 [", "| 99% | 26% | 30% |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Count(md, "fig-scaleout.png") != 1 {
		t.Errorf("the scale-out figure appears %d times, want once (in its section)", strings.Count(md, "fig-scaleout.png"))
	}
}

func TestScaleOutCoreBound(t *testing.T) {
	set := scaleOutSet([]float64{200_000, 320_000, 360_000}, []float64{0.4, 0.64, 0.72}, []float64{0.5, 0.92, 0.97}, []float64{0.45, 0.85, 0.9})
	got := concludeScaleOut(scaleOutPoints(set))
	for _, want := range []string{"1.80× for 3× the brokers", "was 50% busy with 1 broker and 97% with 3 brokers", "not the design, stops them"} {
		if !strings.Contains(got, want) {
			t.Errorf("conclusion lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "caps the aggregate at the client's link") {
		t.Errorf("conclusion blames the link, which was 40%% full:\n%s", got)
	}
}

// A core made busy by other work is not blamed on the brokers.
func TestScaleOutCoreBusyWithOtherWork(t *testing.T) {
	set := scaleOutSet([]float64{480_000, 482_000, 479_000}, []float64{0.99, 0.99, 0.99}, []float64{0.94, 0.97, 0.33}, []float64{0.2, 0.2, 0.2})
	got := concludeScaleOut(scaleOutPoints(set))
	if !strings.Contains(got, "most of it was other work on this shared machine") || strings.Contains(got, "stops them from taking more") {
		t.Errorf("conclusion:\n%s", got)
	}
}

func TestScaleOutOneCount(t *testing.T) {
	set := scaleOutSet([]float64{480_000}, []float64{0.99}, []float64{0.25}, []float64{0.2})
	if got := concludeScaleOut(scaleOutPoints(set)); !strings.Contains(got, "nothing to compare") {
		t.Errorf("one broker count: %q", got)
	}
	if md := report.Markdown(&results.Set{}, report.Context{}, sections(), nil); strings.Contains(md, "Scale-out") {
		t.Error("a set without scale-out runs has a scale-out section")
	}
}

func checkPNGFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 1000 || string(b[1:4]) != "PNG" {
		t.Errorf("%s is not a PNG (%d bytes)", path, len(b))
	}
}
