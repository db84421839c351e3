package wire

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"io"
	"testing"
)

// gzipSeeds are gzip streams of every kind compress/gzip writes: every
// level (0 gives stored blocks, HuffmanOnly no matches, 1 fixed and
// dynamic blocks), empty input, several members, every optional header
// field, inputs long enough for several blocks and long overlapping runs.
func gzipSeeds(t testing.TB) [][]byte {
	long := NewMessageSet(logLines(3000)...)
	runs := bytes.Repeat([]byte("ab"), 40000)
	random := make([]byte, 70000)
	for i := range random {
		random[i] = byte(i*7919 ^ i>>5 ^ i*i>>9)
	}
	var seeds [][]byte
	gz := func(level int, h gzip.Header, parts ...[]byte) []byte {
		var b bytes.Buffer
		for _, p := range parts {
			w, err := gzip.NewWriterLevel(&b, level)
			if err != nil {
				t.Fatal(err)
			}
			w.Header = h
			if _, err := w.Write(p); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		return b.Bytes()
	}
	for _, level := range []int{gzip.HuffmanOnly, gzip.NoCompression, gzip.BestSpeed, gzip.DefaultCompression, gzip.BestCompression} {
		for _, in := range [][]byte{nil, []byte("a"), long[:3880], long, runs, random} {
			seeds = append(seeds, gz(level, gzip.Header{}, in))
		}
	}
	seeds = append(seeds,
		gz(6, gzip.Header{}, []byte("member one "), []byte("member two")),
		gz(6, gzip.Header{Name: "log.txt", Comment: "c", Extra: []byte("xx")}, long[:500]))
	// A header CRC (compress/gzip never writes one).
	h := []byte{0x1f, 0x8b, 8, gzipHCRC, 0, 0, 0, 0, 0, 255}
	crc := crc32IEEE(h)
	body := gz(6, gzip.Header{}, []byte("hcrc"))[10:]
	seeds = append(seeds, append(append(h, byte(crc), byte(crc>>8)), body...))
	// A raw fixed-Huffman stream written by flate, wrapped by hand.
	return seeds
}

func crc32IEEE(b []byte) uint32 { return Checksum(b) }

// stdGunzip is the reference: compress/gzip over the whole payload.
func stdGunzip(payload []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func TestGunzipMatchesStdlib(t *testing.T) {
	f := newInflater()
	for i, p := range gzipSeeds(t) {
		want, err := stdGunzip(p)
		if err != nil {
			t.Fatalf("seed %d: compress/gzip: %v", i, err)
		}
		for _, room := range []int{0, len(want) - 1, len(want), len(want) + 300} {
			got, err := f.gunzip(make([]byte, 0, max(room, 0)), p, 1<<30)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("seed %d, room %d: %d bytes, err %v; want %d bytes", i, room, len(got), err, len(want))
			}
		}
		if len(want) > 0 {
			if _, err := f.gunzip(nil, p, len(want)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("seed %d: limit %d: %v", i, len(want)-1, err)
			}
		}
		// A truncated stream is an error (but at a member's end: there
		// compress/gzip stops too), and so is a flipped bit where
		// compress/gzip says it is.
		for cut := 0; cut < len(p); cut += max(1, len(p)/50) {
			_, stdErr := stdGunzip(p[:cut])
			if _, err := f.gunzip(nil, p[:cut], 1<<30); (err == nil) != (stdErr == nil) {
				t.Fatalf("seed %d: cut at %d of %d: err %v, compress/gzip %v", i, cut, len(p), err, stdErr)
			}
		}
		for _, at := range []int{3, 10, len(p) / 2, len(p) - 9, len(p) - 2} {
			bad := bytes.Clone(p)
			bad[at] ^= 0x10
			_, stdErr := stdGunzip(bad)
			got, err := f.gunzip(nil, bad, 1<<30)
			if (err == nil) != (stdErr == nil) {
				t.Fatalf("seed %d, bit flipped at %d: err %v, compress/gzip %v", i, at, err, stdErr)
			}
			if err == nil {
				want, _ := stdGunzip(bad)
				if !bytes.Equal(got, want) {
					t.Fatalf("seed %d, bit flipped at %d: output differs", i, at)
				}
			}
		}
	}
	if _, err := f.gunzip(nil, nil, 1<<30); err == nil {
		t.Fatal("accepted an empty payload (compress/gzip does not)")
	}
	// A raw fixed-Huffman block: flate at BestSpeed on a short input.
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestSpeed)
	w.Write([]byte("fixed huffman fixed huffman"))
	w.Close()
	f.in, f.pos = b.Bytes(), 0
	if got, err := f.inflate(nil, 1<<20); err != nil || string(got) != "fixed huffman fixed huffman" {
		t.Fatalf("fixed block: %q, %v", got, err)
	}
}

// FuzzGunzipMatchesStdlib: on any input the inflater and compress/gzip
// agree: both fail, or both give the same bytes.
func FuzzGunzipMatchesStdlib(f *testing.F) {
	for _, s := range gzipSeeds(f) {
		if len(s) < 4096 {
			f.Add(s)
		}
	}
	inf := newInflater()
	f.Fuzz(func(t *testing.T, p []byte) {
		want, stdErr := stdGunzip(p)
		got, err := inf.gunzip(make([]byte, 0, 16), p, 1<<22)
		if stdErr == nil && len(want) > 1<<22 {
			return
		}
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("err %v, compress/gzip %v", err, stdErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("%d bytes, compress/gzip %d", len(got), len(want))
		}
	})
}
