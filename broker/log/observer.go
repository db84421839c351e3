package log

import "time"

// Observer is told of the logs' flushes, for metrics (broker/metrics
// implements it). It is called on the flushing goroutine after each fsync
// that made appended messages durable and visible (a flush or a roll); it
// must be cheap and must not call back into the log.
type Observer interface {
	// Flushed reports a flush of l whose fsync took took (wall-clock time,
	// not the Config's Clock).
	Flushed(l *Log, took time.Duration)
}
