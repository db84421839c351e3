package wire

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

// The tests below write deflate streams by hand (RFC 1951), so that they
// hold exactly the symbols a decoder path needs: matches at every short
// distance, maximal lengths, both encodings of length 258, codes of every
// length up to 15 bits in both tables (the subtables), stored blocks of 0
// and 65,535 bytes between Huffman blocks. Each stream is checked against
// a naive decoder of the same symbols and against compress/flate.

// symbol is a literal (dist 0) or a match of length at distance dist.
type symbol struct {
	lit          byte
	length, dist int
	long284      bool // length 258 as symbol 284 with 31 extra bits
}

// expand is the reference: the symbols applied one byte at a time.
func expand(out []byte, syms []symbol) []byte {
	for _, s := range syms {
		if s.dist == 0 {
			out = append(out, s.lit)
			continue
		}
		for range s.length {
			out = append(out, out[len(out)-s.dist])
		}
	}
	return out
}

// bitWriter writes a deflate bit stream: values lowest bit first, Huffman
// codes highest bit first.
type bitWriter struct {
	out []byte
	acc uint64
	n   uint
}

func (w *bitWriter) bits(v uint64, k uint) {
	w.acc |= v << w.n
	w.n += k
	for w.n >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.n -= 8
	}
}

func (w *bitWriter) code(c uint32, l uint8) {
	var r uint64
	for i := range l {
		r |= uint64(c>>i&1) << (l - 1 - i)
	}
	w.bits(r, uint(l))
}

// align pads to a byte boundary with zero bits.
func (w *bitWriter) align() {
	if w.n > 0 {
		w.bits(0, 8-w.n)
	}
}

// canonical returns the canonical codes of these lengths (RFC 1951, 3.2.2).
func canonical(lengths []uint8) []uint32 {
	var count [16]uint32
	for _, l := range lengths {
		count[l]++
	}
	count[0] = 0
	var next [16]uint32
	code := uint32(0)
	for l := 1; l < 16; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	codes := make([]uint32, len(lengths))
	for s, l := range lengths {
		if l != 0 {
			codes[s] = next[l]
			next[l]++
		}
	}
	return codes
}

// fixedLengths are the fixed block type's code lengths, 30 distance codes.
func fixedLengths() (lit, dist []uint8) {
	l, d := fixedCodeLengths()
	return l[:], d[:30]
}

// huffBlock writes one block of syms: fixed codes when litLens is nil,
// else a dynamic block with these 286 literal/length and 30 distance code
// lengths, each written as a plain code length (a 4-bit code per length
// 0-15, no repeats).
func huffBlock(w *bitWriter, final bool, litLens, distLens []uint8, syms []symbol) {
	fin := uint64(0)
	if final {
		fin = 1
	}
	if litLens == nil {
		w.bits(fin|1<<1, 3)
		litLens, distLens = fixedLengths()
	} else {
		w.bits(fin|2<<1, 3)
		w.bits(uint64(len(litLens)-257), 5)
		w.bits(uint64(len(distLens)-1), 5)
		w.bits(numCodeLen-4, 4)
		var cl [numCodeLen]uint8
		for s := range 16 {
			cl[s] = 4
		}
		for _, s := range codeOrder {
			w.bits(uint64(cl[s]), 3)
		}
		for _, l := range append(append([]uint8(nil), litLens...), distLens...) {
			w.code(uint32(l), 4) // the canonical code of 16 4-bit codes is the symbol
		}
	}
	lc, dc := canonical(litLens), canonical(distLens)
	for _, s := range syms {
		if s.dist == 0 {
			w.code(lc[s.lit], litLens[s.lit])
			continue
		}
		i := len(lenBase) - 1
		for int(lenBase[i]) > s.length {
			i--
		}
		if s.long284 {
			i = 27
		}
		w.code(lc[257+i], litLens[257+i])
		w.bits(uint64(s.length-int(lenBase[i])), uint(lenExtra[i]))
		j := len(distBase) - 1
		for int(distBase[j]) > s.dist {
			j--
		}
		w.code(dc[j], distLens[j])
		w.bits(uint64(s.dist-int(distBase[j])), uint(distExtr[j]))
	}
	w.code(lc[256], litLens[256])
}

// storedBlock writes p as one stored block.
func storedBlock(w *bitWriter, final bool, p []byte) {
	fin := uint64(0)
	if final {
		fin = 1
	}
	w.bits(fin, 3)
	w.align()
	w.out = binary.LittleEndian.AppendUint16(w.out, uint16(len(p)))
	w.out = binary.LittleEndian.AppendUint16(w.out, ^uint16(len(p)))
	w.out = append(w.out, p...)
}

