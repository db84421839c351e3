package wire

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// An inflater for gzip payloads held whole in memory (RFC 1951, 1952), the
// consumer's half of Kafka 0.7's gzip codec.
//
// Deviation: compress/gzip would do, but it inflates through a 32 KB window
// that it copies out of, reads its input a byte at a time and builds its
// Huffman tables with an allocation per long code; at a batch of 50 small
// log lines per compressed message that is most of a consumer's time. A
// compressed message's payload is whole in memory and its expansion goes
// into one buffer, so the output itself is the window, input is read 64
// bits at a time, and tables are reused. It accepts exactly the streams
// compress/gzip accepts, with the same output (FuzzGunzipMatchesStdlib
// checks both against each other); gzip's CRC-32 and ISIZE are checked as
// compress/gzip checks them.
//
// The decoding loop follows the shape of the fast DEFLATE decoders
// (libdeflate's, zlib's inflate_fast): a 64-bit bit buffer refilled 8 bytes
// at a time without a branch, one table lookup per symbol whose entry says
// all the symbol means (literal byte, or length/distance base with its
// extra bits, and how many bits to consume), several literals per refill,
// and match copies in 8- or 16-byte words that may run past the match's
// end. It runs while at least 8 input bytes and fastOutMargin output bytes
// remain; the symbols near either end are decoded one at a time with every
// bound checked (inflater.slowSymbol).

// errInflate is a corrupt gzip or deflate stream.
var errInflate = errors.New("corrupt gzip stream")

// inflater holds one stream's reading state and the tables, which are
// reused from one stream to the next (it is pooled).
//
// The bit buffer b holds the next n bits of input, lowest first; the bits
// above n are zero or the input's bits that follow (the refill may load a
// byte it does not count, and load it again later), so a lookup past n
// reads what a longer code would need or zeros, never garbage, and a code
// is valid only if its length is at most n. A refill from 8 loaded bytes
// leaves all 64 bits of b the input's (n counts only its whole bytes), so
// after it consumes c bits the next 64-c bits of b are real input even
// where n is smaller: the fast loop relies on that for its preloaded
// lookups.
type inflater struct {
	lit     litTable
	dist    distTable
	clen    clenTable
	lengths [numLitLen + numDist]uint8

	in  []byte
	pos int    // next byte of in to load into b
	b   uint64 // bit buffer, next bit lowest
	n   uint   // valid bits in b
}

func newInflater() *inflater { return new(inflater) }

// refill loads input into b until it holds at least 56 bits or the input
// is used up. With 8 bytes left it is one load: the bytes that fit are
// added above the n valid bits, and n becomes 56-63.
func (f *inflater) refill() {
	if f.pos+8 <= len(f.in) {
		f.b |= binary.LittleEndian.Uint64(f.in[f.pos:]) << (f.n & 63)
		f.pos += int((63 - f.n) >> 3)
		f.n |= 56
		return
	}
	for f.n <= 56 && f.pos < len(f.in) {
		f.b |= uint64(f.in[f.pos]) << (f.n & 63)
		f.pos++
		f.n += 8
	}
}

// take returns the next k bits (k <= 32) and false when the input is
// shorter.
func (f *inflater) take(k uint) (uint32, bool) {
	if f.n < k {
		f.refill()
		if f.n < k {
			return 0, false
		}
	}
	v := uint32(f.b & (1<<k - 1))
	f.b >>= k
	f.n -= k
	return v, true
}

// bytePos is the offset in f.in of the first byte not wholly consumed.
func (f *inflater) bytePos() int { return f.pos - int(f.n>>3) }

