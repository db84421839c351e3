// Package ui is kafka-ui's web view of a running cluster: the brokers
// registered in ZooKeeper and the partitions each holds; a partition's
// segment files, named by their first byte offset, with the log start, the
// flushed offset (paper §3.1: consumers see a message only once it is
// flushed) and the log end drawn as a bar; and each consumer group's
// members, partition owners, committed offsets and lag, with the lag of the
// last minutes as a small chart.
//
// It reads ZooKeeper through zkcoord (the registry, replicated topics'
// assignments and partition states, the groups), the brokers through the
// OFFSETS request (a replicated partition's leader for its high watermark)
// and, for segment details, the brokers' admin endpoints (broker/metrics,
// served on metrics.listen, which brokers publish in ZooKeeper under
// /brokers/admin). It never writes to the cluster. Pages are plain HTML from html/template; they reload themselves
// every Refresh (a meta refresh, no script).
package ui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/admin"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
)

// Config configures a Server. Start from DefaultConfig.
type Config struct {
	// ZkConnect is the ZooKeeper connect string (--zookeeper; empty: none,
	// then groups are not shown).
	ZkConnect string
	// Brokers are brokers given directly (--broker-list), besides those
	// registered in ZooKeeper.
	Brokers []wire.Broker
	// Admin are brokers' admin endpoints, host:port of their
	// metrics.listen (--admin), besides those the brokers registered in
	// ZooKeeper (/brokers/admin); without one a broker's partitions show
	// no segment files, and offsets from OFFSETS: a 0.7 partition's log
	// start and flushed end, a replicated partition's leader its log start
	// and high watermark, a follower none (replicas.go).
	Admin []string
	// Refresh is how often pages reload and the lag is sampled.
	Refresh time.Duration
	// History is how long the lag history reaches back.
	History time.Duration
	// Timeout bounds each read of ZooKeeper and the brokers.
	Timeout time.Duration
	// Logger receives the UI's logs (nil: slog.Default()).
	Logger *slog.Logger
}

// DefaultConfig returns a 2 s refresh, 10 minutes of history and a 10 s
// timeout.
func DefaultConfig() Config {
	return Config{Refresh: 2 * time.Second, History: 10 * time.Minute, Timeout: 10 * time.Second}
}

// Validate reports a missing source or a bad duration.
func (c *Config) Validate() error {
	var errs []error
	if c.ZkConnect == "" && len(c.Brokers) == 0 && len(c.Admin) == 0 {
		errs = append(errs, errors.New("ui: nothing to show: give --zookeeper, --broker-list or --admin"))
	}
	for _, a := range c.Admin {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("ui: admin endpoint %q is not host:port", a))
		}
	}
	if c.Refresh <= 0 || c.History <= 0 || c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("ui: refresh %v, history %v and timeout %v must be positive", c.Refresh, c.History, c.Timeout))
	}
	return errors.Join(errs...)
}

// Server serves the pages.
type Server struct {
	cfg     Config
	log     *slog.Logger
	cluster *cluster
	history *history
	pages   *template.Template
}

//go:embed templates/*.html
var templateFS embed.FS

// New connects to ZooKeeper (if configured) and returns a Server; Run serves
// it.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: logger, history: newHistory(cfg.History)}
	s.cluster = &cluster{static: cfg.Brokers, http: &http.Client{Timeout: cfg.Timeout}, timeout: cfg.Timeout}
	for _, a := range cfg.Admin {
		s.cluster.admins = append(s.cluster.admins, "http://"+a)
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	s.pages = pages
	if cfg.ZkConnect != "" {
		zk, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: cfg.ZkConnect, SessionTimeout: 30 * time.Second, ConnectionTimeout: cfg.Timeout, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("ui: %w", err)
		}
		s.cluster.zk = zk
	}
	return s, nil
}

// Run serves the pages on ln and samples the groups' lag until ctx ends;
// then it closes ln, ZooKeeper and the broker connections.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if zk := s.cluster.zk; zk != nil {
		wg.Go(func() { // session events nobody waits for
			for {
				select {
				case <-ctx.Done():
					return
				case <-zk.Events():
				}
			}
		})
	}
	wg.Go(func() { s.sampler(ctx) })
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	wg.Go(func() {
		<-ctx.Done()
		hs.Close()
	})
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	cancel()
	wg.Wait()
	errs := []error{err, s.cluster.close()}
	if s.cluster.zk != nil {
		errs = append(errs, s.cluster.zk.Close())
	}
	return errors.Join(errs...)
}

