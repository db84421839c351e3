package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/netdb11/kafka/experiments/kit"
	"github.com/netdb11/kafka/experiments/results"
)

// observer starts kafka-audit --follow on a site, polling every poll,
// printing everything when stopped.
func (e *env) observer(ctx context.Context, s *site, name, topic string, poll time.Duration) (*kit.Proc, string, error) {
	path := filepath.Join(e.cfg.Dir, name+".json")
	f, err := os.Create(path)
	if err != nil {
		return nil, "", err
	}
	p, err := e.start(ctx, s, name, f, e.bin("kafka-audit"), "--zookeeper="+s.zkConnect(), "--whitelist="+topic, "--topic="+topic,
		"--follow", "--json", "--poll="+poll.String(), "--interval=1h", "--grace=24h")
	f.Close()
	return p, path, err
}

// phase runs one phase: observers, producers, (the kill), the drain, the
// final audit; and merges what they printed into windows.
func (e *env) phase(ctx context.Context, name, topic string, kill bool) (results.PipelinePhase, error) {
	ph := results.PipelinePhase{Name: name, Topic: topic}
	c := e.cfg
	obsLive, liveOut, err := e.observer(ctx, e.live, "observer-live-"+topic, topic, 10*time.Millisecond)
	if err != nil {
		return ph, err
	}
	obsAna, anaOut, err := e.observer(ctx, e.analysis, "observer-analysis-"+topic, topic, 10*time.Millisecond)
	if err != nil {
		return ph, err
	}
	cons, consOut, err := e.observer(ctx, e.analysis, "consumer-"+topic, topic, c.ConsumerBackoff)
	if err != nil {
		return ph, err
	}
	observers := []*kit.Proc{obsLive, obsAna, cons}
	defer func() {
		for _, o := range observers {
			_ = o.Stop(30 * time.Second)
		}
	}()
	ph.Started = time.Now()
	ph.Load = "start " + LoadAverage()
	var loads []*kit.Proc
	var loadOuts []string
	for i := 1; i <= c.Producers; i++ {
		path := filepath.Join(e.cfg.Dir, fmt.Sprintf("producer-%s-%d.json", topic, i))
		f, err := os.Create(path)
		if err != nil {
			return ph, err
		}
		p, err := e.start(ctx, e.live, fmt.Sprintf("producer-%s-%d", topic, i), f, e.bin("kafka-audit-producer"),
			"--zookeeper="+e.live.zkConnect(), "--topic="+topic, "--rate="+strconv.FormatFloat(c.Rate, 'f', -1, 64),
			"--duration="+c.Phase.String(), "--message-size="+strconv.Itoa(c.MessageSize),
			"--batch-size="+strconv.Itoa(c.BatchSize), "--queue-time="+c.QueueTime.String(),
			"--audit-window="+c.Window.String(), fmt.Sprintf("--host=fe-%d", i), "--json")
		f.Close()
		if err != nil {
			return ph, err
		}
		loads = append(loads, p)
		loadOuts = append(loadOuts, path)
	}
	if kill {
		select {
		case <-ctx.Done():
			return ph, ctx.Err()
		case <-time.After(c.KillAt):
		}
		e.mirror.Kill()
		ph.KilledAt = time.Since(ph.Started).Seconds()
		e.log.Info("mirror SIGKILLed", "at", ph.KilledAt)
		select {
		case <-ctx.Done():
			return ph, ctx.Err()
		case <-time.After(c.Downtime):
		}
		if err := e.startMirror(ctx); err != nil {
			return ph, err
		}
		ph.RestartedAt = time.Since(ph.Started).Seconds()
	}
	var sent int64
	var sums []loadSummary
	for i, p := range loads {
		if err := p.Wait(); err != nil {
			return ph, fmt.Errorf("pipeline: %s: %v (see %s)", p.Name(), err, p.LogPath())
		}
		b, err := os.ReadFile(loadOuts[i])
		if err != nil {
			return ph, err
		}
		var s loadSummary
		if err := json.Unmarshal(bytes.TrimSpace(b), &s); err != nil {
			return ph, fmt.Errorf("pipeline: %s's summary: %w", p.Name(), err)
		}
		sent += s.Sent
		sums = append(sums, s)
	}
	ph.Seconds = time.Since(ph.Started).Seconds()
	ph.Load += ", end " + LoadAverage()
	// Drain: until the audit at the analysis cluster counts every message.
	finalOut := filepath.Join(e.cfg.Dir, "audit-"+topic+".json")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		f, err := os.Create(finalOut)
		if err != nil {
			return ph, err
		}
		p, err := e.start(ctx, e.analysis, "audit-"+topic, f, e.bin("kafka-audit"), "--zookeeper="+e.analysis.zkConnect(), "--whitelist="+topic, "--topic="+topic, "--json")
		f.Close()
		if err != nil {
			return ph, err
		}
		_ = p.Wait() // the audit's rows say whether it caught up
		_, total, rerr := readRows(finalOut)
		if rerr == nil && total.Sent == sent && total.Missing == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			e.log.Warn("the analysis cluster did not catch up", "topic", topic, "sent", sent, "audit", total)
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	for _, o := range observers {
		_ = o.Stop(60 * time.Second)
	}
	if err := mergeWindows(&ph, sums, sent, outs{final: finalOut, consumer: consOut, live: liveOut, analysis: anaOut}); err != nil {
		return ph, err
	}
	return ph, nil
}
