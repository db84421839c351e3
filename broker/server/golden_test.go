package server

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/produced.golden from this code")

// TestProducedLogIsGolden sends a fixed mix of requests -- pipelined
// batch-1 PRODUCEs to a partition and to partition -1 (picks cycling over
// the partitions), batches of 50, a MULTIPRODUCE, an empty set -- and
// compares every segment file the broker wrote, byte for byte, with
// testdata/produced.golden, written by the broker before its produce path
// was rewritten into one step (go test -run Golden -update rewrites it).
// The bytes on disk must not change with the code.
func TestProducedLogIsGolden(t *testing.T) {
	var mu sync.Mutex
	picks := 0
	ts := startServer(t, func(c *Config, lc *log.Config) {
		lc.NumPartitions = 3
		c.ChoosePartition = func(n int) int {
			mu.Lock()
			defer mu.Unlock()
			picks++
			return picks / 3 % n
		}
	})
	msg := func(i int) []byte {
		return []byte(fmt.Sprintf("message %d %s", i, bytes.Repeat([]byte{byte('a' + i%26)}, i%50)))
	}
	var frames []byte
	add := func(r *wire.Request) { frames = wire.AppendRequest(frames, r) }
	for i := range 40 {
		add(produceReq("g", 0, wire.NewMessageSet(msg(i))))
	}
	for i := range 40 {
		add(produceReq("g", -1, wire.NewMessageSet(msg(100+i))))
	}
	for i := range 3 {
		var ps [][]byte
		for j := range 50 {
			ps = append(ps, msg(200+50*i+j))
		}
		add(produceReq("g", 2, wire.NewMessageSet(ps...)))
	}
	add(&wire.Request{Type: wire.RequestMultiProduce, Produce: []wire.ProduceRequest{
		{Topic: "g", Partition: 1, Messages: wire.NewMessageSet(msg(400), msg(401))},
		{Topic: "h", Partition: 0, Messages: wire.NewMessageSet(msg(402))},
		{Topic: "g", Partition: 1, Messages: wire.NewMessageSet(msg(403))},
	}})
	add(produceReq("g", 0, nil))
	for i := range 10 {
		add(produceReq("h", 0, wire.NewMessageSet(msg(500+i), msg(600+i))))
	}
	c := ts.dial(t)
	c.write(frames)
	c.sync()
	if err := ts.logs.FlushAll(); err != nil {
		t.Fatal(err)
	}

	// The golden file: each segment's path under log.dir, its length, its
	// bytes.
	var got bytes.Buffer
	var paths []string
	if err := filepath.Walk(ts.dir, func(path string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && filepath.Ext(path) == wire.SegmentSuffix {
			paths = append(paths, path)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(ts.dir, path)
		fmt.Fprintf(&got, "%s %d\n", rel, len(b))
		got.Write(b)
	}
	golden := filepath.Join("testdata", "produced.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("the produced log (%d bytes over %d segments) differs from %s (%d bytes)", got.Len(), len(paths), golden, len(want))
	}
}