// Handler returns the pages' handler (GET only).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page(s.overview))
	mux.HandleFunc("GET /brokers/{id}", s.page(s.brokerPage))
	mux.HandleFunc("GET /topics/{topic}", s.page(s.topicPage))
	mux.HandleFunc("GET /topics/{topic}/{partition}", s.page(s.partitionPage))
	mux.HandleFunc("GET /groups/{group}", s.page(s.groupPage))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.render(w, r, http.StatusNotFound, "error", view{Title: "Not found", Error: "No page at " + r.URL.Path})
	})
	return mux
}

// view is what every page template gets.
type view struct {
	Title   string
	Refresh int // seconds; 0: no reload
	Error   string
	Now     time.Time
	Data    any
}

// page runs a page's function and renders its template: errNotFound gives
// the 404 page, other errors a 502 page (the cluster did not answer).
func (s *Server) page(f func(ctx context.Context, r *http.Request) (tmpl, title string, data any, err error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		tmpl, title, data, err := f(ctx, r)
		switch {
		case errors.Is(err, errNotFound):
			s.render(w, r, http.StatusNotFound, "error", view{Title: "Not found", Error: err.Error()})
		case err != nil:
			s.render(w, r, http.StatusBadGateway, "error", view{Title: "Cluster unavailable", Error: err.Error()})
		default:
			s.render(w, r, http.StatusOK, tmpl, view{Title: title, Data: data})
		}
	}
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, tmpl string, v view) {
	v.Now = time.Now()
	if r.URL.Query().Get("refresh") != "0" && code == http.StatusOK {
		v.Refresh = max(1, int(s.cfg.Refresh.Round(time.Second)/time.Second))
	}
	var b strings.Builder
	if err := s.pages.ExecuteTemplate(&b, tmpl, v); err != nil {
		s.log.Error("rendering a page", "template", tmpl, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String())) // the client went away
}

// overviewData is the front page.
type overviewData struct {
	Brokers []*Broker
	Topics  []*Topic
	Groups  []groupSummary
	NoZK    bool
}

type groupSummary struct {
	Name    string
	Members int
	// Lag is the sum of the known lags; Unknown counts the partitions
	// whose lag is not known, of Partitions.
	Lag                 int64
	Unknown, Partitions int
}

func (s *Server) overview(ctx context.Context, r *http.Request) (string, string, any, error) {
	brokers, err := s.cluster.brokers(ctx)
	if err != nil {
		return "", "", nil, err
	}
	d := overviewData{Brokers: brokers, Topics: topics(brokers), NoZK: s.cluster.zk == nil}
	for _, t := range d.Topics {
		if t.Replication, err = s.cluster.replication(t.Name); err != nil {
			return "", "", nil, err
		}
	}
	names, err := s.cluster.groupNames()
	if err != nil {
		return "", "", nil, err
	}
	for _, name := range names {
		g, err := s.cluster.group(name, brokers)
		if err != nil {
			continue // gone meanwhile
		}
		d.Groups = append(d.Groups, groupSummary{Name: name, Members: len(g.Members), Lag: g.Lag, Unknown: g.Unknown, Partitions: len(g.Partitions)})
	}
	return "overview", "Cluster", d, nil
}

func (s *Server) brokerPage(ctx context.Context, r *http.Request) (string, string, any, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		return "", "", nil, fmt.Errorf("broker %q: %w", r.PathValue("id"), errNotFound)
	}
	brokers, err := s.cluster.brokers(ctx)
	if err != nil {
		return "", "", nil, err
	}
	for _, b := range brokers {
		if b.ID == wire.BrokerID(id) {
			return "broker", fmt.Sprintf("Broker %d", id), b, nil
		}
	}
	return "", "", nil, fmt.Errorf("broker %d: %w", id, errNotFound)
}

func (s *Server) topicPage(ctx context.Context, r *http.Request) (string, string, any, error) {
	name := r.PathValue("topic")
	brokers, err := s.cluster.brokers(ctx)
	if err != nil {
		return "", "", nil, err
	}
	for _, t := range topics(brokers) {
		if t.Name == name {
			if t.Replication, err = s.cluster.replication(name); err != nil {
				return "", "", nil, err
			}
			return "topic", "Topic " + name, t, nil
		}
	}
	return "", "", nil, fmt.Errorf("topic %q: %w", name, errNotFound)
}

// partitionData is the partition page: the partition, its segments (when
// the admin endpoint gave them), the bar, and where each group stands.
type partitionData struct {
	Partition Partition
	Broker    *Broker
	Info      *admin.Info
	InfoErr   string
	// Replication is this replica's replication state, for a partition
	// the replication layer manages.
	Replication *replicaState
	Bar         bar
	Groups      []groupAt
}

type groupAt struct {
	Group     string
	Committed wire.Offset
	Lag       int64
	HasLag    bool
}