// deepLengths returns n code lengths of a complete code, with codes of
// every length from 1 to 15, shuffled: leaves of a full binary tree split
// until there are n, the deepest first.
func deepLengths(r *rand.Rand, n int) []uint8 {
	ls := []uint8{1, 1}
	for len(ls) < n {
		// Split the deepest leaf under 15 while the tree is thin, then
		// the shallowest, so that both very long and short codes occur.
		pick := -1
		for i, l := range ls {
			if l < 15 && (pick < 0 || (len(ls) < 16) == (l > ls[pick])) {
				pick = i
			}
		}
		l := ls[pick] + 1
		ls[pick] = l
		ls = append(ls, l)
	}
	r.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
	return ls
}

// randomSymbols returns about n symbols: literals in runs, matches of
// every length at distances short (1-17, the overlapping copies) and far,
// never reaching before the start.
func randomSymbols(r *rand.Rand, n int, lits []byte) []symbol {
	var syms []symbol
	out := 0
	for len(syms) < n {
		if out == 0 || r.IntN(3) == 0 {
			for range 1 + r.IntN(12) {
				syms = append(syms, symbol{lit: lits[r.IntN(len(lits))]})
				out++
			}
			continue
		}
		s := symbol{length: 3 + r.IntN(256)}
		switch r.IntN(4) {
		case 0:
			s.length = 258
			s.long284 = r.IntN(2) == 0
		case 1:
			s.length = 3 + r.IntN(14)
		}
		if r.IntN(2) == 0 {
			s.dist = 1 + r.IntN(min(out, 17))
		} else {
			s.dist = 1 + r.IntN(min(out, 32768))
		}
		syms = append(syms, s)
		out += s.length
	}
	return syms
}

// wrapGzip makes a gzip member of a raw deflate stream.
func wrapGzip(deflate, expanded []byte) []byte {
	g := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}
	g = append(g, deflate...)
	g = binary.LittleEndian.AppendUint32(g, crc32.ChecksumIEEE(expanded))
	return binary.LittleEndian.AppendUint32(g, uint32(len(expanded)))
}

func stdInflate(p []byte) ([]byte, error) {
	return io.ReadAll(flate.NewReader(bytes.NewReader(p)))
}

// checkStream inflates a hand-written stream, raw and as a gzip member,
// into buffers of every kind of room and under limits, and compares with
// want and with compress/flate; every truncation must fail.
func checkStream(t *testing.T, name string, deflate, want []byte) {
	t.Helper()
	if std, err := stdInflate(deflate); err != nil || !bytes.Equal(std, want) {
		t.Fatalf("%s: compress/flate: %d bytes, %v; the stream is wrong, want %d bytes", name, len(std), err, len(want))
	}
	f := newInflater()
	gz := wrapGzip(deflate, want)
	for _, room := range []int{0, len(want) - 100, len(want) - 1, len(want), len(want) + 300} {
		f.in, f.pos, f.b, f.n = deflate, 0, 0, 0
		got, err := f.inflate(make([]byte, 0, max(room, 0)), 1<<30)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s, raw, room %d: %d bytes, %v; want %d", name, room, len(got), err, len(want))
		}
		// After a prefix in dst, which back-references must not reach.
		pre := []byte("prefix")
		got, err = f.gunzip(append(make([]byte, 0, len(pre)+max(room, 0)), pre...), gz, 1<<30)
		if err != nil || !bytes.Equal(got[len(pre):], want) || string(got[:len(pre)]) != "prefix" {
			t.Fatalf("%s, gzip, room %d: %d bytes, %v; want %d", name, room, len(got), err, len(want))
		}
	}
	if len(want) > 0 {
		for _, room := range []int{0, len(want)} {
			if _, err := f.gunzip(make([]byte, 0, room), gz, len(want)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%s: limit %d, room %d: %v", name, len(want)-1, room, err)
			}
		}
	}
	for _, cut := range cuts(len(gz)) {
		if _, err := f.gunzip(nil, gz[:cut], 1<<30); err == nil {
			t.Fatalf("%s: truncated to %d of %d bytes: no error", name, cut, len(gz))
		}
	}
	for _, cut := range cuts(len(deflate)) {
		f.in, f.pos, f.b, f.n = deflate[:cut], 0, 0, 0
		_, err := f.inflate(nil, 1<<30)
		if _, stdErr := stdInflate(deflate[:cut]); (err == nil) != (stdErr == nil) {
			t.Fatalf("%s: raw stream cut at %d: %v, compress/flate %v", name, cut, err, stdErr)
		}
	}
}

