package wire

// The inflater's Huffman tables (RFC 1951, sections 3.2.2, 3.2.5-3.2.7): how
// an entry encodes what a code means, how a table is built from a block's
// code lengths, and the fixed block type's tables, built once.

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
	l, d := fixedCodeLengths()
	if !buildTable(lit[:], litBits, l[:], litLenSym[:]) || !buildTable(dist[:], distBits, d[:], distSym[:]) {
		panic("wire: fixed Huffman codes are incomplete")
	}
	return lit, dist
}

// fixedCodeLengths are the code lengths of the fixed block type (RFC 1951,
// section 3.2.6): literal/length symbols 0-143 8 bits, 144-255 9, 256-279 7,
// 280-287 8; every distance symbol 5.
func fixedCodeLengths() (lit [288]uint8, dist [32]uint8) {
	for i := range lit {
		switch {
		case i < 144:
			lit[i] = 8
		case i < 256:
			lit[i] = 9
		case i < 280:
			lit[i] = 7
		default:
			lit[i] = 8
		}
	}
	for i := range dist {
		dist[i] = 5
	}
	return lit, dist
}
