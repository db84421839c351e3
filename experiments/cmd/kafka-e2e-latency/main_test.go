package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/spf13/pflag"
)

// TestFlags: --help names the flags; bad flags are usage errors that say
// what is wrong, before anything is dialled.
func TestFlags(t *testing.T) {
	_, stderr, err := command.Capture(context.Background(), "--help")
	if !errors.Is(err, pflag.ErrHelp) || !strings.Contains(stderr, "--request-required-acks") || !strings.Contains(stderr, "--rate") {
		t.Fatalf("--help: %v\n%s", err, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--topic=t"}, "--broker-list is required"},
		{[]string{"--broker-list=x", "--topic=t"}, "id:host:port"},
		{[]string{"--broker-list=0:127.0.0.1:1", "--topic=t", "--request-required-acks=0"}, "acks=0"},
		{[]string{"--broker-list=0:127.0.0.1:1", "--topic=t", "--rate=-5"}, "rate"},
		{[]string{"--broker-list=0:127.0.0.1:1"}, "topic"},
	} {
		_, _, err := command.Capture(context.Background(), c.args...)
		var usage *cli.UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error about %q", c.args, err, c.want)
		}
	}
}