// inflate expands the deflate stream at f.in[f.pos:] onto dst, within limit
// bytes, and leaves f.pos at the first byte after it. Back-references may
// reach back only into what this stream wrote (from len(dst) on).
func (f *inflater) inflate(dst []byte, limit int) ([]byte, error) {
	start := len(dst)
	for {
		// The block header (RFC 1951, 3.2.3).
		hdr, ok := f.take(3)
		if !ok {
			return nil, errInflate
		}
		var err error
		switch hdr >> 1 {
		case 0:
			dst, err = f.stored(dst, start, limit)
		case 1:
			dst, err = f.huffman(dst, start, limit, fixedLit, fixedDist)
		case 2:
			if err = f.readTables(); err == nil {
				dst, err = f.huffman(dst, start, limit, &f.lit, &f.dist)
			}
		default:
			err = errInflate
		}
		if err != nil {
			return nil, err
		}
		if hdr&1 == 1 {
			f.pos = f.bytePos()
			f.b, f.n = 0, 0
			return dst, nil
		}
	}
}

// stored copies a stored block (RFC 1951, section 3.2.4).
func (f *inflater) stored(dst []byte, start, limit int) ([]byte, error) {
	p := f.bytePos() // the rest of the current byte is skipped
	f.b, f.n = 0, 0
	if p+4 > len(f.in) {
		return nil, errInflate
	}
	size := int(binary.LittleEndian.Uint16(f.in[p:]))
	if uint16(size) != ^binary.LittleEndian.Uint16(f.in[p+2:]) {
		return nil, errInflate
	}
	p += 4
	if p+size > len(f.in) {
		return nil, errInflate
	}
	if len(dst)-start+size > limit {
		return nil, ErrTooLarge
	}
	dst = append(dst, f.in[p:p+size]...)
	f.pos = p + size
	return dst, nil
}

// readTables reads a dynamic block's code lengths and builds f.lit and
// f.dist (RFC 1951, section 3.2.7), with compress/flate's checks.
func (f *inflater) readTables() error {
	h, ok := f.take(14)
	if !ok {
		return errInflate
	}
	nlit := int(h&31) + 257
	ndist := int(h>>5&31) + 1
	nclen := int(h>>10) + 4
	if nlit > numLitLen || ndist > numDist {
		return errInflate
	}
	var cl [numCodeLen]uint8
	for i := range nclen {
		v, ok := f.take(3)
		if !ok {
			return errInflate
		}
		cl[codeOrder[i]] = uint8(v)
	}
	if !buildTable(f.clen[:], clenBits, cl[:], clenSym[:]) {
		return errInflate
	}
	ct := &f.clen
	lengths := f.lengths[:nlit+ndist]
	b, n, pos, in := f.b, f.n, f.pos, f.in
	for i := 0; i < len(lengths); {
		// A code length symbol and its extra bits take at most 7+7 bits.
		if pos <= len(in)-8 {
			b |= binary.LittleEndian.Uint64(in[pos:]) << (n & 63)
			pos += int((63 - n) >> 3)
			n |= 56
		} else {
			for n <= 56 && pos < len(in) {
				b |= uint64(in[pos]) << (n & 63)
				pos++
				n += 8
			}
		}
		e := ct[b&(1<<clenBits-1)]
		if e&entBad != 0 || uint(e&63) > n {
			return errInflate
		}
		saved := b
		b >>= e & 63
		n -= uint(e & 63)
		sym := e >> 16
		if sym < 16 {
			lengths[i] = uint8(sym)
			i++
			continue
		}
		rep := extra(saved, e)
		var v uint8
		switch sym {
		case 16:
			if i == 0 {
				return errInflate
			}
			rep, v = rep+3, lengths[i-1]
		case 17:
			rep += 3
		default:
			rep += 11
		}
		if i+rep > len(lengths) {
			return errInflate
		}
		for range rep {
			lengths[i] = v
			i++
		}
	}
	f.b, f.n, f.pos = b, n, pos
	if !buildTable(f.lit[:], litBits, lengths[:nlit], litLenSym[:]) || !buildTable(f.dist[:], distBits, lengths[nlit:], distSym[:]) {
		return errInflate
	}
	return nil
}

// extra returns the value of a symbol's extra bits: saved holds the
// symbol's code then its extra bits, e its table entry.
func extra(saved uint64, e uint32) int {
	return int(saved & (1<<(e&63) - 1) >> (e >> 8 & 15))
}

