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

// Table geometry: a code of at most litBits (distBits) bits is found with
// one lookup in the primary table, a longer one through a subtable.
const (
	litBits    = 11
	distBits   = 8
	clenBits   = 7
	maxCodeLen = 15
	numLitLen  = 286 // symbols 286 and 287 of the fixed code are invalid
	numDist    = 30
	numCodeLen = 19

	// litTableLen and distTableLen hold the primary table and, at worst,
	// a subtable of 2^(15-primary) entries per symbol.
	litTableLen  = 1<<litBits + 288<<(maxCodeLen-litBits)
	distTableLen = 1<<distBits + 32<<(maxCodeLen-distBits)

	// fastOutMargin is the output room the fast loop needs at the top of
	// an iteration (four literals) and beyond a match's end (its word
	// copies write up to 15 bytes past it); each match checks its room.
	fastOutMargin = 16
)

// A table entry is a uint32 that says all a code means:
//
//	bit 31      entLit: a literal, whose byte is bits 16-23
//	bits 16-30  otherwise the value: a length's base (RFC 1951, 3.2.5), a
//	            distance's base, a subtable's offset in the table, or the
//	            symbol (code length code)
//	bit 14      entBad: these bits start no valid code (an unused code
//	            of an empty or single-code table, symbols 286-287 and 30-31
//	            of the fixed codes)
//	bit 13      entEOB: end of block (symbol 256)
//	bit 12      entSub: a link to a subtable, whose index width is bits 8-11
//	bits 8-11   the code's length
//	bits 0-7    the code's length plus its symbol's extra bits: how far
//	            the bit buffer advances for the whole symbol
//
// So a length is base + (the consumed bits, masked to bits 0-7's count,
// shifted right by the code's length). A primary table is indexed by the
// next litBits (distBits) bits of input, lowest first (deflate sends codes
// from their highest bit, so entries sit at bit-reversed indices), and each
// code of n bits fills the 2^(primary-n) entries that start with it. A code
// longer than primary has its entry in the subtable its first primary bits
// link to, indexed by the following bits.
const (
	entLit = 1 << 31
	entBad = 1 << 14
	entEOB = 1 << 13
	entSub = 1 << 12
)

