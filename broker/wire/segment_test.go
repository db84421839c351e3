package wire

import "testing"

func TestSegmentName(t *testing.T) {
	for _, start := range []Offset{0, 1, 209, 1 << 40, 1<<63 - 1} {
		name := SegmentName(start)
		if len(name) != SegmentNameDigits+len(SegmentSuffix) {
			t.Errorf("SegmentName(%d) = %q: want %d digits and %q", start, name, SegmentNameDigits, SegmentSuffix)
		}
		if got, ok := ParseSegmentName(name); !ok || got != start {
			t.Errorf("ParseSegmentName(%q) = %d, %v; want %d, true", name, got, ok, start)
		}
	}
	if got := SegmentName(0); got != "00000000000000000000.kafka" {
		t.Errorf("SegmentName(0) = %q", got)
	}
	for _, bad := range []string{
		"",
		".kafka",
		"0000000000000000000.kafka",   // 19 digits
		"000000000000000000000.kafka", // 21 digits
		"0000000000000000000a.kafka",
		"-0000000000000000001.kafka",
		"99999999999999999999.kafka", // above 2^63-1
		"00000000000000000000.log",
		"00000000000000000000",
	} {
		if got, ok := ParseSegmentName(bad); ok {
			t.Errorf("ParseSegmentName(%q) = %d, true; want false", bad, got)
		}
	}
}
