package broker

import (
	"io"
	"log/slog"
	"net"
	"testing"
)

// TestRegisteredHostDefaultIsAnAddress checks 0.7's default with hostname
// unset: the broker registers an IP address (InetAddress.getLocalHost
// .getHostAddress), not the machine's name.
func TestRegisteredHostDefaultIsAnAddress(t *testing.T) {
	b := &Broker{cfg: Config{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	host := b.registeredHost()
	if net.ParseIP(host) == nil {
		t.Fatalf("registered host %q is not an IP address", host)
	}
	b.cfg.Hostname = "h1"
	if got := b.registeredHost(); got != "h1" {
		t.Fatalf("registered host with hostname=h1: %q", got)
	}
}
