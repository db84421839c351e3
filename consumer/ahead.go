package consumer

import (
	"encoding/binary"
	"sync"

	"github.com/netdb11/kafka/broker/wire"
)

// minAhead is the fewest compressed messages in a set for which an iterator
// has a goroutine expand some of them.
const minAhead = 4

// ahead shares the expansion of a fetched set's compressed messages between
// the iterating goroutine and a helper, so that a consumer of compressed
// sets uses a second core (the broker, which only calls sendfile, leaves it
// idle). The two take messages from opposite ends: the iterator from the
// first, in order, as it reaches them; the helper from the last, backwards.
// Each claims one message at a time under mu, so they meet wherever their
// speeds put the boundary, and once the iterator reaches the helper's
// messages it waits at most for the one the helper is expanding. The
// helper's expansions go into the consumer's arena, whose reset waits for
// it.
type ahead struct {
	at   []wire.Offset // offsets of the compressed messages, ascending
	done chan struct{} // closed when the helper has finished

	mu sync.Mutex
	lo int // messages before lo are the iterator's
	hi int // messages from hi on are the helper's

	sets [][]byte // the helper's expansions; nil: failed (the iterator expands it and reports the error)
	next int      // the iterator's lookup position (its goroutine only)
}

// wrapper is a compressed message of the set: where it is, its codec and
// its payload.
type wrapper struct {
	at      wire.Offset
	codec   wire.Codec
	payload []byte
}

// startAhead starts a helper expanding compressed messages of set (whose
// first byte is at offset base) from the last one backwards, and returns
// nil when there are too few to be worth it. It reads only the size, magic
// and attributes of each message: a message's CRC is checked by the
// iterator before an expansion of it is used, and the decoders are safe on
// any bytes.
//
// Deviation: 0.7's iterator expands each compressed message in the
// iterating thread. The helper lets a consumer of compressed sets use a
// second core, which the broker (sendfile) leaves idle; the messages,
// offsets and errors are the same either way (TestExpandAhead).
func startAhead(a *arena, set []byte, base wire.Offset) *ahead {
	var ws []wrapper
	for pos := 0; pos+wire.SizeLen <= len(set); {
		size := int(int32(binary.BigEndian.Uint32(set[pos:])))
		end := pos + wire.SizeLen + size
		if size < wire.HeaderLenV0 || end > len(set) || end < pos {
			break
		}
		if set[pos+wire.SizeLen] == wire.MagicV1 && size >= wire.HeaderLenV1 {
			if c := wire.Codec(set[pos+wire.SizeLen+wire.MagicLen] & wire.CodecMask); c != wire.CodecNone {
				ws = append(ws, wrapper{base + wire.Offset(pos), c, set[pos+wire.CompressedHeaderLen : end]})
			}
		}
		pos = end
	}
	if len(ws) < minAhead {
		return nil
	}
	h := &ahead{done: make(chan struct{}), at: make([]wire.Offset, len(ws)), sets: make([][]byte, len(ws)), hi: len(ws)}
	for i, w := range ws {
		h.at[i] = w.at
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(h.done)
		for !a.stop.Load() { // stop: the set is no longer valid (the consumer sent its next request)
			h.mu.Lock()
			if h.hi <= h.lo {
				h.mu.Unlock()
				return
			}
			h.hi--
			i := h.hi
			h.mu.Unlock()
			w := ws[i]
			n := wire.DecompressedLen(w.codec, w.payload, wire.DefaultDecompressLimit)
			if out, err := wire.AppendDecompressed(a.alloc(n)[:0], w.codec, w.payload, wire.DefaultDecompressLimit); err == nil {
				h.sets[i] = out
			}
		}
	}()
	return h
}

// expanded is the iterator's wire.DeepIterator.SetExpanded function: for a
// message the helper has not taken, the iterator takes it (and expands it
// itself); for one of the helper's, it waits for the helper to finish.
func (h *ahead) expanded(at wire.Offset, _ wire.Message) ([]byte, bool) {
	for h.next < len(h.at) && h.at[h.next] < at {
		h.next++
	}
	if h.next == len(h.at) || h.at[h.next] != at {
		return nil, false
	}
	i := h.next
	h.mu.Lock()
	mine := i < h.hi
	if mine {
		h.lo = max(h.lo, i+1)
	}
	h.mu.Unlock()
	if mine {
		return nil, false
	}
	<-h.done
	return h.sets[i], h.sets[i] != nil
}