// huffman decodes one block's symbols with the given tables onto dst
// (RFC 1951, 3.2.5).
//
// The fast loop runs while 8 bytes of input can be loaded and out has
// fastOutMargin bytes of room. Each iteration starts with e, the primary
// entry for the next bits, already looked up, and refills b to at least 56
// counted bits: enough for up to four literals (15 + 3×11 bits, the later
// ones primary entries only) or one length and its distance (15+5 + 15+13
// bits). The lookup that ends an iteration is made after at most 48 bits
// were consumed since the refill, so from at least 16 real bits (see
// inflater), enough for a primary lookup. Near either end, slowSymbol decodes one symbol at a time
// with every bound checked.
func (f *inflater) huffman(dst []byte, start, limit int, lt *litTable, dt *distTable) ([]byte, error) {
	// The hot loop keeps the reader's state in locals.
	b, n, pos, in := f.b, f.n, f.pos, f.in
	const lmask, dmask = 1<<litBits - 1, 1<<distBits - 1
	o := len(dst)
	out := dst[:min(cap(dst), start+limit)] // past limit only by growOut, which checks it
	for {
		inEnd, outEnd := len(in)-8, len(out)-fastOutMargin
		if pos <= inEnd && o <= outEnd {
			b |= binary.LittleEndian.Uint64(in[pos:]) << (n & 63)
			pos += int((63 - n) >> 3)
			n |= 56
		}
		e := lt[b&lmask]
		for pos <= inEnd && o <= outEnd {
			b |= binary.LittleEndian.Uint64(in[pos:]) << (n & 63)
			pos += int((63 - n) >> 3)
			n |= 56
			if e&entSub != 0 {
				e = lt[e>>16+uint32(b>>litBits)&(1<<(e>>8&15)-1)]
			}
			if int32(e) < 0 {
				// A literal; literals come in runs: up to three more
				// from the primary table, which this refill covers.
				w := out[o : o+4] // one bounds check for the four
				b >>= e & 63
				n -= uint(e & 63)
				w[0] = byte(e >> 16)
				o++
				e = lt[b&lmask]
				if int32(e) < 0 {
					b >>= e & 63
					n -= uint(e & 63)
					w[1] = byte(e >> 16)
					o++
					e = lt[b&lmask]
					if int32(e) < 0 {
						b >>= e & 63
						n -= uint(e & 63)
						w[2] = byte(e >> 16)
						o++
						e = lt[b&lmask]
						if int32(e) < 0 {
							b >>= e & 63
							n -= uint(e & 63)
							w[3] = byte(e >> 16)
							o++
							e = lt[b&lmask]
						}
					}
				}
				continue
			}
			if e&(entEOB|entBad) != 0 {
				if e&entBad != 0 {
					return nil, errInflate
				}
				b >>= e & 63
				n -= uint(e & 63)
				f.b, f.n, f.pos = b, n, pos
				return out[:o], nil
			}
			// A length (with its extra bits), then a distance.
			saved := b
			b >>= e & 63
			n -= uint(e & 63)
			length := int(e>>16) + extra(saved, e)
			e = dt[b&dmask]
			if e&entSub != 0 {
				e = dt[e>>16+uint32(b>>distBits)&(1<<(e>>8&15)-1)]
			}
			if e&entBad != 0 {
				return nil, errInflate
			}
			saved = b
			b >>= e & 63
			n -= uint(e & 63)
			d := int(e>>16) + extra(saved, e)
			if d > o-start {
				return nil, errInflate
			}
			e = lt[b&lmask] // at most 48 bits consumed since the refill
			switch {
			case length <= outEnd-o && d >= 16:
				// Most matches: 16 bytes at a time, read before anything
				// they overlap is written (d >= 16), up to 15 bytes past
				// the match (there is room; they are overwritten later
				// or lie past the output). Inline: a call would spill
				// every register.
				m := (length + 15) &^ 15
				to, from := out[o:o+m], out[o-d:o-d+m]
				for len(to) >= 16 && len(from) >= 16 {
					w0, w1 := binary.LittleEndian.Uint64(from), binary.LittleEndian.Uint64(from[8:])
					binary.LittleEndian.PutUint64(to, w0)
					binary.LittleEndian.PutUint64(to[8:], w1)
					to, from = to[16:], from[16:]
				}
			case length <= outEnd-o && d >= 8:
				// The same in 8-byte words (d >= 8), up to 7 bytes past.
				m := (length + 7) &^ 7
				to, from := out[o:o+m], out[o-d:o-d+m]
				for len(to) >= 8 && len(from) >= 8 {
					binary.LittleEndian.PutUint64(to, binary.LittleEndian.Uint64(from))
					to, from = to[8:], from[8:]
				}
			case length <= outEnd-o:
				copyShort(out, o, d, length)
			default:
				// Near the end of out: copy exactly, growing it.
				if len(out)-o < length {
					if o-start+length > limit {
						return nil, ErrTooLarge
					}
					out = growOut(out, o, start, limit)
					outEnd = len(out) - fastOutMargin
				}
				copyMatch(out, o, d, length)
			}
			o += length
		}
		// Near the end of the input or of out.
		f.b, f.n, f.pos = b, n, pos
		var eob bool
		var err error
		if out, o, eob, err = f.slowSymbol(out, o, start, limit, lt, dt); err != nil {
			return nil, err
		}
		if eob {
			return out[:o], nil
		}
		b, n, pos = f.b, f.n, f.pos
	}
}

