package producer

import "testing"

func TestJavaStringHash(t *testing.T) {
	// Values printed by Java 17's String.hashCode.
	for _, tc := range []struct {
		key  string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"hello", 99162322},
		{"Aa", 2112},
		{"BB", 2112},
		{"polygenelubricants", -2147483648},
		{"é", 233},
		{"😀", 1772899},
		{"key-42", -1134722900},
		{"\xff", 65533}, // invalid UTF-8 decodes to U+FFFD, as in Java
	} {
		if got := JavaStringHash([]byte(tc.key)); got != tc.want {
			t.Errorf("JavaStringHash(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

func TestDefaultPartitioner(t *testing.T) {
	// Java: Math.abs(key.hashCode()) % 7.
	for _, tc := range []struct {
		key  string
		n    int
		want int
	}{
		{"", 7, 0},
		{"a", 7, 6},
		{"hello", 7, 0},
		{"Aa", 7, 5},
		{"BB", 7, 5},
		{"é", 7, 2},
		{"key-42", 7, 3},
		{"polygenelubricants", 7, 0}, // Deviation: Java gives -2 and throws
		{"a", 1, 0},
	} {
		if got := (DefaultPartitioner{}).Partition([]byte(tc.key), tc.n); got != tc.want {
			t.Errorf("Partition(%q, %d) = %d, want %d", tc.key, tc.n, got, tc.want)
		}
	}
	seen := map[int]bool{}
	for range 1000 {
		p := (DefaultPartitioner{}).Partition(nil, 3)
		if p < 0 || p >= 3 {
			t.Fatalf("Partition(nil, 3) = %d", p)
		}
		seen[p] = true
	}
	if len(seen) != 3 {
		t.Errorf("unkeyed partitions over 1000 tries: %v, want all of 0..2", seen)
	}
	if got := (DefaultPartitioner{}).Partition([]byte("a"), 0); got != -1 {
		t.Errorf("Partition with 0 partitions = %d, want -1", got)
	}
}

func FuzzJavaStringHash(f *testing.F) {
	f.Add([]byte("hello"))
	f.Add([]byte("😀é\xff"))
	f.Fuzz(func(t *testing.T, key []byte) {
		for _, n := range []int{1, 2, 7, 1 << 20} {
			if p := (DefaultPartitioner{}).Partition(key, n); p < 0 || p >= n {
				t.Fatalf("Partition(%q, %d) = %d", key, n, p)
			}
		}
	})
}
