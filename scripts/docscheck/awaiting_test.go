package docscheck

// The runs the guide quotes that are not committed under paper/results/.
const (
	run7 = "container runs by hand (two million messages), no committed run"
	run8 = "a profiling session of paper/profiles.md, its profiles not committed"
)

// awaitingRun lists the numbers the guide quotes from runs that are not
// committed under paper/results/ (issue 24: the lead reruns `make run` and
// `make run-replication` in a quiet window and commits them with `make
// publish`). Once a run is committed and the text quotes it (exactly, or
// rounded in a paragraph that links it), its entries go;
// TestQuotedNumbersHaveARun fails on entries no longer needed, so the list
// only shrinks.
var awaitingRun = []struct{ doc, number, run string }{
	// container runs by hand (two million messages), no committed run
	{"paper/deviations.md", "0.53", run7},
	{"paper/deviations.md", "1.05", run7},
	// a profiling session of paper/profiles.md, its profiles not committed
	{"paper/profiles.md", "246", run8},
	{"paper/profiles.md", "2,304", run8},
	{"paper/profiles.md", "0.11", run8},
	{"paper/profiles.md", "0.12", run8},
	{"paper/profiles.md", "1.5", run8},
	{"paper/profiles.md", "0.54", run8},
	{"paper/profiles.md", "1.15", run8},
	{"paper/profiles.md", "0.10", run8},
	{"paper/profiles.md", "1.60", run8},
	{"paper/profiles.md", "0.95", run8},
	{"paper/profiles.md", "1.04", run8},
	{"paper/profiles.md", "1", run8},
	{"paper/profiles.md", "0.42", run8},
	{"paper/profiles.md", "0.74", run8},
	{"paper/profiles.md", "5", run8},
	{"paper/profiles.md", "1.0", run8},
	{"paper/profiles.md", "640", run8},
	{"paper/profiles.md", "890", run8},
	{"paper/profiles.md", "1.4", run8},
	{"paper/profiles.md", "1.6", run8},
	{"paper/profiles.md", "310", run8},
	{"paper/profiles.md", "860", run8},
	{"paper/profiles.md", "4,112,068", run8},
	{"paper/profiles.md", "7", run8},
	{"paper/profiles.md", "2", run8},
	{"paper/profiles.md", "4.0", run8},
	{"paper/profiles.md", "9.3", run8},
	{"paper/profiles.md", "0.8", run8},
	{"paper/profiles.md", "1.9", run8},
	{"paper/profiles.md", "0.86", run8},
	{"paper/profiles.md", "1.56", run8},
	{"paper/profiles.md", "0.66", run8},
	{"paper/profiles.md", "0.99", run8},
	{"paper/profiles.md", "450", run8},
	{"paper/profiles.md", "0.94", run8},
	{"paper/profiles.md", "1.12", run8},
	{"paper/profiles.md", "1.20", run8},
	{"paper/profiles.md", "1.16", run8},
	{"paper/profiles.md", "1.52", run8},
	{"paper/profiles.md", "1.84", run8},
	{"paper/profiles.md", "1.62", run8},
	{"paper/profiles.md", "1.94", run8},
	{"paper/profiles.md", "55%", run8},
	{"paper/profiles.md", "0.84", run8},
	{"paper/profiles.md", "1.33", run8},
	{"paper/profiles.md", "1.01", run8},
	{"paper/profiles.md", "1.08", run8},
	{"paper/profiles.md", "1.11", run8},
	{"paper/profiles.md", "2.12", run8},
	{"paper/profiles.md", "2.43", run8},
	{"paper/profiles.md", "2.58", run8},
	{"paper/profiles.md", "2.62", run8},
	{"paper/profiles.md", "2.76", run8},
	{"paper/profiles.md", "2.79", run8},
	{"paper/profiles.md", "580", run8},
	{"paper/profiles.md", "1.22", run8},
	{"paper/profiles.md", "1.72", run8},
	{"paper/profiles.md", "1.86", run8},
	{"paper/profiles.md", "2.07", run8},
	{"paper/profiles.md", "390", run8},
	{"paper/profiles.md", "2.84", run8},
	{"paper/profiles.md", "4.08", run8},
	{"paper/profiles.md", "4.47", run8},
	{"paper/profiles.md", "4", run8},
	{"paper/profiles.md", "858", run8},
	{"paper/profiles.md", "641", run8},
	{"paper/profiles.md", "556", run8},
	{"paper/profiles.md", "1,858", run8},
	{"paper/profiles.md", "1,555", run8},
	{"paper/profiles.md", "445", run8},
	{"paper/profiles.md", "1,353", run8},
	{"paper/profiles.md", "1,407", run8},
	{"paper/profiles.md", "653", run8},
	{"paper/profiles.md", "792", run8},
	{"paper/profiles.md", "0.23", run8},
	{"paper/profiles.md", "0.28", run8},
}
