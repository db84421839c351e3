package kit

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ZooKeeper's Debian package (scripts/zookeeper.sh, `make zookeeper`): its jar
// names the rest of its classpath in its manifest; slf4j-simple, when
// installed, gives it a logger.
const (
	zooKeeperJar = "/usr/share/java/zookeeper.jar"
	slf4jJar     = "/usr/share/java/slf4j-simple.jar"
)

// ZooKeeper is one ZooKeeper server to start: standalone, or a member of an
// ensemble when Peers is set.
type ZooKeeper struct {
	// Name names it in logs and errors ("zookeeper", "live-zookeeper").
	Name string
	// Host runs it; it listens for clients on Host.Addr():Port.
	Host Host
	Port int
	// Dir holds its zoo.cfg and data/ (with myid in an ensemble), kept
	// across restarts.
	Dir string
	// Log receives its output, appended to across restarts.
	Log string
	// ID is its myid in an ensemble; Peers are every member of the
	// ensemble, this one included (the server.N lines).
	ID    int
	Peers []Peer
}

// Peer is one member of an ensemble: server.ID=Addr:QuorumPort:ElectionPort.
type Peer struct {
	ID                       int
	Addr                     string
	QuorumPort, ElectionPort int
}

// Connect is the server's host:port for clients.
func (z ZooKeeper) Connect() string {
	return net.JoinHostPort(z.Host.Addr(), strconv.Itoa(z.Port))
}

// zooCfg is the server's configuration.
//
// Deviation: a 500 ms tick, as scripts/zookeeper.sh, so short session
// timeouts (from 1 s) are allowed and failover is quick.
func (z ZooKeeper) zooCfg() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=%s\n", filepath.Join(z.Dir, "data"), z.Port, z.Host.Addr())
	b.WriteString("minSessionTimeout=1000\nmaxSessionTimeout=60000\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,ruok\n")
	if len(z.Peers) > 0 {
		// Ten ticks to connect to the leader and sync, five to stay in step.
		b.WriteString("initLimit=10\nsyncLimit=5\n")
		for _, p := range z.Peers {
			fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", p.ID, p.Addr, p.QuorumPort, p.ElectionPort)
		}
	}
	return b.String()
}

// Launch writes the server's configuration and starts it, without waiting
// for it to serve (an ensemble's member serves only once a quorum is up).
func (z ZooKeeper) Launch(ctx context.Context) (*Proc, error) {
	if err := os.MkdirAll(filepath.Join(z.Dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	cp := zooKeeperJar
	if _, err := os.Stat(cp); err != nil {
		return nil, fmt.Errorf("kit: ZooKeeper not installed (%w); `make zookeeper` or scripts/zookeeper.sh start installs Debian's package", err)
	}
	if _, err := os.Stat(slf4jJar); err == nil {
		cp += ":" + slf4jJar
	}
	main := "org.apache.zookeeper.server.ZooKeeperServerMain"
	if len(z.Peers) > 0 {
		main = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
		if err := os.WriteFile(filepath.Join(z.Dir, "data", "myid"), []byte(strconv.Itoa(z.ID)+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("kit: %w", err)
		}
	}
	cfg := filepath.Join(z.Dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(z.zooCfg()), 0o644); err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	cmd := z.Host.Command(context.WithoutCancel(ctx), "java", "-Xmx256m", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false", "-cp", cp, main, cfg)
	return Start(z.Name, cmd, Output{Log: z.Log, Append: true})
}

// Start launches a standalone server and waits until it serves.
func (z ZooKeeper) Start(ctx context.Context, timeout time.Duration) (*Proc, error) {
	p, err := z.Launch(ctx)
	if err != nil {
		return nil, err
	}
	if err := WaitFor(ctx, timeout, z.Name+" serving", p, func() bool { return z.Mode(ctx) != "" }); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// Mode asks the server with the srvr command what it is ("standalone",
// "leader", "follower"), dialling from its host; "" when it does not serve.
func (z ZooKeeper) Mode(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := z.Host.Dial(ctx, z.Connect())
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(c, 64<<10))
	for _, line := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}