// slowSymbol decodes one symbol at o with every bound checked, growing out
// when it is full (up to limit bytes from start). It reports the end of
// the block.
func (f *inflater) slowSymbol(out []byte, o, start, limit int, lt *litTable, dt *distTable) ([]byte, int, bool, error) {
	f.refill()
	e := lt[f.b&(1<<litBits-1)]
	if e&entSub != 0 {
		e = lt[e>>16+uint32(f.b>>litBits)&(1<<(e>>8&15)-1)]
	}
	if e&entBad != 0 || uint(e&63) > f.n {
		return nil, 0, false, errInflate
	}
	saved := f.b
	f.b >>= e & 63
	f.n -= uint(e & 63)
	switch {
	case int32(e) < 0:
		if o == len(out) {
			if o-start >= limit {
				return nil, 0, false, ErrTooLarge
			}
			out = growOut(out, o, start, limit)
		}
		out[o] = byte(e >> 16)
		return out, o + 1, false, nil
	case e&entEOB != 0:
		return out, o, true, nil
	}
	length := int(e>>16) + extra(saved, e)
	f.refill()
	e = dt[f.b&(1<<distBits-1)]
	if e&entSub != 0 {
		e = dt[e>>16+uint32(f.b>>distBits)&(1<<(e>>8&15)-1)]
	}
	if e&entBad != 0 || uint(e&63) > f.n {
		return nil, 0, false, errInflate
	}
	saved = f.b
	f.b >>= e & 63
	f.n -= uint(e & 63)
	d := int(e>>16) + extra(saved, e)
	if d > o-start {
		return nil, 0, false, errInflate
	}
	if len(out)-o < length {
		if o-start+length > limit {
			return nil, 0, false, ErrTooLarge
		}
		out = growOut(out, o, start, limit)
	}
	copyMatch(out, o, d, length)
	return out, o + length, false, nil
}

// copyMatch writes out[o:o+length] from d bytes back, exactly (RFC 1951,
// 3.2.3: the copy may overlap what it writes, repeating the last d bytes).
func copyMatch(out []byte, o, d, length int) {
	if d >= length {
		copy(out[o:o+length], out[o-d:])
		return
	}
	// The run repeats the last d bytes; copy them in doubling chunks.
	for done := 0; done < length; {
		done += copy(out[o+done:o+length], out[o-d:o+done])
	}
}

// chunkStep[d] is, for d < 8, the smallest multiple of d that is at least
// 8: once the first 8 bytes of a match are written, out[p] =
// out[p-chunkStep[d]] holds for the rest of it, a distance that 8-byte
// words can copy from.
var chunkStep = [8]int{0, 8, 8, 9, 8, 10, 12, 14}

