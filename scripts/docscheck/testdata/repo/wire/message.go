// Package wire is a fixture of docscheck's tests.
//
// Deviation: a note on the package.
package wire

// Log is a log.
type Log struct {
	// NoDelay is a field. Deviation: on by default.
	NoDelay bool
}

func (l *Log) read(offset, maxBytes int, limit int64, boundary bool) error { return nil }

// Deviation: a note on the file, apart from any declaration.

var x = 1

// Append appends.
func (l *Log) Append(sets ...[]byte) {
	// Deviation: inside a method.
}
