package brokertest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that one goroutine may write (a broker's
// logger, a tool's stdout or stderr) while the test reads it: Write and
// String may be called concurrently. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns a copy of what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
