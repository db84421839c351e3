package wire

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestChecksumIsCRC32IEEE: for every length from 0 to 300 (each tail of
// 0 to 15 bytes after the folded part) and random bytes, Checksum is
// hash/crc32's IEEE checksum.
func TestChecksumIsCRC32IEEE(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 301 {
		for range 20 {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			if got, want := Checksum(p), crc32.ChecksumIEEE(p); got != want {
				t.Fatalf("length %d: %08x, want %08x", n, got, want)
			}
		}
	}
}

func FuzzChecksum(f *testing.F) {
	f.Add(make([]byte, 200))
	f.Add([]byte("a log line of some length that is more than sixty-four bytes long, plus a tail"))
	f.Fuzz(func(t *testing.T, p []byte) {
		if got, want := Checksum(p), crc32.ChecksumIEEE(p); got != want {
			t.Fatalf("length %d: %08x, want %08x", len(p), got, want)
		}
	})
}

func BenchmarkChecksum200(b *testing.B) {
	p := make([]byte, 200)
	b.SetBytes(200)
	for b.Loop() {
		Checksum(p)
	}
}

func BenchmarkChecksum200Stdlib(b *testing.B) {
	p := make([]byte, 200)
	b.SetBytes(200)
	for b.Loop() {
		crc32.ChecksumIEEE(p)
	}
}
