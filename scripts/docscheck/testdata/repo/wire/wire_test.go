package wire

import "testing"

func TestChecksum(t *testing.T) {}

func BenchmarkAppend(b *testing.B) {}
