// Package activemqperf drives ActiveMQ through its own JMS client for the paper's
// producer and consumer tests (paper §5). The driver is a small Java program,
// java/ActiveMQPerf.java, embedded in this package and compiled with javac at run
// time against the jars Debian's activemq package installs under /usr/share/java;
// its last line of output is a perf.Result.
package activemqperf

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed java/ActiveMQPerf.java
var source []byte

// MainClass is the driver's class name.
const MainClass = "ActiveMQPerf"

// JarDir is where Debian installs the ActiveMQ client and its dependencies.
const JarDir = "/usr/share/java"

// Jars are the client jars the driver needs, relative to JarDir.
var Jars = []string{
	"activemq-client.jar",
	"geronimo-jms_1.1_spec.jar",
	"geronimo-j2ee-management-1.1-spec.jar",
	"hawtbuf.jar",
	"slf4j-api.jar",
	"slf4j-nop.jar",
}

// ErrNoJDK reports that javac or java is missing.
var ErrNoJDK = errors.New("activemqperf: javac/java not found (install a JDK, e.g. default-jdk-headless)")

// Driver is a compiled ActiveMQPerf ready to run.
type Driver struct {
	// ClassPath is the class path of the compiled driver and the client jars.
	ClassPath string
}

// Compile writes the embedded driver source to dir and compiles it with javac.
func Compile(ctx context.Context, dir string) (*Driver, error) {
	if _, err := exec.LookPath("javac"); err != nil {
		return nil, ErrNoJDK
	}
	if _, err := exec.LookPath("java"); err != nil {
		return nil, ErrNoJDK
	}
	var jars []string
	for _, j := range Jars {
		p := filepath.Join(JarDir, j)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("activemqperf: client jar %s missing (install Debian's activemq package: scripts/peers.sh install activemq): %w", p, err)
		}
		jars = append(jars, p)
	}
	src := filepath.Join(dir, "src", MainClass+".java")
	classes := filepath.Join(dir, "classes")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		return nil, fmt.Errorf("activemqperf: %w", err)
	}
	if err := os.MkdirAll(classes, 0o755); err != nil {
		return nil, fmt.Errorf("activemqperf: %w", err)
	}
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return nil, fmt.Errorf("activemqperf: writing driver source: %w", err)
	}
	cp := strings.Join(jars, string(os.PathListSeparator))
	out, err := exec.CommandContext(ctx, "javac", "-nowarn", "-d", classes, "-cp", cp, src).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("activemqperf: javac %s: %w\n%s", src, err, out)
	}
	return &Driver{ClassPath: classes + string(os.PathListSeparator) + cp}, nil
}

// Config is one run of the driver.
type Config struct {
	// URL is the broker's OpenWire URL, e.g. tcp://127.0.0.1:61616.
	URL string
	// Queue is the queue name.
	Queue string
	// Mode is produce, consume or reset (delete the queue and its messages).
	Mode string
	// Messages is how many messages to send or receive.
	Messages int64
	// MessageSize is the payload size in bytes.
	MessageSize int
	// TxSize commits a JMS transaction every TxSize messages; 0 sends outside
	// transactions (asynchronously, jms.useAsyncSend=true).
	TxSize int
	// Prefetch is the consumer's prefetch window (jms.prefetchPolicy.all).
	Prefetch int
	// Duration caps the run; 0 means none.
	Duration time.Duration
	// SampleInterval is the throughput sampling interval (default 250 ms).
	SampleInterval time.Duration
	// HeapMB is the driver JVM's maximum heap in MiB (default 512).
	HeapMB int
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.URL == "":
		return errors.New("activemqperf: URL is empty")
	case c.Queue == "":
		return errors.New("activemqperf: Queue is empty")
	case c.Mode != "produce" && c.Mode != "consume" && c.Mode != "reset":
		return fmt.Errorf("activemqperf: Mode %q, want produce, consume or reset", c.Mode)
	case c.Mode != "reset" && c.Messages <= 0:
		return fmt.Errorf("activemqperf: Messages = %d, want > 0", c.Messages)
	case c.Mode != "reset" && c.MessageSize <= 0:
		return fmt.Errorf("activemqperf: MessageSize = %d, want > 0", c.MessageSize)
	case c.TxSize < 0 || c.Prefetch < 0 || c.Duration < 0 || c.SampleInterval < 0 || c.HeapMB < 0:
		return errors.New("activemqperf: TxSize, Prefetch, Duration, SampleInterval and HeapMB must be >= 0")
	}
	return nil
}

// Args returns the command line (java first) that runs the driver for cfg.
func (d *Driver) Args(cfg Config) ([]string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	heap := cfg.HeapMB
	if heap == 0 {
		heap = 512
	}
	sample := cfg.SampleInterval
	if sample == 0 {
		sample = 250 * time.Millisecond
	}
	messages, size := cfg.Messages, cfg.MessageSize
	if cfg.Mode == "reset" {
		messages, size = max(messages, 1), max(size, 1)
	}
	return []string{
		"java", "-Xmx" + strconv.Itoa(heap) + "m", "-cp", d.ClassPath, MainClass,
		"--url=" + cfg.URL,
		"--queue=" + cfg.Queue,
		"--mode=" + cfg.Mode,
		"--messages=" + strconv.FormatInt(messages, 10),
		"--message-size=" + strconv.Itoa(size),
		"--tx-size=" + strconv.Itoa(cfg.TxSize),
		"--prefetch=" + strconv.Itoa(cfg.Prefetch),
		"--duration-ms=" + strconv.FormatInt(cfg.Duration.Milliseconds(), 10),
		"--sample-ms=" + strconv.FormatInt(max(sample.Milliseconds(), 1), 10),
	}, nil
}
