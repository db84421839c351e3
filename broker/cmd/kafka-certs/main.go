// Command kafka-certs makes a cluster's TLS files for the inter-broker
// listener (broker/clustertls): a CA and one keystore per broker.
//
//	kafka-certs --dir=DIR --brokers=0,1,2 [--days=825]
//
// It writes DIR/ca.pem (every broker's ssl.truststore.location), DIR/ca.key
// (the CA's key: keep it off the brokers) and DIR/broker-<id>.pem (broker
// id's ssl.keystore.location: its key and certificate, CN=broker-<id>). An
// existing ca.pem and ca.key are reused, so brokers can be added later.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/clustertls"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-certs",
	Usage: "Usage: kafka-certs --dir=DIR --brokers=0,1,2 [--days=825]\n\n" +
		"Makes the inter-broker listener's TLS files: DIR/ca.pem (truststore), DIR/ca.key and\n" +
		"DIR/broker-<id>.pem (keystore) per broker; an existing CA in DIR is reused.\n",
	Setup: func(fls *pflag.FlagSet) cli.RunFunc {
		dir := fls.String("dir", "", "directory to write the files to; required")
		brokers := fls.String("brokers", "", "comma-separated broker ids; required")
		days := fls.Int("days", 825, "validity of the certificates made, in days")
		return func(ctx context.Context, _ *pflag.FlagSet, std cli.IO) error {
			if *dir == "" || *brokers == "" {
				return cli.Usagef("--dir and --brokers are required")
			}
			if *days < 1 {
				return cli.Usagef("--days must be positive")
			}
			var ids []wire.BrokerID
			for _, s := range strings.Split(*brokers, ",") {
				n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
				if err != nil || n < 0 {
					return cli.Usagef("--brokers: bad broker id %q", s)
				}
				ids = append(ids, wire.BrokerID(n))
			}
			validity := time.Duration(*days) * 24 * time.Hour
			if err := os.MkdirAll(*dir, 0o755); err != nil {
				return err
			}
			ca, err := loadOrMakeCA(*dir, validity)
			if err != nil {
				return err
			}
			for _, id := range ids {
				ks, err := ca.Issue(id, validity)
				if err != nil {
					return err
				}
				path := filepath.Join(*dir, fmt.Sprintf("broker-%d.pem", id))
				if err := os.WriteFile(path, ks, 0o600); err != nil {
					return err
				}
				fmt.Fprintf(std.Stdout, "%s: ssl.keystore.location of broker %d\n", path, id)
			}
			fmt.Fprintf(std.Stdout, "%s: ssl.truststore.location of every broker\n", filepath.Join(*dir, "ca.pem"))
			return nil
		}
	},
}

// loadOrMakeCA reads DIR/ca.pem and DIR/ca.key, or makes and writes them.
func loadOrMakeCA(dir string, validity time.Duration) (*clustertls.CA, error) {
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	cert, cerr := os.ReadFile(certPath)
	key, kerr := os.ReadFile(keyPath)
	if cerr == nil && kerr == nil {
		return clustertls.ParseCA(cert, key)
	}
	if !errors.Is(cerr, fs.ErrNotExist) || !errors.Is(kerr, fs.ErrNotExist) {
		return nil, fmt.Errorf("kafka-certs: need both or neither of %s and %s: %w", certPath, keyPath, errors.Join(cerr, kerr))
	}
	ca, err := clustertls.NewCA("kafka cluster CA", validity)
	if err != nil {
		return nil, err
	}
	if key, err = ca.KeyPEM(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		return nil, err
	}
	return ca, os.WriteFile(certPath, ca.CertPEM(), 0o644)
}

func main() { os.Exit(cli.Main(command)) }
