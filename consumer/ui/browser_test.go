package ui_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/brokertest/zkbroker"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer/group"
	"github.com/netdb11/kafka/consumer/ui"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// pageTimeout bounds each wait for a page to show something: a page load
// in Chromium on a machine busy with the rest of make test can take
// seconds.
const pageTimeout = time.Minute

// EnvScreenshots names a directory where TestBrowser also saves its
// screenshots (the README's come from `KAFKA_UI_SCREENSHOTS=paper/figures`).
const EnvScreenshots = "KAFKA_UI_SCREENSHOTS"

// chromium returns the browser's path. It fails the test in CI (CI set),
// where scripts/chromium.sh install must have run, and skips it elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (scripts/chromium.sh install; make test does it)")
	}
	t.Skip("chromium is not installed: scripts/chromium.sh install")
	return ""
}

// browser starts a headless Chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// pageState is what the test reads off a page.
type pageState struct {
	Title    string   `json:"title"`
	Error    string   `json:"error"`
	Start    string   `json:"start"`
	Flushed  string   `json:"flushed"`
	End      string   `json:"end"`
	Segments []string `json:"segments"` // first offset of each segment row
	Expiring int      `json:"expiring"` // segment rows retention deletes next
	Lag      string   `json:"lag"`
	Rows     []string `json:"rows"` // "committed end lag" of each group partition row
	Owners   []string `json:"owners"`
	Members  int      `json:"members"`
	// Role and HW are a replicated partition's replica role and high
	// watermark (its Replication section); NoOffsets is true when the page
	// says the replica's offsets are not known.
	Role      string `json:"role"`
	HW        string `json:"hw"`
	NoOffsets bool   `json:"noOffsets"`
	// Table rows, their cells joined by " | ": the partition page's
	// groups, the partition tables' first six columns, the front page's
	// brokers (id and partition count) and groups.
	PartGroups []string `json:"partGroups"`
	Partitions []string `json:"partitions"`
	Brokers    []string `json:"brokers"`
	Groups     []string `json:"groups"`
}

const readPage = `(() => {
  const txt = s => { const e = document.querySelector(s); return e ? e.textContent.trim() : ""; };
  const all = s => Array.from(document.querySelectorAll(s));
  const rows = (s, cols) => all(s + " tr").filter(r => r.querySelector("td")).map(r =>
    Array.from(r.cells).filter((c, i) => !cols || cols.includes(i)).map(c => c.textContent.trim().replace(/\s+/g, " ")).join(" | "));
  return {
    title: document.title, error: txt("#error"),
    start: txt("#start"), flushed: txt("#flushed"), end: txt("#end"),
    segments: all("#segments tbody tr").map(r => r.cells[1].textContent.trim()),
    expiring: all("#segments tbody tr.expiring").length,
    lag: txt("#lag-total"),
    rows: all("#group-partitions tbody tr").map(r => [".committed", ".end", ".lag"].map(c => r.querySelector(c).textContent.trim()).join(" ")),
    owners: all("#group-partitions tbody tr").map(r => r.cells[2].textContent.trim()),
    members: all("#members tr").length - 1,
    role: txt("#role"), hw: txt("#hw-offset"), noOffsets: !!document.querySelector("#offsets-unknown"),
    partGroups: rows("#partition-groups"), partitions: rows("table.partitions", [0, 1, 2, 3, 4, 5]),
    brokers: rows("#brokers", [0, 4]), groups: rows("#groups"),
  };
})()`

// read navigates to url (unless url is empty: read the current page, as its
// meta refresh reloads it) and reads its state.
func read(ctx context.Context, url string) (pageState, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if url != "" {
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			return pageState{}, err
		}
	}
	return chromedp.Run(ctx, chromedp.Evaluate[pageState](readPage))
}

