package check

import (
	"fmt"
	"strings"
)

// Result is the checker's verdict over one history.
type Result struct {
	// Counts of each anomaly kind (every kind present, zero included).
	Counts map[string]int
	// Anomalies, sorted by kind (in Kinds order), partition, offset, identity.
	Anomalies []Anomaly
	// Unpromised are the anomalies the configuration does not promise to
	// avoid (Anomaly.Unpromised), counted apart: they do not make a trial
	// anomalous.
	Unpromised []Anomaly
	// Invalid gives why the trial's outcome is unknown: a final read that
	// did not finish, a cluster that never became healthy again, a
	// partition no reader read to its end. An invalid trial is never
	// valid, and its anomalies may be the unfinished reads' (Jepsen's
	// :unknown).
	Invalid []string

	// What the history holds, for context.
	Sent, Acked, Failed, Unknown int // sends by outcome (Sent is their sum)
	Read                         int // read events
	Distinct                     int // distinct messages read
	UnknownRead, FailedRead      int // sends that were not acknowledged but were read
	// Retried counts the duplicates that a producer's retries explain:
	// up to n-1 extra copies of a message sent n times (Event.Attempts),
	// which delivery at least once allows (paper §3.3; 0.8's producer has
	// no idempotence). They are in Unpromised, not in Counts[Duplicate],
	// which counts the duplicates no retry explains (the system's own).
	Retried int
	// Vanished counts sends not acknowledged and never read: not an
	// anomaly (nothing was promised), but with acks=0 the only sign of loss.
	Vanished int
	Replicas int // replica events
	// Incomplete lists partitions some send went to that no reader says it
	// read to the end: lost writes there may be the reader's, not the log's.
	Incomplete []TP
}

// Statuses of a trial (Result.Status).
const (
	// StatusValid: the trial finished and no anomaly was found.
	StatusValid = "VALID"
	// StatusAnomalies: the trial finished and anomalies were found.
	StatusAnomalies = "ANOMALIES"
	// StatusInvalid: the trial did not finish (Result.Invalid says why):
	// its outcome is unknown, whatever was found.
	StatusInvalid = "INVALID"
)

// Valid reports whether the trial finished and no anomaly was found.
func (r *Result) Valid() bool { return r.Status() == StatusValid }

// Status is StatusInvalid, StatusAnomalies or StatusValid, in that order of
// precedence.
func (r *Result) Status() string {
	switch {
	case len(r.Invalid) > 0:
		return StatusInvalid
	case len(r.Anomalies) > 0:
		return StatusAnomalies
	}
	return StatusValid
}

// Verdict is one line: the status (INVALID with its reasons), then the
// counts.
func (r *Result) Verdict() string {
	var b strings.Builder
	b.WriteString(r.Status())
	if len(r.Invalid) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(r.Invalid, "; "))
	}
	fmt.Fprintf(&b, ": %d sent (%d acknowledged, %d failed, %d unknown), %d distinct read, %d unacknowledged never read",
		r.Sent, r.Acked, r.Failed, r.Unknown, r.Distinct, r.Vanished)
	for _, k := range Kinds {
		if k == Duplicate && r.Retried > 0 {
			fmt.Fprintf(&b, "; %s %d (%d retried, not promised)", k, r.Counts[k]+r.Retried, r.Retried)
			continue
		}
		fmt.Fprintf(&b, "; %s %d", k, r.Counts[k])
	}
	if len(r.Unpromised) > 0 {
		fmt.Fprintf(&b, "; not promised %d", len(r.Unpromised))
	}
	if len(r.Incomplete) > 0 {
		fmt.Fprintf(&b, "; %d partitions not read to the end", len(r.Incomplete))
	}
	return b.String()
}
