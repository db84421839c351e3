// Package report writes report.md and the figures from a result set. The
// document is made of sections, one per part of the experiments (the paper's
// §5 comparison, the scale-out, each ablation), each drawing its own figures
// and writing its own tables and conclusion; this package holds the document's
// frame (header, link utilisation, method, failures), the paper's comparison
// (Comparison: the paper's §5 numbers beside the measured ones, the ratios
// Kafka/ActiveMQ and Kafka/RabbitMQ beside the paper's claims), the standard
// ablation section (Ablation) and the toolkit the sections share. Every
// sentence of a conclusion is computed from the runs; none is written in
// advance, so a result that contradicts the paper is reported as such.
package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/netdb11/kafka/experiments/figures"
	"github.com/netdb11/kafka/experiments/machine"
	"github.com/netdb11/kafka/experiments/results"
)

// Context is what the report says about the invocation besides the runs.
type Context struct {
	// Machine is where the runs happened, with its limits measured before
	// the first run; LimitsAfter the limits measured after the last (nil:
	// not measured).
	Machine     machine.Machine
	LimitsAfter *machine.Machine
	// Testbed describes the testbed in words; TestbedKind is loopback or paper.
	Testbed, TestbedKind string
	// Mode is quick or full.
	Mode string
	// LinkBitsPerSec is the testbed link's rate (0: loopback).
	LinkBitsPerSec float64
	// Settings lists, one sentence each with its reason, the settings of this
	// invocation that depart from Kafka 0.7's defaults.
	Settings []string
	// Failures lists what went wrong, one line each.
	Failures []string
	// Now stamps the report (default time.Now).
	Now time.Time
	// Dir is where the report is written; the runs' files (profiles) are
	// named relative to it. Write sets it.
	Dir string
}

// Printf appends formatted text to the document.
type Printf func(format string, args ...any)

// Section is one part's share of report.md: the figures it draws and the text
// it writes.
type Section struct {
	// Group, when set, is a heading with its introduction, written once before
	// the first of consecutive sections of the same group that are written
	// ("## Ablations").
	Group string
	// Has reports whether the set holds runs for the section; a section
	// without is left out, group heading and all. Nil: always written.
	Has func(*results.Set) bool
	// Figures are the figures the section draws; one without data is left out.
	Figures []Figure
	// Write writes the section, given those of its figures that were drawn.
	Write func(w Printf, set *results.Set, c Context, figs []Fig)
}

// Figure is a figure a section draws from the runs.
type Figure struct {
	// File is the PNG's name inside the output directory.
	File string
	// Title is the figure's caption.
	Title string
	// Build draws it; a figure without data is figures.ErrEmpty when saved.
	Build func(*results.Set) figures.Figure
}

// Fig is a figure written for the report.
type Fig struct {
	// File is the PNG's name inside the output directory.
	File string
	// Title is the figure's caption.
	Title string
}

// Write draws the sections' figures into dir and writes dir/report.md. A
// figure without data is left out; other errors are returned after the report
// is written.
func Write(dir string, set *results.Set, c Context, sections []Section) error {
	figs, ferr := WriteFigures(dir, set, sections)
	if c.Dir == "" {
		c.Dir = dir
	}
	md := Markdown(set, c, sections, figs)
	path := filepath.Join(dir, "report.md")
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return errors.Join(ferr, fmt.Errorf("report: %w", err))
	}
	return ferr
}

// WriteFigures draws every figure of the sections that has data into dir;
// figs[i] are those of sections[i].
func WriteFigures(dir string, set *results.Set, sections []Section) (figs [][]Fig, err error) {
	figs = make([][]Fig, len(sections))
	var errs []error
	for i, s := range sections {
		for _, f := range s.Figures {
			err := f.Build(set).Save(filepath.Join(dir, f.File))
			switch {
			case errors.Is(err, figures.ErrEmpty):
				continue
			case err != nil:
				errs = append(errs, fmt.Errorf("report: figure %s: %w", f.File, err))
				continue
			}
			figs[i] = append(figs[i], Fig{File: f.File, Title: f.Title})
		}
	}
	return figs, errors.Join(errs...)
}