// cuts returns where to truncate a stream of n bytes: every byte of its
// first and last 32, and 100 places between.
func cuts(n int) []int {
	var c []int
	for i := range n {
		if i < 32 || i >= n-32 || i%max(1, n/100) == 0 {
			c = append(c, i)
		}
	}
	return c
}

func TestInflateShortDistancesAndLongMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 258))
	// Each match copies 17 distinct random bytes before it, so that a
	// copy from any wrong distance gives other bytes.
	var syms []symbol
	lits := func() {
		for _, c := range r.Perm(256)[:17] {
			syms = append(syms, symbol{lit: byte(c)})
		}
	}
	for d := 1; d <= 17; d++ {
		for _, l := range []int{3, 4, 7, 8, 9, 15, 16, 17, 31, 100, 257, 258} {
			lits()
			syms = append(syms, symbol{length: l, dist: d})
		}
		lits()
		syms = append(syms, symbol{length: 258, dist: d, long284: true})
	}
	want := expand(nil, syms)
	for _, fixed := range []bool{true, false} {
		var w bitWriter
		name := "fixed"
		if fixed {
			huffBlock(&w, true, nil, nil, syms)
		} else {
			name = "dynamic"
			huffBlock(&w, true, deepLengths(r, numLitLen), deepLengths(r, numDist), syms)
		}
		w.align()
		checkStream(t, name, w.out, want)
	}
}

func TestInflateLongCodes(t *testing.T) {
	r := rand.New(rand.NewPCG(1951, 15))
	for trial := range 2 {
		litLens := deepLengths(r, numLitLen)
		distLens := deepLengths(r, numDist)
		var lits []byte
		for s := range 256 {
			lits = append(lits, byte(s))
		}
		syms := randomSymbols(r, 1500, lits)
		// Every length symbol and distance code at least once.
		for i, b := range lenBase {
			syms = append(syms, symbol{length: int(b) + 1<<lenExtra[i] - 1, dist: 1})
		}
		for _, b := range distBase {
			if int(b) <= len(expand(nil, syms)) {
				syms = append(syms, symbol{length: 3, dist: int(b)})
			}
		}
		want := expand(nil, syms)
		var w bitWriter
		huffBlock(&w, true, litLens, distLens, syms)
		w.align()
		checkStream(t, "long codes", w.out, want)

		// The tables did use subtables, in both.
		f := newInflater()
		f.in = w.out
		if _, err := f.inflate(nil, 1<<30); err != nil {
			t.Fatal(err)
		}
		subs := func(e []uint32) (k int) {
			for _, v := range e {
				if v&entSub != 0 {
					k++
				}
			}
			return k
		}
		if subs(f.lit[:1<<litBits]) == 0 || subs(f.dist[:1<<distBits]) == 0 {
			t.Fatalf("trial %d: no subtables (%d, %d)", trial, subs(f.lit[:1<<litBits]), subs(f.dist[:1<<distBits]))
		}
	}
}

func TestInflateStoredBetweenHuffmanBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 24))
	big := make([]byte, 65535)
	for i := range big {
		big[i] = byte(r.IntN(7))
	}
	lits := []byte("stored")
	syms := randomSymbols(r, 3000, lits)
	var w bitWriter
	storedBlock(&w, false, nil)
	storedBlock(&w, false, big)
	huffBlock(&w, false, nil, nil, syms) // back-references reach into the stored bytes
	storedBlock(&w, false, []byte("x"))
	huffBlock(&w, false, deepLengths(r, numLitLen), deepLengths(r, numDist), syms)
	storedBlock(&w, true, nil)
	want := append([]byte(nil), big...)
	want = expand(want, syms)
	want = append(want, 'x')
	want = expand(want, syms)
	checkStream(t, "stored", w.out, want)
}

