package docscheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// root is the module's root: two levels above this package.
const root = "../.."

var (
	indexOnce sync.Once
	index     *Index
	indexErr  error
)

func repoIndex(t *testing.T) *Index {
	t.Helper()
	indexOnce.Do(func() { index, indexErr = NewIndex(root) })
	if indexErr != nil {
		t.Fatal(indexErr)
	}
	return index
}

// guideDocs lists README.md and paper/**/*.md, less paper/results/.
func guideDocs(t *testing.T) []string {
	t.Helper()
	docs := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "paper"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(mustRel(root, path))
		if d.IsDir() && rel == "paper/results" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(rel, ".md") {
			docs = append(docs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestGuideReferencesResolve checks every name, path and link in the guide.
// On the tree before issue 24's fixes (180947d) it reported 16 problems,
// among them TestSIGTERMShutsDownCleanly and TestCleanShutdownSkipsTheScan,
// which do not exist, Checksum said to be in message.go and conn.produce in
// handle.go, the gone huffTable.build, lab 2's Log.read with three
// arguments, and paper/README.md's path outside the repository.
func TestGuideReferencesResolve(t *testing.T) {
	ix := repoIndex(t)
	for _, doc := range guideDocs(t) {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ix.CheckDoc(doc, string(b)) {
			t.Error(p)
		}
	}
}

// TestDeviationLedgerMatchesComments checks that every `Deviation:` comment
// has its row in paper/deviations.md and every row its comment. Before
// issue 24's fixes (180947d) it reported 8 comments without a row and 8
// rows without a comment (startAhead, Producer.send's size check,
// Broker.onNewTopic, Config.NoDelay among them).
func TestDeviationLedgerMatchesComments(t *testing.T) {
	ix := repoIndex(t)
	devs, err := ix.Deviations()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, Ledger))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := LedgerRows(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) == 0 || len(rows) == 0 {
		t.Fatalf("%d comments, %d rows: the scan found nothing", len(devs), len(rows))
	}
	for _, p := range CheckLedger(devs, rows) {
		t.Error(p)
	}
	t.Logf("%d comments, %d rows", len(devs), len(rows))
}

// numberDocs are the documents whose measured numbers are checked:
// README.md and paper/*.md (the course's handouts, under paper/course/,
// quote no runs).
func numberDocs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, d := range guideDocs(t) {
		if d == "README.md" || (strings.HasPrefix(d, "paper/") && strings.Count(d, "/") == 1) {
			out = append(out, d)
		}
	}
	return out
}

// TestQuotedNumbersHaveARun checks that every number README.md and
// paper/*.md quote as measured (the rule is in numbers.go) is in a file
// under paper/results/ or on a line that links one (issue 24: before the
// runs were committed it reported 194 such numbers, among them README's
// 2,463,748 and 5,311,094 msg/s and paper/replication.md's whole table).
func TestQuotedNumbersHaveARun(t *testing.T) {
	res, err := ResultNumbers(filepath.Join(root, "paper", "results"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range numberDocs(t) {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range CheckNumbers(doc, string(b), res) {
			t.Error(p)
		}
	}
}
