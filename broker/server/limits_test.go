package server

import (
	"bytes"
	"encoding/binary"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest/wait"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func (s *Server) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// memSampler records the peak heap in use while it runs.
type memSampler struct {
	stop chan struct{}
	done chan struct{}
	base uint64
	peak atomic.Uint64
}

func startMemSampler() *memSampler {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s := &memSampler{stop: make(chan struct{}), done: make(chan struct{}), base: m.HeapInuse}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > s.peak.Load() {
				s.peak.Store(m.HeapInuse)
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// growth stops the sampler and returns the peak growth over the base.
func (s *memSampler) growth() int64 {
	close(s.stop)
	<-s.done
	return int64(s.peak.Load()) - int64(s.base)
}

// Size prefixes up to max.socket.request.bytes are accepted, but the frame
// buffer grows only with the bytes that arrive: twenty clients announcing
// 100 MB and sending 10 bytes make the broker allocate almost nothing.
func TestLargeSizePrefixAllocatesOnlyWhatArrives(t *testing.T) {
	ts := startServer(t, nil) // max.socket.request.bytes = 100 MB
	before := totalAlloc()
	for range 20 {
		c := ts.dial(t)
		c.write(binary.BigEndian.AppendUint32(nil, 100<<20-1))
		c.write(make([]byte, 10))
		if err := c.c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		c.expectClosed() // the broker read the prefix and gave up at EOF
	}
	grew := totalAlloc() - before
	t.Logf("allocated %d KB in all", grew>>10)
	if grew > 16<<20 {
		t.Fatalf("the broker allocated %d MB for 20 announced 100 MB frames", grew>>20)
	}
}

// Hundreds of idle connections cost little, and the broker keeps serving.
func TestManyIdleConnections(t *testing.T) {
	ts := startServer(t, nil)
	mem := startMemSampler()
	const idle = 300
	for i := range idle {
		c := ts.dial(t)
		if i%3 == 0 {
			c.write([]byte{0, 0}) // half a size prefix, then silence
		}
	}
	wait.Within(t, 10*time.Second, "all connections accepted", func() bool { return ts.srv.connCount() >= idle })
	c := ts.dial(t)
	set := wire.NewMessageSet([]byte("still served"))
	c.produce("t", 0, set)
	if code, body := c.fetch("t", 0, 0, 100); code != wire.CodeNone || !bytes.Equal(body, set) {
		t.Fatalf("code %v, % x", code, body)
	}
	// Each idle connection holds its 8 KiB read buffer and little else.
	grew := mem.growth()
	t.Logf("heap grew by %d KB", grew>>10)
	if grew > idle*32<<10 {
		t.Fatalf("heap grew by %d KB for %d idle connections", grew>>10, idle)
	}
}

// A flood of tiny pipelined requests is answered in order, with bounded
// memory, while other clients are served.
func TestFloodOfTinyRequests(t *testing.T) {
	ts := startServer(t, nil)
	set := wire.NewMessageSet([]byte("x"))
	ts.dial(t).produce("t", 0, set)
	c := ts.dial(t)
	const n = 20000
	mem := startMemSampler()
	before := totalAlloc()
	writeErr := make(chan error, 1)
	go func() {
		var buf []byte
		for i := range n {
			if i%2 == 0 {
				buf = wire.AppendRequest(buf, fetchReq("t", 0, 0, 100))
			} else {
				buf = wire.AppendRequest(buf, offsetsReq("t", 0, wire.LatestTime, 1))
			}
			if len(buf) > 4096 || i == n-1 {
				if _, err := c.c.Write(buf); err != nil {
					writeErr <- err
					return
				}
				buf = buf[:0]
			}
		}
		writeErr <- nil
	}()
	other := ts.dial(t)
	if code, body := other.fetch("t", 0, 0, 100); code != wire.CodeNone || !bytes.Equal(body, set) {
		t.Fatalf("other client: code %v", code)
	}
	for i := range n {
		code, body := c.response()
		want := set
		if i%2 == 1 {
			want = wire.AppendOffsetsResponse(nil, []wire.Offset{wire.Offset(len(set))})[6:]
		}
		if code != wire.CodeNone || !bytes.Equal(body, want) {
			t.Fatalf("response %d: code %v, % x", i, code, body)
		}
	}
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	grew, per := mem.growth(), (totalAlloc()-before)/n
	t.Logf("heap grew by %d KB; %d bytes allocated per request", grew>>10, per)
	if grew > 16<<20 {
		t.Fatalf("heap grew by %d MB during the flood", grew>>20)
	}
	if per > 4096 {
		t.Fatalf("%d bytes allocated per tiny request", per)
	}
}

// A client that asks for much and reads nothing stalls only itself: the
// broker holds no response bytes in memory, whatever the fetch path.
func TestUnreadResponsesBoundMemory(t *testing.T) {
	for _, path := range fetchPaths {
		t.Run(path.name, func(t *testing.T) {
			ts := startServer(t, func(c *Config, _ *log.Config) { c.UseSendfile = path.useSendfile })
			set := wire.NewMessageSet(payloads(64, 1000, "m")...)
			ts.dial(t).produce("t", 0, set)
			mem := startMemSampler()
			hog := ts.dial(t)
			const n = 1000 // 64 MB of responses
			var buf []byte
			for range n {
				buf = wire.AppendRequest(buf, fetchReq("t", 0, 0, 1<<20))
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				hog.c.Write(buf)
			}()
			other := ts.dial(t)
			for range 20 {
				if code, body := other.fetch("t", 0, 0, 1<<20); code != wire.CodeNone || !bytes.Equal(body, set) {
					t.Fatalf("other client: code %v, %d bytes", code, len(body))
				}
			}
			for i := range n {
				if code, body := hog.response(); code != wire.CodeNone || !bytes.Equal(body, set) {
					t.Fatalf("response %d: code %v, %d bytes", i, code, len(body))
				}
			}
			wg.Wait()
			// The test's own reads allocate about 64 KB each and are
			// collected as it goes; the broker adds nothing per response.
			grew := mem.growth()
			t.Logf("heap grew by %d KB", grew>>10)
			if grew > 24<<20 {
				t.Fatalf("heap grew by %d MB", grew>>20)
			}
		})
	}
}
