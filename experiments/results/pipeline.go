package results

import (
	"time"

	"github.com/netdb11/kafka/consumer/audit"
)

// Pipeline is the record of the two-datacenter pipeline of paper §4
// (experiments/pipeline): front-end producers in a live datacenter, its
// cluster, kafka-mirror pulling across the inter-datacenter link into the
// analysis datacenter's cluster, and a consumer there, under a steady load;
// the audit checks every window.
type Pipeline struct {
	// Testbed says where it ran (two network namespaces, or one machine's
	// loopback when namespaces were not available).
	Testbed string `json:"testbed"`
	// Config is every setting that shapes the latency.
	Config map[string]string `json:"config"`
	// Phases: the steady pipeline, then the same with the mirror SIGKILLed
	// and restarted midway.
	Phases []PipelinePhase `json:"phases"`
}

// PipelinePhase is one phase of the pipeline experiment.
type PipelinePhase struct {
	Name  string `json:"name"`
	Topic string `json:"topic"`
	// Started is when the load began; Seconds how long it ran.
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// KilledAt and RestartedAt are when the mirror was SIGKILLed and
	// started again, in seconds after Started (0: not killed).
	KilledAt    float64 `json:"killed_at,omitempty"`
	RestartedAt float64 `json:"restarted_at,omitempty"`
	// Windows are the audit windows of the phase, oldest first.
	Windows []PipelineWindow `json:"windows"`
	// Total sums the windows; its latencies are over every message.
	Total PipelineWindow `json:"total"`
	// Load is the machine's load average (1, 5, 15 min) when the load
	// began and when it ended.
	Load string `json:"load,omitempty"`
	// Error is why the phase failed; empty when it ran.
	Error string `json:"error,omitempty"`
}

// PipelineWindow is one audit window: the audit's verdict at the analysis
// cluster, the end-to-end latency of its messages, and the mean latency to
// each stage.
type PipelineWindow struct {
	// At is the window's start in seconds after the phase started.
	At float64 `json:"at"`
	// The final audit at the analysis cluster, once the mirror caught up.
	audit.Tally
	// End to end (creation to the analysis datacenter's consumer).
	audit.LatencyMs
	// Mean latency from creation to: leaving the producer's queue, being
	// readable on the live cluster, being readable on the analysis
	// cluster (both seen by an observer polling every 10 ms), ms.
	QueuedMs   float64 `json:"queued_ms"`
	LiveMs     float64 `json:"live_ms"`
	AnalysisMs float64 `json:"analysis_ms"`
}
