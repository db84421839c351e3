package consumer_test

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/producer"
)

// TestCompressedSetsReuseOneBuffer: the inner messages of compressed sets
// are expanded into a buffer the SimpleConsumer reuses at its next request
// (no allocation per message or per set once it has grown), so a payload is
// valid until the next request, as the set's Bytes are; a Clone's payloads
// stay valid after it; the sets of one MULTIFETCH may be iterated in
// separate goroutines (run with -race).
func TestCompressedSetsReuseOneBuffer(t *testing.T) {
	for _, codec := range []wire.Codec{wire.CodecGzip, wire.CodecSnappy} {
		t.Run(codec.String(), func(t *testing.T) {
			f := start(t, 2)
			want := map[wire.Partition][]string{}
			for part := range wire.Partition(2) {
				p := f.producer(func(c *producer.Config) {
					c.CompressionCodec = codec
					c.Cluster = &partitionsCluster{addr: f.broker.Addr, parts: []wire.BrokerPartition{{Broker: 0, Partition: part}}}
				})
				for b := range 4 {
					var batch []producer.Message
					for i := range 50 {
						v := fmt.Sprintf("p%d-b%d-m%02d %s", part, b, i, bytes.Repeat([]byte("log "), 40))
						want[part] = append(want[part], v)
						batch = append(batch, producer.Message{Value: []byte(v)})
					}
					if err := p.Send(t.Context(), "z", batch...); err != nil {
						t.Fatal(err)
					}
				}
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
				wait.For(t, "every message to be readable", func() bool {
					return len(f.readAll("z", part, 0, 1<<20)) == len(want[part])
				})
			}

			reqs := []consumer.FetchRequest{{Topic: "z", Partition: 0}, {Topic: "z", Partition: 1}}
			read := func(concurrent bool) (sets []consumer.MessageSet, got [2][][]byte) {
				sets, err := f.c.MultiFetch(t.Context(), reqs...)
				if err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				for i := range sets {
					iterate := func() {
						it := sets[i].Iterator()
						for it.Next() {
							got[i] = append(got[i], it.Payload())
						}
						if err := it.Err(); err != nil {
							t.Error(err)
						}
					}
					if concurrent {
						wg.Go(iterate)
					} else {
						iterate()
					}
				}
				wg.Wait()
				return sets, got
			}
			check := func(what string, got [2][][]byte) {
				t.Helper()
				for part := range 2 {
					if len(got[part]) != len(want[wire.Partition(part)]) {
						t.Fatalf("%s: partition %d: %d messages, want %d", what, part, len(got[part]), len(want[wire.Partition(part)]))
					}
					for i, p := range got[part] {
						if string(p) != want[wire.Partition(part)][i] {
							t.Fatalf("%s: partition %d message %d = %.20q, want %.20q", what, part, i, p, want[wire.Partition(part)][i])
						}
					}
				}
			}

			sets, first := read(true)
			check("first read", first)
			kept := [2]consumer.MessageSet{sets[0].Clone(), sets[1].Clone()}
			var fromClone [2][][]byte
			for i := range kept {
				for it := kept[i].Iterator(); it.Next(); {
					fromClone[i] = append(fromClone[i], it.Payload())
				}
			}
			// The next request reuses the buffer the first expanded into
			// (grown to fit at the first reset): the second read's payloads
			// sit where the first's did.
			_, second := read(true)
			check("second read", second)
			// With one processor no goroutine expands ahead (ahead.go), so
			// the pieces are handed out in the same order every time.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			_, third := read(false)
			check("third read", third)
			_, fourth := read(false)
			check("fourth read", fourth)
			if &third[0][0][0] != &fourth[0][0][0] || &third[1][0][0] != &fourth[1][0][0] {
				t.Error("the fourth read did not expand into the buffer the third used")
			}
			check("clones after later requests", fromClone)

			// Bytes allocated per MULTIFETCH (by the whole process, the
			// broker's side included) stay well below what the 8 sets
			// expand to: nothing is allocated per message or per set.
			expanded := 0
			for _, p := range third {
				for _, m := range p {
					expanded += wire.Overhead + len(m)
				}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			const runs = 5
			for range runs {
				sets, err := f.c.MultiFetch(t.Context(), reqs...)
				if err != nil {
					t.Fatal(err)
				}
				for i := range sets {
					for it := sets[i].Iterator(); it.Next(); {
					}
				}
			}
			runtime.ReadMemStats(&after)
			if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > uint64(expanded/8) && !raceEnabled {
				t.Errorf("%d bytes allocated per MULTIFETCH of 400 compressed messages (%d bytes expanded)", perRun, expanded)
			}
		})
	}
}
