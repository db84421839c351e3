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
// log lines per compressed message that is most of a consumer's time (about
// 0.7 µs of CPU per message here). A compressed message's payload is whole
// in memory and its expansion goes into one buffer, so the output itself is
// the window, input is read 64 bits at a time, and tables are reused. It
// accepts exactly the streams compress/gzip accepts, with the same output
// (FuzzGunzipMatchesStdlib checks both against each other); gzip's CRC-32
// and ISIZE are checked as compress/gzip checks them.

// errInflate is a corrupt gzip or deflate stream.
var errInflate = errors.New("corrupt gzip stream")

// Table geometry: a code of at most primary bits is found with one lookup,
// a longer one through a subtable of 2^(longest-primary) entries.
const (
	litPrimary  = 10
	distPrimary = 8
	maxCodeLen  = 15
	numLitLen   = 286 // symbols 286 and 287 of the fixed code are invalid
	numDist     = 30
	numCodeLen  = 19
	linkFlag    = 0x100

	// litTableLen and distTableLen hold the primary table and one subtable
	// per code longer than primary at worst.
	litTableLen  = 1<<litPrimary + 288<<(maxCodeLen-litPrimary)
	distTableLen = 1<<distPrimary + 32<<(maxCodeLen-distPrimary)
)

// A table entry is sym<<16 | linkFlag? | n: for a symbol, n is its code's
// length (0: no code has these bits); for a link to a subtable, sym is the
// subtable's offset and n the subtable's index width.
type huffTable struct {
	primary uint
	e       []uint32
}