// screenshot saves the current page as a PNG in t's temporary directory
// and, when EnvScreenshots is set, in that directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil || img.Bounds().Dx() < 800 {
		t.Fatalf("screenshot is not a page-sized PNG: %v", err)
	}
	dirs := []string{t.TempDir()}
	if d := os.Getenv(EnvScreenshots); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cluster is a broker registered in a real ZooKeeper, with its admin
// endpoint, and kafka-ui's server in front of both.
type cluster struct {
	zk     string
	broker *brokertest.Broker
	ui     string // base URL
}

const (
	topic         = "clicks"
	messageSize   = 180
	segmentSize   = 4000
	retentionSize = 9000
)

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{zk: zktest.Start(t)}
	cfg := brokertest.Config()
	cfg.MetricsListen = "127.0.0.1:0"
	cfg.Log.FileSize = segmentSize
	// Flushed only when the test says so (produce), so that a tail stays
	// written but unflushed (produceUnflushed); retention by size marks the
	// oldest segments once the log passes retentionSize (the cleanup,
	// every 10 minutes, does not run during the test).
	cfg.Log.FlushInterval = 1000
	cfg.Log.FlushIntervalTime = time.Hour
	cfg.Log.RetentionSize = retentionSize
	c.broker, _ = zkbroker.Start(t, cfg, zkcoord.Config{Connect: c.zk, SessionTimeout: 10 * time.Second})

	ucfg := ui.DefaultConfig()
	ucfg.ZkConnect = c.zk
	// No --admin: the UI finds the broker's admin endpoint in ZooKeeper.
	ucfg.Refresh = time.Second
	ucfg.History = 10 * time.Second
	ucfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := ui.New(ctx, ucfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ui: %v", err)
		}
	})
	c.ui = "http://" + ln.Addr().String()
	return c
}

