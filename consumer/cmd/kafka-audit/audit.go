package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"time"

	"github.com/netdb11/kafka/broker/audit"
	"github.com/netdb11/kafka/broker/cli"
	caudit "github.com/netdb11/kafka/consumer/audit"
	"github.com/spf13/pflag"
)

// ExitMissing is the exit status when the audit finds missing messages.
const ExitMissing = 3

var command = cli.Command{
	Name: "kafka-audit",
	Usage: "Usage: kafka-audit --zookeeper=HOST:PORT[/chroot] [--topic=T ...] [--follow] [--json]\n\n" +
		"Reads the audit topic's monitoring events and the audited topics' messages of one cluster\n" +
		"and prints, per window and topic, sent, received, missing, duplicates and the end-to-end\n" +
		"latency (paper §4; with --follow only: without it, when a message arrived is unknown).\n" +
		"Exits 3 when messages are missing.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		c := config{AuditTopic: audit.AuditTopic, Poll: 100 * time.Millisecond, Interval: 10 * time.Second, Grace: 5 * time.Second, FetchSize: 1 << 20}
		fs.StringVar(&c.Zookeeper, "zookeeper", "", "ZooKeeper connect string of the cluster to audit, host:port[/chroot]; required")
		fs.StringVar(&c.AuditTopic, "audit-topic", c.AuditTopic, "topic of the monitoring events")
		fs.StringArrayVar(&c.Topics, "topic", nil, "a topic to read besides those the events name (repeatable)")
		fs.StringVar(&c.Whitelist, "whitelist", "", "audit only the topics whose whole name matches this regular expression (the events of others are ignored)")
		fs.BoolVar(&c.Follow, "follow", false, "keep reading; print each window once it has ended and --grace passed; stop on SIGTERM")
		fs.DurationVar(&c.Poll, "poll", c.Poll, "with --follow: the pause after a round of fetches that found nothing (a consumer's backoff)")
		fs.DurationVar(&c.Interval, "interval", c.Interval, "with --follow: how often to print finished windows")
		fs.DurationVar(&c.Grace, "grace", c.Grace, "with --follow: how long after a window ends before it is printed")
		fs.BoolVar(&c.JSON, "json", false, "print one JSON object per row (and one for the totals) instead of a table")
		fs.IntVar(&c.FetchSize, "fetch-size", c.FetchSize, "fetch.size: bytes asked for per partition per fetch")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error { return c.run(ctx, std) }
	},
}

type config struct {
	Zookeeper  string
	AuditTopic string
	Topics     []string
	Whitelist  string
	only       func(string) bool
	Follow     bool
	Poll       time.Duration
	Interval   time.Duration
	Grace      time.Duration
	JSON       bool
	FetchSize  int
}

