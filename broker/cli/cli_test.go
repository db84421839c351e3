package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func testCommand(ran *string) Command {
	return Command{
		Name:     "kafka-test",
		Usage:    "Usage: kafka-test [--topic=T] [FILE]",
		MaxArgs:  1,
		ArgsRule: "at most one file",
		Setup: func(fs *pflag.FlagSet) RunFunc {
			topic := fs.String("topic", "test", "topic")
			return func(ctx context.Context, fs *pflag.FlagSet, std IO) error {
				*ran = *topic + " " + fs.Arg(0)
				if *topic == "fail" {
					return errors.New("broken")
				}
				return nil
			}
		},
	}
}

func TestExecute(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		ran      string
		code     int
		stderr   string // in what Report prints
		helpText string // in what --help prints
	}{
		{args: []string{"--topic=a", "f"}, ran: "a f", code: 0},
		{args: []string{"--help"}, code: 0, helpText: "Usage: kafka-test [--topic=T] [FILE]\n\n      --topic string"},
		{args: []string{"--nope"}, code: 2, stderr: "kafka-test: unknown flag: --nope (see --help)"},
		{args: []string{"a", "b"}, code: 2, stderr: `kafka-test: at most one file, got ["a" "b"] (see --help)`},
		{args: []string{"--topic=fail"}, ran: "fail ", code: 1, stderr: "kafka-test: broken\n"},
	} {
		var ran string
		var help, report strings.Builder
		err := testCommand(&ran).Execute(t.Context(), tc.args, IO{Stderr: &help})
		code := Report("kafka-test", err, &report)
		if ran != tc.ran || code != tc.code || !strings.Contains(report.String(), tc.stderr) || !strings.Contains(help.String(), tc.helpText) {
			t.Errorf("%q: ran %q, exit %d, report %q, help %q; want ran %q, exit %d, report with %q, help with %q",
				tc.args, ran, code, report.String(), help.String(), tc.ran, tc.code, tc.stderr, tc.helpText)
		}
	}
}

func TestReportExitError(t *testing.T) {
	var out strings.Builder
	err := &ExitError{Code: 3, Err: errors.New("7 of 10 messages not delivered")}
	if code := Report("kafka-test", err, &out); code != 3 || out.String() != "kafka-test: 7 of 10 messages not delivered\n" {
		t.Errorf("Report = %d, %q", code, out.String())
	}
}