func (s *Server) partitionPage(ctx context.Context, r *http.Request) (string, string, any, error) {
	topic := r.PathValue("topic")
	bp, err := zkcoord.ParseBrokerPartition(r.PathValue("partition"))
	if err != nil {
		return "", "", nil, fmt.Errorf("partition %q of topic %q (want broker-partition, e.g. 0-0): %w", r.PathValue("partition"), topic, errNotFound)
	}
	brokers, err := s.cluster.brokers(ctx)
	if err != nil {
		return "", "", nil, err
	}
	var d partitionData
	found := false
	for _, b := range brokers {
		for _, p := range b.Partitions {
			if p.Topic == topic && p.Broker == bp.Broker && p.Partition == bp.Partition {
				d.Partition, d.Broker, found = p, b, true
			}
		}
	}
	if !found {
		return "", "", nil, fmt.Errorf("partition %s of topic %q: %w", bp, topic, errNotFound)
	}
	if d.Broker.Admin != "" {
		details, err := s.cluster.partitionInfo(ctx, d.Broker, d.Partition)
		if err != nil {
			d.InfoErr = err.Error()
		} else {
			info := details.Info
			d.Info, d.Replication = &info, details.Replication
			d.Partition.Start, d.Partition.Flushed, d.Partition.End = info.StartOffset, info.FlushedOffset, info.EndOffset
			d.Partition.Known = true
			if d.Replication != nil {
				d.Replication.HWKnown = true
			}
		}
	}
	if d.Replication == nil && d.Partition.Replica != nil {
		d.Replication = zkReplicaState(d.Partition)
	}
	names, err := s.cluster.groupNames()
	if err != nil {
		return "", "", nil, err
	}
	for _, name := range names {
		g, err := s.cluster.group(name, brokers)
		if err != nil {
			continue
		}
		for _, gp := range g.Partitions {
			// A group's offset of a replicated partition is the
			// partition's, named by its number alone: it shows on each
			// replica's page.
			here := gp.Partition == bp
			if d.Partition.Replica != nil {
				here = zkcoord.IsReplicated(gp.Partition) && gp.Partition.Partition == bp.Partition
			}
			if gp.Topic == topic && here && gp.HasCommitted {
				d.Groups = append(d.Groups, groupAt{Group: name, Committed: gp.Committed, Lag: gp.Lag, HasLag: gp.HasLag})
			}
		}
	}
	d.Bar = newBar(d.Partition, d.Info, d.Groups)
	if r := d.Replication; r != nil && r.HWKnown {
		d.Bar.HW = &barMark{X: d.Bar.x(r.HighWatermark), Group: "high watermark", At: r.HighWatermark}
	}
	return "partition", fmt.Sprintf("%s %s", topic, bp), d, nil
}

// groupData is the group page.
type groupData struct {
	Group *Group
	Chart chart
	Lags  map[string]chart // by seriesKey's topic and partition: "topic/b-p"
}

func (s *Server) groupPage(ctx context.Context, r *http.Request) (string, string, any, error) {
	name := r.PathValue("group")
	brokers, err := s.cluster.brokers(ctx)
	if err != nil {
		return "", "", nil, err
	}
	g, err := s.cluster.group(name, brokers)
	if err != nil {
		return "", "", nil, err
	}
	now := time.Now()
	s.history.record(g, now)
	d := groupData{Group: g, Chart: newChart(s.history.get(name), now, s.cfg.History, 600, 120), Lags: map[string]chart{}}
	for _, p := range g.Partitions {
		d.Lags[p.Topic+"/"+p.Partition.String()] = newChart(s.history.get(seriesKey(name, p.Topic, p.Partition)), now, s.cfg.History, 160, 24)
	}
	return "group", "Group " + name, d, nil
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"path":  url.PathEscape,
	"bytes": humanBytes,
	"age": func(now, t time.Time) string {
		if t.IsZero() {
			return "?"
		}
		return now.Sub(t).Round(time.Second).String()
	},
	"until": func(now, t time.Time) string {
		if t.IsZero() {
			return "?"
		}
		if d := t.Sub(now); d > 0 {
			return "in " + d.Round(time.Second).String()
		}
		return "now"
	},
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "?"
		}
		return t.Format("2006-01-02 15:04:05")
	},
	"ids":  idList,
	"sub":  func(a, b float64) float64 { return a - b },
	"sub1": func(a, b int) int { return a - b },
	// anchor keeps a label near an edge of the bar inside it.
	"anchor": func(x float64) string {
		switch {
		case x < 100:
			return "start"
		case x > barWidth-100:
			return "end"
		}
		return "middle"
	},
}

// idList formats broker ids as "0, 1, 2".
func idList(ids []wire.BrokerID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ", ")
}

// humanBytes formats a byte count: 1234567 → "1.2 MB (1234567)".
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit || m <= -unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