// produce sends n messages of messageSize bytes, one PRODUCE each so that
// segments roll between them, and flushes them.
func (c *cluster) produce(t *testing.T, n int) {
	t.Helper()
	l0 := c.end(t)
	c.send(t, n)
	if err := c.broker.Logs().FlushAll(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.end(t), l0+wire.Offset(n*messageLen); got != want {
		t.Fatalf("flushed end %d after producing, want %d", got, want)
	}
}

// send sends n messages of messageSize bytes, one PRODUCE each, each
// appended before the next is sent.
func (c *cluster) send(t *testing.T, n int) {
	t.Helper()
	conn, err := net.Dial("tcp", c.broker.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range n {
		p := make([]byte, messageSize)
		binary.BigEndian.PutUint64(p, uint64(i))
		req := &wire.Request{Type: wire.RequestProduce, Produce: []wire.ProduceRequest{{Topic: topic, Partition: 0, Messages: wire.NewMessageSet(p)}}}
		// An OFFSETS request behind each PRODUCE waits for it to be
		// appended, so that each message is appended on its own and
		// segments roll between them.
		sync := &wire.Request{Type: wire.RequestOffsets, Offsets: &wire.OffsetsRequest{Topic: topic, Partition: 0, Time: wire.LatestTime, MaxOffsets: 1}}
		if _, err := conn.Write(wire.AppendRequest(wire.AppendRequest(nil, req), sync)); err != nil {
			t.Fatal(err)
		}
		var hdr [wire.ResponseHeaderLen]byte
		if _, err := io.ReadFull(conn, hdr[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, conn, int64(binary.BigEndian.Uint32(hdr[:])-2)); err != nil {
			t.Fatal(err)
		}
	}
}

// produceUnflushed sends n messages and leaves them unflushed.
func (c *cluster) produceUnflushed(t *testing.T, n int) {
	t.Helper()
	l, err := c.broker.Logs().Get(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := l.WrittenEnd() + wire.Offset(n*messageLen)
	c.send(t, n)
	if got := l.WrittenEnd(); got != want {
		t.Fatalf("written end %d, want %d", got, want)
	}
}

// messageLen is the size of one message in the log.
var messageLen = len(wire.NewMessageSet(make([]byte, messageSize)))

// end is the partition's flushed end (0 before it exists).
func (c *cluster) end(t *testing.T) wire.Offset {
	l, err := c.broker.Logs().Get(topic, 0)
	if err != nil {
		return 0
	}
	return l.EndOffset()
}

// consume reads n messages of topic with the group's consumer and
// commits; it returns the offset committed for each partition read.
func consume(t *testing.T, gc *group.Consumer, topic string, n int) map[wire.BrokerPartition]wire.Offset {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := gc.Streams(topic)[0]
	next := map[wire.BrokerPartition]wire.Offset{}
	for range n {
		m, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		next[m.Partition] = m.NextOffset
	}
	s.Ack()
	if err := gc.Commit(); err != nil {
		t.Fatal(err)
	}
	return next
}

// TestBrowser drives kafka-ui in headless Chromium against a real broker
// and ZooKeeper: the partition page lists the segment files and offsets the
// broker has, and they grow as messages are produced; the group page shows
// the group's member, owner, committed offset and lag, and the lag shrinks
// as the group consumes, on the same page as it reloads itself; unknown
// topics and groups get a 404 page.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	c := startCluster(t)

	c.produce(t, 30)
	end := c.end(t)
	partURL := fmt.Sprintf("%s/topics/%s/%d-0?refresh=0", c.ui, topic, c.broker.Config.BrokerID)
	info := func() (starts []string) {
		l, err := c.broker.Logs().Get(topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Info().Segments {
			starts = append(starts, strconv.FormatInt(int64(s.Start), 10))
		}
		return starts
	}
	var st pageState
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the page last read showed %+v", st)
		}
	})
	wait.Within(t, pageTimeout, "the partition page to show the segments and offsets", func() bool {
		var err error
		st, err = read(ctx, partURL)
		return err == nil && st.End == fmt.Sprint(end) && st.Flushed == fmt.Sprint(end) && st.Start == "0" && slices.Equal(st.Segments, info())
	})
	if len(st.Segments) < 2 {
		t.Fatalf("30 messages of %d bytes in segments of %d: page shows %d segments", messageLen, segmentSize, len(st.Segments))
	}
	segsBefore := len(st.Segments)

	// A group consumes a third; its lag is the rest.
	gc := startGroup(t, "readers", c.zk, topic)
	bp := wire.BrokerPartition{Broker: c.broker.Config.BrokerID}
	committed := consume(t, gc, topic, 10)[bp]
	if committed != wire.Offset(10*messageLen) {
		t.Fatalf("committed %d after 10 messages of %d bytes", committed, messageLen)
	}
	groupURL := c.ui + "/groups/readers"
	wantRow := func(committed, end wire.Offset) string { return fmt.Sprintf("%d %d %d", committed, end, end-committed) }
	wait.Within(t, pageTimeout, "the group page to show the member, the owner and the lag", func() bool {
		var err error
		st, err = read(ctx, groupURL)
		return err == nil && st.Members == 1 && len(st.Owners) == 1 && st.Owners[0] != "none" &&
			slices.Equal(st.Rows, []string{wantRow(committed, end)}) && st.Lag == fmt.Sprint(end-committed)
	})

	// More is consumed; the page, reloading itself, shows the lag shrink.
	committed = consume(t, gc, topic, 15)[bp]
	wait.Within(t, pageTimeout, "the reloading group page to show the smaller lag", func() bool {
		var err error
		st, err = read(ctx, "")
		return err == nil && slices.Equal(st.Rows, []string{wantRow(committed, end)}) && st.Lag == fmt.Sprint(end-committed)
	})

	// More is produced: the log end, the segments and the lag grow.
	c.produce(t, 40)
	end = c.end(t)
	wait.Within(t, pageTimeout, "the reloading group page to show the larger lag", func() bool {
		var err error
		st, err = read(ctx, "")
		return err == nil && slices.Equal(st.Rows, []string{wantRow(committed, end)})
	})
	screenshot(t, ctx, "kafka-ui-group.png")
	wait.Within(t, pageTimeout, "the partition page to show the new segments", func() bool {
		var err error
		st, err = read(ctx, partURL)
		return err == nil && st.End == fmt.Sprint(end) && slices.Equal(st.Segments, info())
	})
	if len(st.Segments) <= segsBefore {
		t.Fatalf("segments %v did not grow from %d", st.Segments, segsBefore)
	}
	// 70 messages (13230 bytes) in segments of 21 (3969 bytes): the oldest
	// segment goes at the next cleanup, as the log is above 9000 bytes
	// without it.
	if st.Expiring != 1 {
		t.Fatalf("%d segments marked as deleted next, want 1", st.Expiring)
	}

	// Three more messages stay unflushed: the log end passes the flushed
	// offset, which does not move.
	c.produceUnflushed(t, 3)
	written := end + wire.Offset(3*messageLen)
	wait.Within(t, pageTimeout, "the partition page to show the unflushed tail", func() bool {
		var err error
		st, err = read(ctx, partURL)
		return err == nil && st.End == fmt.Sprint(written) && st.Flushed == fmt.Sprint(end)
	})
	screenshot(t, ctx, "kafka-ui.png")

	// A replicated topic's assignment and state, as the replication
	// layer's controller writes them, show on the topic page.
	zc := zkbroker.Dial(t, zkcoord.Config{Connect: c.zk, SessionTimeout: 10 * time.Second})
	if err := zkcoord.ReplicationOn(zc).CreateTopic(topic, zkcoord.Assignment{0: {0, 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := zkcoord.ReplicationOn(zc).WritePartitionState(topic, 0, zkcoord.PartitionState{Leader: 0, LeaderEpoch: 3, ISR: []wire.BrokerID{0}}, -1); err != nil {
		t.Fatal(err)
	}

	// The other pages name what they list.
	for path, want := range map[string][]string{
		"/":                   {`href="/brokers/0"`, `href="/topics/clicks/0-0"`, `href="/groups/readers"`, c.broker.Addr, "factor 2", "1 under-replicated"},
		"/brokers/0":          {`href="/topics/clicks/0-0"`, "registered in ZooKeeper", "13797"},
		"/topics/" + topic:    {`href="/topics/clicks/0-0"`, "13230", `id="replication"`, "<td>0, 1</td>", `<td class="num">3</td>`, "under-replicated"},
		"/groups/readers?x=1": {"readers_"},
	} {
		body := get(t, c.ui+path, http.StatusOK)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s does not show %q", path, w)
			}
		}
	}

	// Unknown names: a 404 page, in the browser and by status.
	for _, path := range []string{"/groups/nobody", "/topics/nothing", "/topics/" + topic + "/9-0", "/topics/" + topic + "/x", "/brokers/42", "/nowhere"} {
		st, err := read(ctx, c.ui+path)
		if err != nil || st.Error == "" || st.Title != "Not found · kafka-ui" {
			t.Errorf("%s: page %+v, %v; want the not-found page", path, st, err)
		}
		resp, err := http.Get(c.ui + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %s, want 404", path, resp.Status)
		}
	}
	// The UI only reads.
	resp, err := http.Post(groupURL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %s", groupURL, resp.Status)
	}
}

// get returns the body of url, which must answer code.
func get(t *testing.T, url string, code int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != code {
		t.Fatalf("GET %s: %s, want %d", url, resp.Status, code)
	}
	return string(b)
}

// startGroup starts a member of group id on topic (one stream) that reads
// from the smallest offset and commits only when told; it is closed when
// the test ends.
func startGroup(t *testing.T, id, zk, topic string) *group.Consumer {
	t.Helper()
	gcfg := group.DefaultConfig()
	gcfg.GroupID, gcfg.ZkConnect = id, zk
	gcfg.AutoCommit = false
	gcfg.AutoOffsetReset = group.OffsetSmallest
	gcfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	gctx, gcancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(gcancel)
	gc, err := group.New(gctx, gcfg, map[string]int{topic: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Close() })
	return gc
}
