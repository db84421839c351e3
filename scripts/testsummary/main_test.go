package main

import (
	"strings"
	"testing"
)

const stream = `{"Action":"run","Package":"example.com/kafka/a","Test":"TestOK"}
{"Action":"pass","Package":"example.com/kafka/a","Test":"TestOK","Elapsed":0.01}
{"Action":"run","Package":"example.com/kafka/a","Test":"TestSkip"}
{"Action":"output","Package":"example.com/kafka/a","Test":"TestSkip","Output":"    a_test.go:12: needs root\n"}
{"Action":"output","Package":"example.com/kafka/a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"example.com/kafka/a","Test":"TestSkip"}
{"Action":"pass","Package":"example.com/kafka/a","Elapsed":0.5}
{"Action":"run","Package":"example.com/kafka/b","Test":"TestBad"}
{"Action":"output","Package":"example.com/kafka/b","Test":"TestBad","Output":"    b_test.go:3: got 1, want 2\n"}
{"Action":"fail","Package":"example.com/kafka/b","Test":"TestBad"}
{"Action":"output","Package":"example.com/kafka/b","Output":"FAIL\n"}
{"Action":"output","Package":"example.com/kafka/b","Output":"FAIL\texample.com/kafka/b\t1.000s\n"}
{"Action":"fail","Package":"example.com/kafka/b","Elapsed":1}
`

func TestSummarize(t *testing.T) {
	var out strings.Builder
	failed, err := summarize(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Error("a failed package was not reported as a failure")
	}
	if n := strings.Count(out.String(), "FAIL\texample.com/kafka/b"); n != 1 {
		t.Errorf("the failed package is named %d times, want once:\n%s", n, out.String())
	}
	for _, want := range []string{
		"ok  \texample.com/kafka/a\t0.500s\n",
		"got 1, want 2\n",
		"FAIL\texample.com/kafka/b\t1.000s\n",
		"skipped: 1: a.TestSkip (needs root)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSummarizeEmpty(t *testing.T) {
	var out strings.Builder
	if _, err := summarize(strings.NewReader(""), &out); err == nil {
		t.Error("an empty stream (go test never ran) passed")
	}
}
