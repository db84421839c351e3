package brokertest

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/netdb11/kafka/broker"
	"github.com/netdb11/kafka/broker/log"
)

func TestStartRestartStop(t *testing.T) {
	b := Start(t, broker.DefaultConfig()) // even the shared defaults get a private dir and port
	if b.Config.Log.Dir == broker.DefaultConfig().Log.Dir || b.Port == 0 || b.Host != "127.0.0.1" {
		t.Fatalf("started with %+v", b.Config)
	}
	if b.Config.EnableZookeeper {
		t.Fatal("ZooKeeper registration on without a Registrar")
	}
	c, err := net.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := b.Logs().GetOrCreate("t", 0); err != nil {
		t.Fatal(err)
	}
	b.Flush(t)

	b2 := b.Restart(t)
	if b2.Addr != b.Addr || b2.Config.Log.Dir != b.Config.Log.Dir {
		t.Fatalf("restarted at %s in %s", b2.Addr, b2.Config.Log.Dir)
	}
	if _, err := os.Stat(filepath.Join(b.Config.Log.Dir, "t-0")); err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Logs().Get("t", 0); err != nil {
		t.Fatalf("partition lost in the restart: %v", err)
	}
	if err := b2.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := b2.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.Config.Log.Dir, "t-0", log.CleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
}