// build makes t decode the canonical code with these code lengths. Like
// compress/flate it accepts only complete codes, an empty one (any use of
// it is an error) and a single code of length 1 (zlib writes those).
//
// Codes are placed in order of length: the primary table starts as 2^lo
// entries (lo the shortest length) and doubles, by one copy, before each
// longer length, so that a short code fills its 2^(primary-n) entries by
// those copies rather than one store at a time. In bit-reversed form the
// next code of length n+1 has the same value as the next one of length n
// would have had, so one reversed counter walks all the codes.
func (t *huffTable) build(lengths []uint8) bool {
	var count [maxCodeLen + 1]int
	for _, n := range lengths {
		count[n]++
	}
	count[0] = 0
	lo, hi := 0, 0
	for n := 1; n <= maxCodeLen; n++ {
		if count[n] != 0 {
			if lo == 0 {
				lo = n
			}
			hi = n
		}
	}
	size := 1 << t.primary
	if hi == 0 {
		clear(t.e[:size])
		return true
	}
	code := 0
	for n := 1; n <= hi; n++ {
		code = code<<1 + count[n]
	}
	if code != 1<<hi && !(code == 1 && hi == 1) {
		return false
	}
	// Symbols sorted by (length, symbol): the canonical order.
	var start [maxCodeLen + 2]int
	for n := 1; n <= maxCodeLen; n++ {
		start[n+1] = start[n] + count[n]
	}
	var sorted [288]uint16
	for sym, n := range lengths {
		if n != 0 {
			sorted[start[n]] = uint16(sym)
			start[n]++
		}
	}
	// start[n] is now the end of length n's symbols, the start of n+1's.
	primary := int(t.primary)
	end := 1 << min(lo, primary)
	clear(t.e[:end]) // entries no short code takes: links, or (single code) no code
	rev, i := 0, 0   // the reversed counter; the next symbol in sorted
	for n := lo; n <= primary; n++ {
		for ; i < start[n]; i++ {
			t.e[rev] = uint32(sorted[i])<<16 | uint32(n)
			rev = nextReversed(rev, n)
		}
		if n < primary {
			copy(t.e[end:2*end], t.e[:end])
			end *= 2
		}
	}
	// Codes longer than primary: a subtable of 2^(hi-primary) entries per
	// primary prefix, linked from the primary entry.
	sub := size
	subBits := uint(max(hi-primary, 0))
	for n := primary + 1; n <= hi; n++ {
		for ; i < start[n]; i++ {
			link := t.e[rev&(size-1)]
			if link == 0 {
				link = uint32(sub)<<16 | linkFlag | uint32(subBits)
				t.e[rev&(size-1)] = link
				clear(t.e[sub : sub+1<<subBits])
				sub += 1 << subBits
			}
			e := uint32(sorted[i])<<16 | uint32(n)
			base := int(link >> 16)
			for j := rev >> primary; j < 1<<subBits; j += 1 << (n - primary) {
				t.e[base+j] = e
			}
			rev = nextReversed(rev, n)
		}
	}
	return true
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

// Base values and extra bits of the length symbols 257..285 and of the
// distance symbols 0..29 (RFC 1951, section 3.2.5).
var (
	lenBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lenExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtr = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	// codeOrder is the order of the code length code's lengths.
	codeOrder = [numCodeLen]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// inflater holds one stream's reading state and the tables, which are
// reused from one stream to the next (it is pooled).
type inflater struct {
	lit, dist, clen     huffTable
	fixedLit, fixedDist huffTable
	lengths             [numLitLen + numDist]uint8

	in  []byte
	pos int    // next byte of in to load into b
	b   uint64 // bit buffer, next bit lowest
	n   int    // valid bits in b; below 0 once a code ran past the end of in
}

func newInflater() *inflater {
	f := &inflater{
		lit:       huffTable{primary: litPrimary, e: make([]uint32, litTableLen)},
		dist:      huffTable{primary: distPrimary, e: make([]uint32, distTableLen)},
		clen:      huffTable{primary: 7, e: make([]uint32, 1<<7)},
		fixedLit:  huffTable{primary: litPrimary, e: make([]uint32, litTableLen)},
		fixedDist: huffTable{primary: distPrimary, e: make([]uint32, distTableLen)},
	}
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
	f.fixedLit.build(l[:])
	var d [32]uint8
	for i := range d {
		d[i] = 5
	}
	f.fixedDist.build(d[:])
	return f
}

// refill loads whole bytes into b until it holds at least 56 bits or the
// input is used up.
func (f *inflater) refill() {
	if f.pos+8 <= len(f.in) {
		f.b |= binary.LittleEndian.Uint64(f.in[f.pos:]) << uint(f.n)
		f.pos += (63 - f.n) >> 3
		f.n |= 56
		return
	}
	for f.n <= 56 && f.pos < len(f.in) {
		f.b |= uint64(f.in[f.pos]) << uint(f.n)
		f.pos++
		f.n += 8
	}
}

// take returns the next k bits (k <= 32); f.n goes negative when the input
// is shorter.
func (f *inflater) take(k uint) uint32 {
	if f.n < int(k) {
		f.refill()
	}
	v := uint32(f.b & (1<<k - 1))
	f.b >>= k
	f.n -= int(k)
	return v
}

// bytePos is the offset in f.in of the first byte not wholly consumed.
func (f *inflater) bytePos() int { return f.pos - f.n>>3 }

// inflate expands the deflate stream at f.in[f.pos:] onto dst, within limit
// bytes, and leaves f.pos at the first byte after it. Back-references may
// reach back only into what this stream wrote (from len(dst) on).
func (f *inflater) inflate(dst []byte, limit int) ([]byte, error) {
	start := len(dst)
	for {
		final := f.take(1)
		typ := f.take(2)
		if f.n < 0 {
			return nil, errInflate
		}
		var err error
		switch typ {
		case 0:
			dst, err = f.stored(dst, start, limit)
		case 1:
			dst, err = f.huffman(dst, start, limit, &f.fixedLit, &f.fixedDist)
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
		if final == 1 {
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
	nlit := int(f.take(5)) + 257
	ndist := int(f.take(5)) + 1
	nclen := int(f.take(4)) + 4
	if nlit > numLitLen || ndist > numDist {
		return errInflate
	}
	var cl [numCodeLen]uint8
	for i := range nclen {
		cl[codeOrder[i]] = uint8(f.take(3))
	}
	if f.n < 0 || !f.clen.build(cl[:]) {
		return errInflate
	}
	lengths := f.lengths[:nlit+ndist]
	for i := 0; i < len(lengths); {
		if f.n < 7 {
			f.refill()
		}
		e := f.clen.e[f.b&(1<<7-1)]
		k := int(e & 0xff)
		if k == 0 || k > f.n {
			return errInflate
		}
		f.b >>= uint(k)
		f.n -= k
		sym := e >> 16
		if sym < 16 {
			lengths[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var v uint8
		switch sym {
		case 16:
			if i == 0 {
				return errInflate
			}
			rep, v = 3+int(f.take(2)), lengths[i-1]
		case 17:
			rep = 3 + int(f.take(3))
		default:
			rep = 11 + int(f.take(7))
		}
		if f.n < 0 || i+rep > len(lengths) {
			return errInflate
		}
		for range rep {
			lengths[i] = v
			i++
		}
	}
	if !f.lit.build(lengths[:nlit]) || !f.dist.build(lengths[nlit:]) {
		return errInflate
	}
	return nil
}

// huffman decodes one block's symbols with the given tables onto dst.
func (f *inflater) huffman(dst []byte, start, limit int, lit, dist *huffTable) ([]byte, error) {
	// The hot loop keeps the reader's state in locals.
	b, n, pos, in := f.b, f.n, f.pos, f.in
	lt, dt := lit.e, dist.e
	const lmask, dmask = 1<<litPrimary - 1, 1<<distPrimary - 1
	o := len(dst)
	out := dst[:min(cap(dst), start+limit)] // writing past limit takes growOut's path, which checks it
	defer func() { f.b, f.n, f.pos = b, n, pos }()
	for {
		// One refill covers a symbol: a code (15), length extra bits (5),
		// a distance code (15) and its extra bits (13).
		if n < 48 {
			if pos+8 <= len(in) {
				b |= binary.LittleEndian.Uint64(in[pos:]) << uint(n)
				pos += (63 - n) >> 3
				n |= 56
			} else {
				for n <= 56 && pos < len(in) {
					b |= uint64(in[pos]) << uint(n)
					pos++
					n += 8
				}
			}
		}
		e := lt[b&lmask]
		if e&linkFlag != 0 {
			e = lt[e>>16+uint32(b>>litPrimary)&(1<<(e&0xff)-1)]
		}
		k := int(e & 0xff)
		if k == 0 || k > n {
			return nil, errInflate
		}
		b >>= uint(k)
		n -= k
		sym := int(e >> 16)
		if sym < 256 {
			if o == len(out) {
				if o-start >= limit {
					return nil, ErrTooLarge
				}
				out = growOut(out, o, start, limit)
			}
			out[o] = byte(sym)
			o++
			// Literals come in runs: decode the next one without a
			// refill while a whole code is surely in b.
			for n >= maxCodeLen && o < len(out) {
				e = lt[b&lmask]
				if e&(linkFlag|0xff) == 0 || e&linkFlag != 0 || e>>16 >= 256 {
					break
				}
				k = int(e & 0xff)
				b >>= uint(k)
				n -= k
				out[o] = byte(e >> 16)
				o++
			}
			continue
		}
		if sym == 256 {
			return out[:o], nil
		}
		sym -= 257
		if sym >= len(lenBase) {
			return nil, errInflate
		}
		x := uint(lenExtra[sym])
		length := int(lenBase[sym]) + int(b&(1<<x-1))
		b >>= x
		n -= int(x)

		e = dt[b&dmask]
		if e&linkFlag != 0 {
			e = dt[e>>16+uint32(b>>distPrimary)&(1<<(e&0xff)-1)]
		}
		k = int(e & 0xff)
		if k == 0 || k > n {
			return nil, errInflate
		}
		b >>= uint(k)
		n -= k
		ds := int(e >> 16)
		if ds >= numDist {
			return nil, errInflate
		}
		x = uint(distExtr[ds])
		d := int(distBase[ds]) + int(b&(1<<x-1))
		b >>= x
		n -= int(x)
		if n < 0 {
			return nil, errInflate
		}
		if d > o-start {
			return nil, errInflate
		}
		if len(out)-o < length {
			if o-start+length > limit {
				return nil, ErrTooLarge
			}
			out = growOut(out, o, start, limit)
		}
		switch {
		case d >= 8 && o+length+8 <= len(out):
			// Most matches are short: copy 8 bytes at a time, running up to
			// 7 bytes past the match (there is room; they are overwritten
			// later or lie past the end). Each word is read before
			// anything it overlaps is written, since d >= 8.
			for i := 0; i < length; i += 8 {
				binary.LittleEndian.PutUint64(out[o+i:], binary.LittleEndian.Uint64(out[o-d+i:]))
			}
		case d >= length:
			copy(out[o:o+length], out[o-d:])
		default:
			// Overlapping: the run repeats the last d bytes; copy them
			// in doubling chunks.
			for done := 0; done < length; {
				done += copy(out[o+done:o+length], out[o-d:o+done])
			}
		}
		o += length
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
