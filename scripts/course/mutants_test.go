package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A trivial implementation is what a student might hand in to collect a
// group's points without doing the lab: a function body that skips a check
// the handout asks for, or returns the answer the tests expect as a
// constant. TestGroupsFailTrivialImplementations builds the reference with
// such a body in place of the real one and checks that the group fails
// (issue 24: lab 1's "validate" group and lab 5's "rates" group passed some
// before). Each group also has a complete implementation written the same
// way (want: pass), so that a trivial one fails for the check it leaves out
// and not for a mistake of the harness.
type trivial struct {
	lab   int
	group string
	what  string
	// bodies are the replaced functions (Name or Type.Name) of the group's
	// package, each a block, braces included.
	bodies map[string]string
	pass   bool
}

// validateBody is a Validate written without the Iterator, walking the size
// prefixes; it checks the magic byte, the size limit and the CRC unless
// skip names one of them.
func validateBody(skip string) string {
	check := map[string]string{
		"magic": `
		if m[0] != MagicV0 && m[0] != MagicV1 {
			return count, &CorruptError{Pos: Offset(pos), Reason: "unknown magic"}
		}`,
		"limit": `
		if OverMaxSize(int64(size), maxSize) {
			return count, &CorruptError{Pos: Offset(pos), Reason: "over the limit"}
		}`,
		"crc": `
		if binary.BigEndian.Uint32(m[header-CRCLen:]) != Checksum(m[header:]) {
			return count, &CorruptError{Pos: Offset(pos), Reason: "crc mismatch"}
		}`,
	}
	if skip != "" && check[skip] == "" {
		panic("validateBody: no check " + skip)
	}
	check[skip] = ""
	return `{
	for pos := 0; pos < len(set); count++ {
		if len(set)-pos < SizeLen {
			return count, &CorruptError{Pos: Offset(pos), Reason: "truncated size"}
		}
		size := int(int32(binary.BigEndian.Uint32(set[pos:])))
		if size < HeaderLenV0 || size > len(set)-pos-SizeLen {
			return count, &CorruptError{Pos: Offset(pos), Reason: "bad or truncated size"}
		}
		m := set[pos+SizeLen : pos+SizeLen+size]
		header := HeaderLenV0
		if m[0] == MagicV1 {
			header = HeaderLenV1
		}
		if size < header {
			return count, &CorruptError{Pos: Offset(pos), Reason: "short header"}
		}` + check["magic"] + check["limit"] + check["crc"] + `
		pos += SizeLen + size
	}
	return count, nil
}`
}

// trivials are the implementations the groups must fail (and the complete
// ones they must pass).
var trivials = []trivial{
	{1, "validate", "Validate walking the size prefixes, checking everything", map[string]string{"Validate": validateBody("")}, true},
	{1, "validate", "Validate that skips the CRC", map[string]string{"Validate": validateBody("crc")}, false},
	{1, "validate", "Validate that skips the magic byte", map[string]string{"Validate": validateBody("magic")}, false},
	{1, "validate", "Validate that skips the size limit", map[string]string{"Validate": validateBody("limit")}, false},
	{5, "rates", "Rates and NewResult written again", map[string]string{
		"Rates": `{
	var out []Rate
	var t0 float64
	var n0 int64
	for _, s := range samples {
		if s.T > t0 {
			out = append(out, Rate{T: s.T, MsgsPerSec: float64(s.Messages-n0) / (s.T - t0)})
			t0, n0 = s.T, s.Messages
		}
	}
	return out
}`,
		"NewResult": `{
	r := Result{Messages: messages, Bytes: bytes, Seconds: seconds, Samples: samples}
	if seconds > 0 {
		r.MsgsPerSec, r.MBPerSec = float64(messages)/seconds, float64(bytes)/seconds/MB
	}
	return r
}`}, true},
	{5, "rates", "Rates returning the answer of the test's first input", map[string]string{
		"Rates": `{ return []Rate{{T: 0.5, MsgsPerSec: 200}, {T: 1, MsgsPerSec: 400}, {T: 2, MsgsPerSec: 0}} }`}, false},
	{5, "rates", "NewResult returning the rates of the test's first input", map[string]string{
		"NewResult": `{
	r := Result{Messages: messages, Bytes: bytes, Seconds: seconds, Samples: samples}
	if seconds > 0 {
		r.MsgsPerSec, r.MBPerSec = 2000, 200*1000/float64(MB)/0.5
	}
	return r
}`}, false},
	{5, "rates", "Rates that starts from the first sample, not from time zero", map[string]string{
		"Rates": `{
	var out []Rate
	for i := 1; i < len(samples); i++ {
		if dt := samples[i].T - samples[i-1].T; dt > 0 {
			out = append(out, Rate{T: samples[i].T, MsgsPerSec: float64(samples[i].Messages-samples[i-1].Messages) / dt})
		}
	}
	return out
}`}, false},
}

// TestGroupsFailTrivialImplementations: each trivial implementation in
// trivials fails its group and each complete one passes it. The reference is
// not copied: the replaced files reach the build through `go test -overlay`.
func TestGroupsFailTrivialImplementations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test binary per implementation; TestLabsMatchTheCode covers -short")
	}
	c := loadForTest(t)
	goCmd := goCommand(GradeOptions{})
	for _, tr := range trivials {
		t.Run(fmt.Sprintf("lab%d/%s/%s", tr.lab, tr.group, strings.ReplaceAll(tr.what, " ", "_")), func(t *testing.T) {
			lab, err := c.Lab(tr.lab)
			if err != nil {
				t.Fatal(err)
			}
			var group *Group
			for i := range lab.Groups {
				if lab.Groups[i].Name == tr.group {
					group = &lab.Groups[i]
				}
			}
			if group == nil {
				t.Fatalf("lab %d has no group %s", tr.lab, tr.group)
			}
			overlay := writeOverlay(t, filepath.Join(repoRoot, filepath.FromSlash(group.Package)), tr.bodies)
			g, err := NewGrader(repoRoot, GradeOptions{Go: goCmd, Scratch: t.TempDir(), Overlay: overlay, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			res := g.Grade([]Group{*group}, 0)[0]
			for _, r := range res.Tests {
				if r.Outcome == BuildFailed || r.Outcome == NotFound {
					t.Fatalf("%s: %s %s:\n%s", tr.what, r.Outcome, r.Name, r.Message)
				}
			}
			if res.Passed() != tr.pass {
				t.Errorf("lab %d group %s with %s: passed = %v, want %v\n%s", tr.lab, tr.group, tr.what, res.Passed(), tr.pass, describe([]GroupResult{res}))
			} else if !tr.pass {
				t.Logf("fails, as it must:\n%s", describe([]GroupResult{res}))
			}
		})
	}
}

// writeOverlay writes the package's files with the bodies replaced into a
// temporary directory and returns a `go build -overlay` file that puts them
// in place of the originals.
func writeOverlay(t *testing.T, pkgDir string, bodies map[string]string) string {
	t.Helper()
	files, err := ReplaceBodies(pkgDir, bodies)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	replace := map[string]string{}
	for path, src := range files {
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(dst, src, 0o644); err != nil {
			t.Fatal(err)
		}
		replace[abs] = dst
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return overlay
}
