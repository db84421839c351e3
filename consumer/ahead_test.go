package consumer_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/netdb11/kafka/producer"
)

// TestExpandAhead: a fetch of many compressed messages, whose later ones a
// goroutine expands while the iterator reads the earlier ones, gives the
// same messages and next offsets as expanding them one by one on one
// processor; an iterator abandoned after one message, followed by the next
// request, races with nothing (run with -race) and loses nothing; a
// corrupt inner message in the later half stops the iteration at the same
// message with the same error either way.
func TestExpandAhead(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one processor: sets are never expanded ahead")
	}
	for _, codec := range []wire.Codec{wire.CodecGzip, wire.CodecSnappy} {
		t.Run(codec.String(), func(t *testing.T) {
			f := start(t, 1)
			p := f.producer(func(c *producer.Config) { c.CompressionCodec = codec })
			lines := logLines(2000, 200)
			for b := 0; b < len(lines); b += 50 {
				batch := make([]producer.Message, 50)
				for i := range batch {
					batch[i].Value = lines[b+i]
				}
				if err := p.Send(t.Context(), "a", batch...); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			wait.For(t, "every message to be readable", func() bool {
				return len(f.readAll("a", 0, 0, 1<<20)) == len(lines)
			})

			type got struct {
				payload string
				next    wire.Offset
			}
			read := func(set consumer.MessageSet) (out []got, err error) {
				it := set.Iterator()
				for it.Next() {
					out = append(out, got{string(it.Payload()), it.NextOffset()})
				}
				return out, it.Err()
			}
			fetch := func() consumer.MessageSet {
				set, err := f.c.Fetch(t.Context(), "a", 0, 0, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				return set
			}
			ahead, err := read(fetch())
			if err != nil || len(ahead) != len(lines) {
				t.Fatalf("read %d of %d: %v", len(ahead), len(lines), err)
			}
			for i, g := range ahead {
				if g.payload != string(lines[i]) {
					t.Fatalf("message %d = %.30q", i, g.payload)
				}
			}
			prev := runtime.GOMAXPROCS(1)
			one, err := read(fetch())
			runtime.GOMAXPROCS(prev)
			if err != nil || fmt.Sprint(one) != fmt.Sprint(ahead) {
				t.Fatalf("one processor: %d messages, %v; differ: %v", len(one), err, fmt.Sprint(one) != fmt.Sprint(ahead))
			}

			// Abandoned after one message; the next request waits for the
			// goroutine before reusing what it wrote into.
			for range 5 {
				it := fetch().Iterator()
				if !it.Next() {
					t.Fatal(it.Err())
				}
			}
			if again, err := read(fetch()); err != nil || fmt.Sprint(again) != fmt.Sprint(ahead) {
				t.Fatalf("after abandoned iterators: %d messages, %v", len(again), err)
			}

			// A corrupt inner message in the last compressed message (the
			// helper's share), re-wrapped so that the wrapper's CRC holds.
			set := fetch().Clone()
			shallow := wire.NewIterator(set.Bytes, 0)
			var lastAt, lastEnd wire.Offset
			for shallow.Next() {
				lastAt, lastEnd = shallow.Offset(), shallow.NextOffset()
			}
			inner := wire.NewMessageSet(lines[len(lines)-50:]...)
			inner[len(inner)-1] ^= 1
			bad, err := wire.AppendCompressed(append([]byte(nil), set.Bytes[:lastAt]...), codec, inner)
			if err != nil {
				t.Fatal(err)
			}
			bad = append(bad, set.Bytes[lastEnd:]...)
			// Once on its own (no arena: expanded in order, one by one),
			// once as a SimpleConsumer's set (its arena, expanded ahead).
			want, wantErr := read(consumer.MessageSet{Topic: "a", Bytes: bad})
			live := fetch()
			live.Bytes = bad
			gotMsgs, gotErr := read(live)
			if wantErr == nil || fmt.Sprint(gotMsgs) != fmt.Sprint(want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("corrupt inner message: %d messages, %v; expanded in order: %d, %v", len(gotMsgs), gotErr, len(want), wantErr)
			}
			if len(want) != len(lines)-1 {
				t.Fatalf("stopped after %d messages, want %d", len(want), len(lines)-1)
			}
		})
	}
}