func (c *config) validate() error {
	var errs []error
	if c.Zookeeper == "" {
		errs = append(errs, errors.New("--zookeeper is required"))
	}
	if c.Poll <= 0 || c.Interval <= 0 || c.Grace < 0 {
		errs = append(errs, fmt.Errorf("--poll=%v and --interval=%v must be positive, --grace=%v not negative", c.Poll, c.Interval, c.Grace))
	}
	if c.FetchSize <= 0 {
		errs = append(errs, fmt.Errorf("--fetch-size=%d: must be positive", c.FetchSize))
	}
	if c.Whitelist != "" {
		re, err := regexp.Compile("^(?:" + c.Whitelist + ")$")
		if err != nil {
			errs = append(errs, fmt.Errorf("--whitelist: %w", err))
		} else {
			c.only = re.MatchString
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &cli.UsageError{Err: err}
	}
	return nil
}

func (c *config) run(ctx context.Context, std cli.IO) (err error) {
	if err := c.validate(); err != nil {
		return err
	}
	counter := caudit.NewCounter()
	log := slog.New(slog.NewTextHandler(std.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	r, err := caudit.NewReader(dctx, caudit.ReaderConfig{ZkConnect: c.Zookeeper, AuditTopic: c.AuditTopic, Topics: c.Topics, Only: c.only, FetchSize: c.FetchSize, Logger: log}, counter)
	cancel()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	p := &printer{w: std.Stdout, errw: std.Stderr, json: c.JSON, latency: c.Follow, printed: map[string]bool{}}
	for _, t := range c.Topics {
		p.topicWidth = max(p.topicWidth, len(t))
	}
	if !c.Follow {
		fmt.Fprintln(std.Stderr, noLatency)
	}
	if c.Follow {
		if err := c.follow(ctx, r, counter, p); err != nil {
			return err
		}
	}
	// A last catch-up, on a context of its own: ctx may be cancelled already.
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.CatchUp(cctx); err != nil {
		return err
	}
	rows := counter.Report()
	p.rows(rows, func(caudit.Row) bool { return true })
	tot := caudit.Totals(rows)
	var all []time.Duration
	for _, lat := range counter.Latencies() {
		all = append(all, lat...)
	}
	slices.Sort(all)
	tot.P50, tot.P90, tot.P99 = caudit.Percentile(all, 0.5), caudit.Percentile(all, 0.9), caudit.Percentile(all, 0.99)
	if len(all) > 0 && c.Follow {
		var sum time.Duration
		for _, l := range all {
			sum += l
		}
		tot.Mean = sum / time.Duration(len(all))
	}
	p.totals(tot)
	for topic, n := range counter.Unaudited() {
		fmt.Fprintf(std.Stderr, "kafka-audit: %d messages of topic %s have no audit envelope\n", n, topic)
	}
	if tot.Missing > 0 {
		return &cli.ExitError{Code: ExitMissing, Err: fmt.Errorf("%d of %d messages missing", tot.Missing, tot.Sent)}
	}
	return nil
}

// follow reads until ctx ends, printing windows as they finish.
func (c *config) follow(ctx context.Context, r *caudit.Reader, counter *caudit.Counter, p *printer) error {
	tick := time.NewTicker(c.Interval)
	defer tick.Stop()
	lastErr := ""
	for {
		n, err := r.Poll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && err.Error() != lastErr {
			// A broker may be restarting; say so (once per new error) and
			// keep going.
			fmt.Fprintf(p.errOut(), "kafka-audit: %v\n", err)
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			now := time.Now()
			p.rows(counter.Report(), func(row caudit.Row) bool {
				return row.Length > 0 && !row.Start.Add(row.Length+c.Grace).After(now)
			})
		default:
		}
		if n == 0 {
			t := time.NewTimer(c.Poll)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	}
}

// noLatency is what kafka-audit says on stderr when run without --follow.
const noLatency = "kafka-audit: no latency without --follow: the messages are read after the fact, " +
	"so when each arrived is unknown; run with --follow to measure creation to receipt"

// printer prints rows once each, as a table or JSON lines.
//
// Without --follow (latency false) it prints no latency: a message read
// after the fact has no arrival time, and creation to reading would
// measure how long ago the producer ran.
type printer struct {
	w       io.Writer
	errw    io.Writer
	json    bool
	latency bool
	printed map[string]bool
	// widths are the table's column widths, set with the header from the
	// first batch of rows (and at least minWidths), kept for every later
	// batch so that its rows line up with the header.
	widths []int
	// topicWidth is the longest --topic, a least width of the topic column.
	topicWidth int
}

// tableHeader names the table's columns; the last four are the latency's.
var tableHeader = []string{"window", "topic", "producers", "sent", "received", "missing", "duplicates", "unannounced", "p50", "p90", "p99", "max"}

// latencyColumns is how many of tableHeader's columns are the latency's.
const latencyColumns = 4

// minWidths are the least column widths with --follow, where later rows
// are not known when the header is printed: a window's start, counts up
// to eight digits, durations such as 1m8.123s.
var minWidths = []int{len("2006-01-02T15:04:05.000Z"), 12, 9, 8, 8, 8, 10, 11, 8, 8, 8, 8}

func (p *printer) errOut() io.Writer { return p.errw }

func (p *printer) rows(rows []caudit.Row, ready func(caudit.Row) bool) {
	var cells [][]string
	for _, r := range rows {
		key := fmt.Sprint(r.Start.UnixNano(), "/", r.Topic)
		if p.printed[key] || !ready(r) {
			continue
		}
		p.printed[key] = true
		if p.json {
			fmt.Fprintf(p.w, "%s\n", p.marshal(r.JSON("window")))
			continue
		}
		win := r.Start.UTC().Format("2006-01-02T15:04:05.000Z")
		if r.Length == 0 {
			win = "(no event)"
		}
		row := []string{win, r.Topic, fmt.Sprint(r.Producers), fmt.Sprint(r.Sent), fmt.Sprint(r.Received),
			fmt.Sprint(r.Missing), fmt.Sprint(r.Duplicates), fmt.Sprint(r.Unannounced)}
		if p.latency {
			for _, d := range []time.Duration{r.P50, r.P90, r.P99, r.Max} {
				row = append(row, d.Round(time.Millisecond).String())
			}
		}
		cells = append(cells, row)
	}
	if len(cells) == 0 {
		return
	}
	header := tableHeader
	if !p.latency {
		header = header[:len(header)-latencyColumns]
	}
	if p.widths == nil {
		p.widths = make([]int, len(header))
		for i, h := range header {
			p.widths[i] = len(h)
			if p.latency { // --follow: more rows to come
				p.widths[i] = max(p.widths[i], minWidths[i])
			}
		}
		p.widths[1] = max(p.widths[1], p.topicWidth)
		for _, row := range cells {
			for i, c := range row {
				p.widths[i] = max(p.widths[i], len(c))
			}
		}
		p.line(header)
	}
	for _, row := range cells {
		p.line(row)
	}
}

// line prints one table line: each cell right-aligned in its column, two
// spaces before it.
func (p *printer) line(cells []string) {
	var b []byte
	for i, c := range cells {
		b = fmt.Appendf(b, "  %*s", p.widths[i], c)
	}
	b = append(b, '\n')
	p.w.Write(b)
}

// marshal encodes a JSON row, without its latency unless p.latency.
func (p *printer) marshal(j caudit.JSONRow) []byte {
	if p.latency {
		b, _ := json.Marshal(j)
		return b
	}
	b, _ := json.Marshal(struct {
		Type       string  `json:"type"`
		Window     string  `json:"window,omitempty"`
		WindowUnix float64 `json:"window_unix,omitempty"`
		LengthS    float64 `json:"length_s,omitempty"`
		Topic      string  `json:"topic"`
		Producers  int     `json:"producers"`
		caudit.Tally
	}{j.Type, j.Window, j.WindowUnix, j.LengthS, j.Topic, j.Producers, j.Tally})
	return b
}

func (p *printer) totals(t caudit.Row) {
	if p.json {
		fmt.Fprintf(p.w, "%s\n", p.marshal(t.JSON("total")))
		return
	}
	fmt.Fprintf(p.w, "total: sent %d, received %d, missing %d, duplicates %d, unannounced %d\n", t.Sent, t.Received, t.Missing, t.Duplicates, t.Unannounced)
}