// TestInflateRejects: streams that compress/flate rejects, written so
// that the bad symbol comes in the middle of a long block (the fast loop)
// and at its very end (one symbol at a time).
func TestInflateRejects(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	body := randomSymbols(r, 200, []byte("reject")) // about 13 KB: less than the bad distance
	lc, dc := canonical(fixedLengthsLit()), canonical(fixedLengthsDist())
	cases := map[string]func(w *bitWriter){
		"distance before the start": func(w *bitWriter) {
			w.code(lc[257], 7) // length 3
			w.code(dc[29], 5)  // 24577 + 13 extra bits
			w.bits(8000, 13)
		},
		"literal/length symbol 286": func(w *bitWriter) { w.code(lc[286], 8) },
		"literal/length symbol 287": func(w *bitWriter) { w.code(lc[287], 8) },
		"distance symbol 30": func(w *bitWriter) {
			w.code(lc[257], 7)
			w.code(30, 5)
		},
		"distance symbol 31": func(w *bitWriter) {
			w.code(lc[257], 7)
			w.code(31, 5)
		},
	}
	f := newInflater()
	for name, bad := range cases {
		for _, atEnd := range []bool{false, true} {
			var w bitWriter
			w.bits(1|1<<1, 3)
			fixedSyms(&w, body)
			bad(&w)
			if !atEnd {
				fixedSyms(&w, body)
			}
			w.code(lc[256], 7)
			w.align()
			f.in, f.pos, f.b, f.n = w.out, 0, 0, 0
			if out, err := f.inflate(nil, 1<<30); !errors.Is(err, errInflate) {
				t.Errorf("%s (at end %v): %d bytes, %v", name, atEnd, len(out), err)
			}
			if _, err := stdInflate(w.out); err == nil {
				t.Errorf("%s: compress/flate accepts it", name)
			}
		}
	}
}

func fixedLengthsLit() []uint8  { l, _ := fixedLengths(); return l }
func fixedLengthsDist() []uint8 { _, d := fixedLengths(); return append(d, 5, 5) }

// fixedSyms writes syms with the fixed codes, without a block header or
// end.
func fixedSyms(w *bitWriter, syms []symbol) {
	lit, dist := fixedLengths()
	lc, dc := canonical(lit), canonical(dist)
	for _, s := range syms {
		if s.dist == 0 {
			w.code(lc[s.lit], lit[s.lit])
			continue
		}
		i := len(lenBase) - 1
		for int(lenBase[i]) > s.length {
			i--
		}
		w.code(lc[257+i], lit[257+i])
		w.bits(uint64(s.length-int(lenBase[i])), uint(lenExtra[i]))
		j := len(distBase) - 1
		for int(distBase[j]) > s.dist {
			j--
		}
		w.code(dc[j], 5)
		w.bits(uint64(s.dist-int(distBase[j])), uint(distExtr[j]))
	}
}

// TestBuildTableDecodesEveryCode: for complete codes with lengths up to
// 15 (subtables in every table width used), looking up each symbol's code
// followed by any bits finds that symbol and its length.
func TestBuildTableDecodesEveryCode(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 1))
	for trial := range 20 {
		for _, tc := range []struct {
			primary int
			n       int
			size    int
		}{{litBits, numLitLen, litTableLen}, {distBits, numDist, distTableLen}, {clenBits, numCodeLen, 1 << clenBits}} {
			lengths := deepLengths(r, tc.n)
			if tc.primary == clenBits {
				lengths = deepLengths7(r, tc.n)
			}
			sym := make([]uint32, tc.n)
			for s := range sym {
				sym[s] = uint32(s) << 16
			}
			table := make([]uint32, tc.size)
			if !buildTable(table, tc.primary, lengths, sym) {
				t.Fatalf("trial %d: complete code refused", trial)
			}
			codes := canonical(lengths)
			for s, l := range lengths {
				var w bitWriter
				w.code(codes[s], l)
				w.bits(r.Uint64()&(1<<(16-uint(l))-1), 16-uint(l))
				bits := uint64(binary.LittleEndian.Uint16(w.out))
				e := table[bits&(1<<tc.primary-1)]
				if e&entSub != 0 {
					e = table[e>>16+uint32(bits>>tc.primary)&(1<<(e>>8&15)-1)]
				}
				if int(e>>16) != s || uint8(e>>8&15) != l || uint8(e) != l {
					t.Fatalf("trial %d, primary %d: symbol %d (length %d): entry %#x", trial, tc.primary, s, l, e)
				}
			}
		}
	}
	// Incomplete and over-subscribed codes are refused.
	table := make([]uint32, litTableLen)
	if buildTable(table, litBits, []uint8{1, 2, 3, 3, 3}, litLenSym[:]) || buildTable(table, litBits, []uint8{2, 2, 2}, litLenSym[:]) {
		t.Fatal("accepted a code that is not complete")
	}
}

// deepLengths7 is deepLengths for codes of at most 7 bits.
func deepLengths7(r *rand.Rand, n int) []uint8 {
	ls := []uint8{1, 1}
	for len(ls) < n {
		pick := -1
		for i, l := range ls {
			if l < 7 && (pick < 0 || l > ls[pick]) {
				pick = i
			}
		}
		ls[pick]++
		ls = append(ls, ls[pick])
	}
	r.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
	return ls
}
