package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/spf13/pflag"
)

func TestHelpAndBadFlags(t *testing.T) {
	var errOut bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &errOut); !errors.Is(err, pflag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, opt := range []string{"--zookeeper", "--broker-list", "--admin", "--listen", "127.0.0.1:8080", "--refresh", "--history"} {
		if !strings.Contains(errOut.String(), opt) {
			t.Errorf("--help does not describe %s", opt)
		}
	}
	for _, args := range [][]string{
		nil, // nothing to show
		{"--broker-list=x"},
		{"--admin=nohost"},
		{"--zookeeper=127.0.0.1:2181", "--refresh=0s"},
		{"--zookeeper=127.0.0.1:2181", "extra"},
	} {
		var usage *cli.UsageError
		if err := run(context.Background(), args, &errOut); !errors.As(err, &usage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