// copyShort writes out[o:o+length] from d bytes back, 1 <= d < 8 (an
// overlapping copy that repeats the last d bytes), in 8-byte words: it may
// write up to 15 bytes past o+length (the caller leaves that room). It
// writes the first 8 bytes one by one, and then copies words from
// chunkStep[d] back.
func copyShort(out []byte, o, d, length int) {
	if d == 1 {
		v := uint64(out[o-1]) * 0x0101010101010101
		for i := 0; i < length; i += 8 {
			binary.LittleEndian.PutUint64(out[o+i:], v)
		}
		return
	}
	w := out[o-d : o+8]
	for i := d; i < len(w); i++ {
		w[i] = w[i-d]
	}
	s := o - chunkStep[d]
	for i := 8; i < length; i += 8 {
		binary.LittleEndian.PutUint64(out[o+i:], binary.LittleEndian.Uint64(out[s+i:]))
	}
}

// growOut returns out (full up to o) with room for at least 258 more bytes
// (fewer only at limit, counted from start).
func growOut(out []byte, o, start, limit int) []byte {
	want := min(max(2*(o-start), o-start+4096), limit)
	grown := make([]byte, start+want)
	copy(grown, out[:o])
	return grown
}

// Gzip header flags (RFC 1952, section 2.3.1).
const (
	gzipHCRC    = 1 << 1
	gzipExtra   = 1 << 2
	gzipName    = 1 << 3
	gzipComment = 1 << 4
)

// gunzip appends the expansion of every member of a gzip stream to dst,
// checking each member's CRC-32 and ISIZE, within limit bytes. Like
// compress/gzip, it accepts zero or more members and nothing after them.
func (f *inflater) gunzip(dst, payload []byte, limit int) ([]byte, error) {
	start := len(dst)
	f.in, f.pos = payload, 0
	defer func() { f.in = nil }()
	for first := true; first || f.pos < len(payload); first = false {
		p, ok := gzipHeader(payload, f.pos)
		if !ok {
			return nil, errInflate
		}
		f.pos, f.b, f.n = p, 0, 0
		member := len(dst)
		var err error
		if dst, err = f.inflate(dst, limit-(member-start)); err != nil {
			return nil, err
		}
		if f.pos+8 > len(payload) {
			return nil, errInflate
		}
		out := dst[member:]
		if crc32.ChecksumIEEE(out) != binary.LittleEndian.Uint32(payload[f.pos:]) ||
			uint32(len(out)) != binary.LittleEndian.Uint32(payload[f.pos+4:]) {
			return nil, errInflate
		}
		f.pos += 8
	}
	return dst, nil
}

// gzipHeader checks the member header at p[i:] and returns where its
// deflate stream starts.
func gzipHeader(p []byte, i int) (int, bool) {
	h := i
	if i+10 > len(p) || p[i] != 0x1f || p[i+1] != 0x8b || p[i+2] != 8 {
		return 0, false
	}
	flg := p[i+3]
	i += 10
	if flg&gzipExtra != 0 {
		if i+2 > len(p) {
			return 0, false
		}
		i += 2 + int(binary.LittleEndian.Uint16(p[i:]))
		if i > len(p) {
			return 0, false
		}
	}
	for _, f := range []byte{gzipName, gzipComment} {
		if flg&f == 0 {
			continue
		}
		// compress/gzip reads at most 512 bytes, the zero included.
		end := -1
		for j := i; j < len(p) && j < i+512; j++ {
			if p[j] == 0 {
				end = j
				break
			}
		}
		if end < 0 {
			return 0, false
		}
		i = end + 1
	}
	if flg&gzipHCRC != 0 {
		if i+2 > len(p) || uint16(crc32.ChecksumIEEE(p[h:i])) != binary.LittleEndian.Uint16(p[i:]) {
			return 0, false
		}
		i += 2
	}
	return i, true
}