// Base values and extra bits of the length symbols 257..285 and of the
// distance symbols 0..29 (RFC 1951, section 3.2.5).
var (
	lenBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lenExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtr = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	// codeOrder is the order of the code length code's lengths (3.2.7).
	codeOrder = [numCodeLen]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// litLenSym, distSym and clenSym give each symbol's entry but for its
// code's length, which build adds.
var litLenSym, distSym, clenSym = symEntries()

func symEntries() (lit [288]uint32, dist [32]uint32, clen [numCodeLen]uint32) {
	for s := range 256 {
		lit[s] = entLit | uint32(s)<<16
	}
	lit[256] = entEOB
	for s := 257; s < 286; s++ {
		lit[s] = uint32(lenBase[s-257])<<16 | uint32(lenExtra[s-257])
	}
	lit[286], lit[287] = entBad, entBad
	for s := range numDist {
		dist[s] = uint32(distBase[s])<<16 | uint32(distExtr[s])
	}
	dist[30], dist[31] = entBad, entBad
	for s := range clen {
		clen[s] = uint32(s) << 16
	}
	// The repeat codes' extra bits (RFC 1951, 3.2.7).
	clen[16] |= 2
	clen[17] |= 3
	clen[18] |= 7
	return
}

// Decoding tables: 2^primary entries, then the subtables. As arrays, their
// primary lookups need no bounds check.
type (
	litTable  [litTableLen]uint32
	distTable [distTableLen]uint32
	clenTable [1 << clenBits]uint32
)

// buildTable makes t, of this primary width, decode the canonical code (RFC 1951, 3.2.2) with these code
// lengths, sym giving each symbol's entry. Like compress/flate it accepts
// only complete codes, an empty one (any use of it is an error) and a
// single code of length 1 (zlib writes those).
//
// Codes are placed in order of length: the primary table starts as 2^lo
// entries (lo the shortest length) and doubles, by one copy, before each
// longer length, so that a short code fills its 2^(primary-n) entries by
// those copies rather than one store at a time. In bit-reversed form the
// next code of length n+1 has the same value as the next one of length n
// would have had, so one reversed counter walks all the codes.
func buildTable(t []uint32, primary int, lengths []uint8, sym []uint32) bool {
	// Counted in four sets, so that a run of equal lengths is not one
	// chain of increments through memory.
	var counts [4][maxCodeLen + 1]int
	j := 0
	for ; j+4 <= len(lengths); j += 4 {
		counts[0][lengths[j]&15]++
		counts[1][lengths[j+1]&15]++
		counts[2][lengths[j+2]&15]++
		counts[3][lengths[j+3]&15]++
	}
	for ; j < len(lengths); j++ {
		counts[0][lengths[j]&15]++
	}
	var count [maxCodeLen + 1]int
	for n := range count {
		count[n] = counts[0][n] + counts[1][n] + counts[2][n] + counts[3][n]
	}
	lo, hi := 0, 0
	for n := 1; n <= maxCodeLen; n++ {
		if count[n] != 0 {
			if lo == 0 {
				lo = n
			}
			hi = n
		}
	}
	size := 1 << primary
	if hi == 0 {
		fillBad(t[:size])
		return true
	}
	code := 0
	for n := 1; n <= hi; n++ {
		code = code<<1 + count[n]
	}
	single := code == 1 && hi == 1
	if code != 1<<hi && !single {
		return false
	}
	// Symbols sorted by (length, symbol): the canonical order, after the
	// symbols without a code (sorted without a branch on the length).
	var start [maxCodeLen + 1]int
	for n := 1; n <= maxCodeLen; n++ {
		start[n] = start[n-1] + count[n-1]
	}
	var sorted [288]uint16
	for s, n := range lengths {
		k := start[n&15]
		sorted[k] = uint16(s)
		start[n&15] = k + 1
	}
	i := count[0] // the next symbol in sorted
	// start[n] is now the end of length n's symbols, the start of n+1's.
	end := 1 << min(lo, primary)
	if single {
		fillBad(t[:end]) // the code 1 has no symbol
	} else {
		clear(t[:end]) // entries no short code takes become links
	}
	rev := 0 // the reversed counter
	for n := lo; n <= primary; n++ {
		for ; i < start[n]; i++ {
			t[rev] = sym[sorted[i]] + uint32(n)<<8 + uint32(n)
			rev = nextReversed(rev, n)
		}
		if n < primary {
			copy(t[end:2*end], t[:end])
			end *= 2
		}
	}
	// Codes longer than primary: a subtable of 2^(hi-primary) entries per
	// primary prefix, linked from the primary entry (which a complete code
	// leaves 0 until then).
	sub := size
	subBits := uint(max(hi-primary, 0))
	for n := primary + 1; n <= hi; n++ {
		for ; i < start[n]; i++ {
			link := t[rev&(size-1)]
			if link == 0 {
				link = uint32(sub)<<16 | entSub | uint32(subBits)<<8
				t[rev&(size-1)] = link
				clear(t[sub : sub+1<<subBits])
				sub += 1 << subBits
			}
			e := sym[sorted[i]] + uint32(n)<<8 + uint32(n)
			base := int(link >> 16)
			for j := rev >> primary; j < 1<<subBits; j += 1 << (n - primary) {
				t[base+j] = e
			}
			rev = nextReversed(rev, n)
		}
	}
	return true
}

// fillBad marks every entry of e as starting no valid code.
func fillBad(e []uint32) {
	for i := range e {
		e[i] = entBad
	}
}

// nextReversed returns the bit-reversed n-bit value after rev: the next
// canonical code, read in the order deflate sends its bits.
func nextReversed(rev, n int) int {
	bit := 1 << (n - 1)
	for rev&bit != 0 {
		rev ^= bit
		bit >>= 1
	}
	return rev | bit
}

// fixedLit and fixedDist decode the fixed Huffman codes (RFC 1951,
// 3.2.6). They are built once and only read.
var fixedLit, fixedDist = fixedTables()

func fixedTables() (*litTable, *distTable) {
	lit, dist := new(litTable), new(distTable)
	var l [288]uint8
	for i := range l {
		switch {
		case i < 144:
			l[i] = 8
		case i < 256:
			l[i] = 9
		case i < 280:
			l[i] = 7
		default:
			l[i] = 8
		}
	}
	var d [32]uint8
	for i := range d {
		d[i] = 5
	}
	if !buildTable(lit[:], litBits, l[:], litLenSym[:]) || !buildTable(dist[:], distBits, d[:], distSym[:]) {
		panic("wire: fixed Huffman codes are incomplete")
	}
	return lit, dist
}

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
