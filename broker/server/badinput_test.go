package server

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// dirNames lists a directory, but for the log.dir lock file.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != log.LockFile {
			names = append(names, e.Name())
		}
	}
	return names
}

// A produce request the broker refuses closes the connection (PRODUCE has
// no response, as in Kafka 0.7), appends nothing, creates nothing on disk,
// and does not disturb other clients.
func TestBadProduceClosesConnection(t *testing.T) {
	root := t.TempDir()
	logDir := filepath.Join(root, "logs")
	ts := startServer(t, func(c *Config, lc *log.Config) {
		lc.Dir = logDir
		lc.NumPartitions = 2
		lc.MaxMessageSize = 100
	})
	good := wire.NewMessageSet([]byte("good"))
	other := ts.dial(t)
	other.produce("t", 0, good)

	badCRC := wire.NewMessageSet([]byte("payload"))
	badCRC[len(badCRC)-1] ^= 1
	tests := map[string]*wire.Request{
		"bad crc":            produceReq("t", 0, badCRC),
		"bad crc, random":    produceReq("t", -1, badCRC),
		"truncated set":      produceReq("t", 0, good[:len(good)-1]),
		"oversized message":  produceReq("t", 0, wire.NewMessageSet(make([]byte, 200))),
		"unknown magic":      produceReq("t", 0, append(append([]byte(nil), good[:4]...), append([]byte{7}, good[5:]...)...)),
		"wrong partition":    produceReq("t", 2, good),
		"negative partition": produceReq("t", -2, good),
		"dot dot slash":      produceReq("../x", 0, good),
		"slash":              produceReq("a/b", 0, good),
		"dot dot":            produceReq("..", 0, good),
		"empty topic":        produceReq("", 0, good),
		"random, bad topic":  produceReq("../y", -1, good),
		"long topic":         produceReq(string(make([]byte, 300)), 0, good),
		"multiproduce, one bad part": {Type: wire.RequestMultiProduce, Produce: []wire.ProduceRequest{
			{Topic: "t", Partition: 1, Messages: good},
			{Topic: "u", Partition: 0, Messages: good},
			{Topic: "t", Partition: 0, Messages: badCRC},
		}},
		"multiproduce, bad topic": {Type: wire.RequestMultiProduce, Produce: []wire.ProduceRequest{
			{Topic: "t", Partition: 1, Messages: good},
			{Topic: "a/../../b", Partition: 0, Messages: good},
		}},
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			c := ts.dial(t)
			c.send(req)
			c.expectClosed()
			// Still exactly one message, in t-0 only.
			if code, body := other.fetch("t", 0, 0, 1000); code != wire.CodeNone || string(body) != string(good) {
				t.Fatalf("t-0 now: code %v, % x", code, body)
			}
			if got := dirNames(t, logDir); !slices.Equal(got, []string{"t-0"}) {
				t.Fatalf("log.dir holds %v", got)
			}
			if got := dirNames(t, root); !slices.Equal(got, []string{"logs"}) {
				t.Fatalf("log.dir's parent holds %v", got)
			}
		})
	}
}

// Frames the broker cannot read close the connection at once, without
// allocating what the size prefix claims; other clients are still served.
func TestBadFramesCloseConnection(t *testing.T) {
	ts := startServer(t, func(c *Config, _ *log.Config) { c.MaxRequestSize = 1 << 20 })
	frame := func(size int32, rest ...byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(size)), rest...)
	}
	fetch := wire.AppendRequest(nil, fetchReq("t", 0, 0, 10))
	tests := map[string][]byte{
		"size 0":                frame(0),
		"size 1":                frame(1, 0),
		"negative size":         frame(-1, 0, 1),
		"min int size":          frame(-1<<31, 0, 1),
		"2 GiB size":            frame(1<<31-1, 0, 1),
		"over max request size": frame(1<<20+1, 0, 1),
		"unknown request type":  frame(2, 0, 9),
		"negative request type": frame(2, 0x80, 0),
		"trailing bytes":        append(frame(int32(len(fetch)-4+1)), append(fetch[4:], 0)...),
		"negative topic length": frame(4, 0, 1, 0xff, 0xff),
		"negative set size":     frame(2+2+1+4+4, append([]byte{0, 0, 0, 1, 't', 0, 0, 0, 0}, 0xff, 0xff, 0xff, 0xff)...),
		"negative count":        frame(4, 0, 2, 0x80, 0),
		"count beyond frame":    frame(4, 0, 2, 0x7f, 0xff),
		"negative max offsets":  wire.AppendRequest(nil, offsetsReq("t", 0, wire.LatestTime, -1)),
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			c := ts.dial(t)
			c.write(b)
			c.expectClosed()
			other := ts.dial(t)
			if code, _ := other.offsets("t", 0, wire.LatestTime, 1); code != wire.CodeNone {
				t.Fatalf("other client: code %v", code)
			}
		})
	}
}

// A client that goes away in the middle of a frame only loses that frame.
func TestTruncatedFrames(t *testing.T) {
	ts := startServer(t, nil)
	full := wire.AppendRequest(nil, produceReq("t", 0, wire.NewMessageSet(make([]byte, 20000))))
	for _, n := range []int{1, 3, 4, 5, 100, 9000, len(full) - 1} {
		c := ts.dial(t)
		c.write(full[:n])
		if err := c.c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		c.expectClosed()
	}
	c := ts.dial(t)
	if code, body := c.fetch("t", 0, 0, 100); code != wire.CodeNone || len(body) != 0 {
		t.Fatalf("after truncated produces: code %v, %d bytes", code, len(body))
	}
	c.write(full)
	c.sync()
	if code, body := c.fetch("t", 0, 0, 1<<20); code != wire.CodeNone || len(body) != len(full)-4-2-2-1-4-4 {
		t.Fatalf("after a whole produce: code %v, %d bytes", code, len(body))
	}
}
