package log

import (
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/netdb11/kafka/broker/wire"
)

// concurrentSize is the payload size of message seq in the concurrency test.
func concurrentSize(seq uint64) int { return 8 + int(seq*31%300) }

// TestReadersWriterFlusherAndRetentionConcurrently runs one writer, a
// flusher, retention and several readers on one log at once (under -race it
// checks the copy-on-write table and the segment reference counts). Readers
// check every message they see; a reader whose offset was deleted restarts
// at the new start.
func TestReadersWriterFlusherAndRetentionConcurrently(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.FileSize = 8 << 10
	cfg.FlushInterval = 7
	cfg.RetentionSize = 64 << 10
	l := getLog(t, openManager(t, cfg), "t", 0)

	const total = 6000
	var writerDone atomic.Bool
	half := make(chan struct{}) // closed when the writer is half way
	var wg sync.WaitGroup
	wg.Go(func() {
		half := half
		defer writerDone.Store(true)
		var set []byte
		for seq := uint64(0); seq < total; {
			set = set[:0]
			for range 1 + seq%5 {
				set = wire.AppendMessage(set, payload(seq, concurrentSize(seq)))
				seq++
			}
			if _, err := l.Append(set); err != nil {
				t.Error(err)
				return
			}
			if half != nil && seq >= total/2 {
				if _, err := l.DeleteOldSegments(); err != nil {
					t.Error(err)
				}
				close(half)
				half = nil
			}
		}
		if err := l.Flush(); err != nil {
			t.Error(err)
		}
	})
	wg.Go(func() {
		for !writerDone.Load() {
			if err := l.Flush(); err != nil {
				t.Error(err)
				return
			}
			if _, err := l.DeleteOldSegments(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var restarts atomic.Int64
	for r := range 4 {
		wg.Go(func() {
			fetch := 100 + r*997
			off := l.StartOffset()
			if r == 3 {
				<-half // a late reader: offset 0 is gone by now
			}
			var buf []byte
			var last uint64
			seen := false
			for {
				done := writerDone.Load()
				region, err := l.Read(off, fetch)
				var oor *OffsetOutOfRangeError
				if errors.As(err, &oor) && off < oor.Start {
					restarts.Add(1)
					off, seen = oor.Start, false
					continue
				}
				if err != nil {
					t.Errorf("reader %d: Read(%d): %v", r, off, err)
					return
				}
				if region.Len == 0 {
					if done && off == l.EndOffset() {
						if !seen || last != total-1 {
							t.Errorf("reader %d: ended at message %d (seen %v), want %d", r, last, seen, total-1)
						}
						return
					}
					runtime.Gosched()
					continue
				}
				buf, err = region.AppendTo(buf[:0])
				region.Release()
				if err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
				it := wire.NewIterator(buf, off)
				for it.Next() {
					p := it.Message().Payload
					seq := binary.BigEndian.Uint64(p)
					if seen && seq != last+1 || len(p) != concurrentSize(seq) || string(p) != string(payload(seq, len(p))) {
						t.Errorf("reader %d: at %d message %d after %d is wrong", r, it.Offset(), seq, last)
						return
					}
					last, seen = seq, true
				}
				if err := it.Err(); err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
				if need, partial := it.Partial(); partial && it.ValidBytes() == 0 && need > fetch {
					fetch = need // as a consumer whose fetch size is too small would have to
				}
				off += wire.Offset(it.ValidBytes())
			}
		})
	}
	wg.Wait()
	if l.StartOffset() == 0 {
		t.Fatal("retention deleted nothing; the test did not exercise it")
	}
	if restarts.Load() == 0 {
		t.Fatal("no reader restarted after retention; the test did not exercise it")
	}
	t.Logf("log range [%d, %d], %d reader restarts after retention", l.StartOffset(), l.EndOffset(), restarts.Load())
}
