// Package cli is the skeleton every command of this repository shares: the
// flag set with Kafka's option names, --help, the signals that stop a run,
// and the exit status. A main is then a Command value and one call to Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
)

// IO is where a command reads and writes; Main passes the process's own.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// RunFunc does a command's work once its flags are parsed. fs holds the
// parsed flags (for Changed and the positional arguments).
type RunFunc func(ctx context.Context, fs *pflag.FlagSet, std IO) error

// Command describes one program.
type Command struct {
	// Name is the program's name, used in --help and before every error.
	Name string
	// Usage is the text --help prints above the flags: the synopsis and a
	// sentence on what the command does.
	Usage string
	// MaxArgs is how many positional arguments the command takes, and
	// ArgsRule says so in an error's words ("at most one properties file").
	MaxArgs  int
	ArgsRule string
	// Setup registers the command's flags on fs, bound to a fresh
	// configuration, and returns what runs with it.
	Setup func(fs *pflag.FlagSet) RunFunc
}

// UsageError is an error in how the command was called (an unknown flag, a
// bad value, a missing required option). Main exits 2 for it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// ExitError asks Main to exit with Code after printing Err (if any). A tool
// uses it where its exit status carries meaning beyond success and failure.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitError) Unwrap() error { return e.Err }

// Execute parses args and runs the command. It returns pflag.ErrHelp after
// printing the help for --help, and a *UsageError for a bad command line.
func (c Command) Execute(ctx context.Context, args []string, std IO) error {
	if std.Stdin == nil {
		std.Stdin = eof{}
	}
	if std.Stdout == nil {
		std.Stdout = io.Discard
	}
	if std.Stderr == nil {
		std.Stderr = io.Discard
	}
	fs := pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
	fs.SetOutput(std.Stderr)
	fs.SortFlags = false
	run := c.Setup(fs)
	fs.Usage = func() {
		fmt.Fprint(std.Stderr, c.Usage)
		if len(c.Usage) > 0 && c.Usage[len(c.Usage)-1] != '\n' {
			fmt.Fprintln(std.Stderr)
		}
		fmt.Fprintln(std.Stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return &UsageError{err}
	}
	if fs.NArg() > c.MaxArgs {
		if c.ArgsRule != "" {
			return Usagef("%s, got %q", c.ArgsRule, fs.Args())
		}
		return Usagef("unexpected arguments %q", fs.Args()[c.MaxArgs:])
	}
	return run(ctx, fs, std)
}

// Capture runs the command with args and an empty standard input, and
// returns what it wrote to standard output and standard error: a tool's test
// in one call.
func (c Command) Capture(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	var out, errOut strings.Builder
	err = c.Execute(ctx, args, IO{Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), err
}

// Main runs the command as the process: with the process's arguments and
// standard streams, and a context cancelled by SIGINT, SIGTERM or SIGHUP, so
// that every command stops cleanly when its terminal goes away (Kafka's
// scripts end the JVM on all three). It returns the process's exit status,
// which main passes to os.Exit: 0 on success and after --help, 2 for a
// *UsageError, the code of an *ExitError, and 1 for any other error, after
// printing "name: error".
func Main(c Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err := c.Execute(ctx, os.Args[1:], IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	return Report(c.Name, err, os.Stderr)
}

// Report prints err as Main does and returns the exit status for it.
func Report(name string, err error, stderr io.Writer) int {
	var usage *UsageError
	var exit *ExitError
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.As(err, &exit):
		if exit.Err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, exit.Err)
		}
		return exit.Code
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "%s: %v (see --help)\n", name, usage.Err)
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
}

// eof is an empty standard input.
type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }
