package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/netdb11/kafka/experiments/results"
)

// Markdown renders report.md from the sections, given the figures drawn for
// each (figs[i] for sections[i]; nil: none).
func Markdown(set *results.Set, c Context, sections []Section, figs [][]Fig) string {
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	var b strings.Builder
	w := Printf(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })

	w("# Kafka (NetDB'11) §5 reproduced: Kafka vs ActiveMQ vs RabbitMQ\n\n")
	runtime := ""
	if set.Config.Runtime == "container" {
		runtime = fmt.Sprintf(" --runtime=container --container-cpus=%s --container-memory=%s", set.Config.ContainerCPUs, set.Config.ContainerMemory)
	}
	w("Generated %s by `kafka-experiments --%s --testbed=%s%s`. Every number below is the median of repeated runs with the range [min–max]; all runs are in `runs.csv` and `runs.json`, each driver's output in `logs/`.\n\n",
		now.UTC().Format(time.RFC3339), c.Mode, c.TestbedKind, runtime)
	w("- **This machine:** %s.\n", c.Machine.Summary())
	if c.Machine.ActiveMQVersion != "" || c.Machine.RabbitMQVersion != "" {
		w("- **Peers:** ActiveMQ %s, RabbitMQ %s (Erlang %s), %s.\n", orNA(c.Machine.ActiveMQVersion), orNA(c.Machine.RabbitMQVersion), orNA(c.Machine.ErlangVersion), orNA(c.Machine.JavaVersion))
	}
	w("- **Testbed:** %s.\n", c.Testbed)
	w("- **The paper's testbed:** %s.\n", PaperTestbed)
	for _, st := range c.Settings {
		w("- **Departure from Kafka 0.7's defaults:** %s.\n", st)
	}
	w("\n")

	group := ""
	for i, s := range sections {
		if s.Has != nil && !s.Has(set) {
			continue
		}
		if s.Group != group && s.Group != "" {
			w("%s", s.Group)
		}
		group = s.Group
		var drawn []Fig
		if i < len(figs) {
			drawn = figs[i]
		}
		s.Write(w, set, c, drawn)
	}
	writeRanges(w, set, c)
	writeLink(w, set)
	writeMethod(w, set, c)
	writeProfiles(w, set, c.Dir)
	if len(c.Failures) > 0 {
		w("## Failures\n\nThese runs or systems failed; their numbers are missing above.\n\n")
		for _, f := range c.Failures {
			w("- %s\n", strings.ReplaceAll(firstLine(f), "|", "\\|"))
		}
		w("\n")
	}
	return b.String()
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// linkSampleEvery is how often the harness reads the link (experiments'
// linkSampleInterval), for the report's text.
const linkSampleEvery = "200ms"

// writeLink lists the link utilisation of every configuration measured on the
// emulated testbed (bytes on the wire / link capacity in the steady state and
// over the timed run), so the paper's "almost saturated the 1Gb link" can be
// checked.
func writeLink(w func(string, ...any), set *results.Set) {
	type key = results.Key
	var order []key
	groups := map[key][]results.Run{}
	for _, r := range set.Runs {
		if !r.OK() || (r.LinkUtilisation == 0 && r.LinkUtilisationTimed == 0) {
			continue
		}
		k := r.Key
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	if len(order) == 0 {
		return
	}
	w("## Link utilisation\n\nBytes on the client host's link in the messages' direction (client to broker for a producer, broker to client for a consumer), counted by the link's tbf qdisc as whole frames with their Ethernet, IP and TCP headers, over the link's capacity. *Steady state* is the window from the moment 10%% of the run's bytes had crossed the link to the moment 90%% had (sampled every %v and interpolated), so process start-up, connection set-up and the drain at the end fall outside it (– where a transfer was too short for three readings inside that window); *timed run* is the same bytes over the driver's whole timed run. 100%% is the link's rate (a producer's timed run can exceed it slightly: its clock stops when the last request is in the kernel's socket buffer, not on the wire); TCP payload can fill at most 1448/1514 = 95.6%% of it.\n\n", linkSampleEvery)
	w("| System | Experiment | Configuration | Phase | Messages/s | Steady state (%%) | Timed run (%%) | Runs |\n|---|---|---|---|---|---|---|---|\n")
	for _, k := range order {
		rs := groups[k]
		w("| %s | %s | %s | %s | %s | %s | %s | %d |\n", names[k.System], k.Experiment, k.Variant, k.Phase,
			Cell(Summary(rs, results.Throughput)), CellNaN(Summary(rs, func(r results.Run) float64 { return 100 * NaNIfZero(r.LinkUtilisation) })),
			Cell(Summary(rs, func(r results.Run) float64 { return 100 * r.LinkUtilisationTimed })), len(rs))
	}
	w("\n")
}
