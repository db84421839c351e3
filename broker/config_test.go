package broker

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// Kafka 0.7's defaults, spot-checked through the keys.
	want := map[string]string{
		"port": "6667", "num.partitions": "1", "log.file.size": "1073741824",
		"log.flush.interval": "500", "log.default.flush.interval.ms": "3000",
		"log.default.flush.scheduler.interval.ms": "3000", "log.retention.hours": "168",
		"log.roll.hours": "168", "log.retention.size": "-1", "log.cleanup.interval.mins": "10",
		"max.socket.request.bytes": "104857600", "max.message.size": "1000000",
		"socket.send.buffer": "102400", "socket.receive.buffer": "102400",
		"enable.zookeeper": "true", "zk.sessiontimeout.ms": "6000",
		"zk.connectiontimeout.ms": "6000", "fetch.use.sendfile": "true",
		"connections.max.idle.ms": "600000", "queued.max.request.bytes": "268435456",
	}
	for k, v := range want {
		if got, err := cfg.Get(k); err != nil || got != v {
			t.Errorf("%s = %q (%v), want %q", k, got, err, v)
		}
	}
}

func TestSetEveryKey(t *testing.T) {
	values := map[string]string{
		"brokerid": "7", "hostname": "h1", "port": "0", "log.dir": "/x",
		"num.partitions": "4", "topic.partition.count.map": "a:8,b.c:16",
		"log.file.size": "1024", "log.roll.hours": "2", "log.flush.interval": "10",
		"log.default.flush.interval.ms": "100", "log.default.flush.scheduler.interval.ms": "50",
		"topic.flush.intervals.ms": "a:1000,b:2000", "log.retention.hours": "3",
		"topic.log.retention.hours": "a:1", "log.retention.size": "1000000",
		"log.cleanup.interval.mins": "5", "max.socket.request.bytes": "1000",
		"max.message.size": "500", "socket.send.buffer": "0", "socket.receive.buffer": "65536",
		"num.threads": "3", "enable.zookeeper": "FALSE", "zk.connect": "z:1/kafka",
		"zk.connectiontimeout.ms": "1", "zk.sessiontimeout.ms": "2", "zk.synctime.ms": "3",
		"fetch.use.sendfile": "false", "metrics.listen": "127.0.0.1:9100",
		"connections.max.idle.ms":  "30000",
		"queued.max.request.bytes": "2000",
		"replica.port":             "9093",
		"replica.listener.host":    "10.0.0.1",
		"ssl.keystore.type":        "PEM",
		"ssl.keystore.location":    "/etc/kafka/broker-7.pem",
		"ssl.truststore.location":  "/etc/kafka/ca.pem",
	}
	if len(values) != len(KeyNames()) {
		t.Fatalf("test covers %d keys of %d", len(values), len(KeyNames()))
	}
	cfg := DefaultConfig()
	for k, v := range values {
		if err := cfg.Set(k, " "+v+" "); err != nil {
			t.Fatalf("Set(%s, %s): %v", k, v, err)
		}
	}
	want := DefaultConfig()
	want.BrokerID, want.Hostname, want.Port, want.Log.Dir = 7, "h1", 0, "/x"
	want.Log.NumPartitions, want.Log.TopicPartitions = 4, map[string]int{"a": 8, "b.c": 16}
	want.Log.FileSize, want.Log.RollInterval, want.Log.FlushInterval = 1024, 2*time.Hour, 10
	want.Log.FlushIntervalTime, want.Log.FlushSchedulerInterval = 100*time.Millisecond, 50*time.Millisecond
	want.Log.TopicFlushIntervals = map[string]time.Duration{"a": time.Second, "b": 2 * time.Second}
	want.Log.RetentionTime, want.Log.TopicRetentionTimes = 3*time.Hour, map[string]time.Duration{"a": time.Hour}
	want.Log.RetentionSize, want.Log.CleanupInterval = 1000000, 5*time.Minute
	want.Server.MaxRequestSize, want.Log.MaxMessageSize = 1000, 500
	want.Server.SendBuffer, want.Server.ReceiveBuffer, want.NumThreads = 0, 65536, 3
	want.EnableZookeeper, want.ZkConnect = false, "z:1/kafka"
	want.ZkConnectionTimeout, want.ZkSessionTimeout, want.ZkSyncTime = time.Millisecond, 2*time.Millisecond, 3*time.Millisecond
	want.Server.UseSendfile = false
	want.Server.MaxIdle, want.Server.MaxQueuedRequestBytes = 30*time.Second, 2000
	want.MetricsListen = "127.0.0.1:9100"
	want.ReplicaPort, want.ReplicaListenerHost = 9093, "10.0.0.1"
	want.SSLKeystoreLocation, want.SSLTruststoreLocation = "/etc/kafka/broker-7.pem", "/etc/kafka/ca.pem"
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got  %+v\nwant %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// Get shows what Set read.
	for k, v := range values {
		got, _ := cfg.Get(k)
		if k == "enable.zookeeper" || k == "fetch.use.sendfile" {
			v = "false"
		}
		if got != v {
			t.Errorf("Get(%s) = %q, want %q", k, got, v)
		}
	}
}

// A bad value is refused with a message naming the key and the value, and
// leaves the field as it was.
func TestSetRefusesBadValues(t *testing.T) {
	tests := []struct{ key, value, msg string }{
		{"brokerid", "-1", `brokerid=-1: must be in 0..2147483647`},
		{"brokerid", "abc", `brokerid="abc": not an integer`},
		{"port", "70000", `port=70000: must be in 0..65535`},
		{"log.dir", "", `log.dir="": must not be empty`},
		{"num.partitions", "0", `num.partitions=0: must be in 1..2147483647`},
		{"log.file.size", "4", `log.file.size=4: must be in 5..2147483647`},
		{"log.file.size", "3000000000", `log.file.size=3000000000: must be in 5..2147483647`},
		{"log.roll.hours", "0", `log.roll.hours=0: must be in 1..2147483647`},
		{"log.retention.size", "-2", `log.retention.size=-2: must be at least -1`},
		{"max.socket.request.bytes", "1", `max.socket.request.bytes=1: must be in 2..2147483647`},
		{"max.message.size", "1.5", `max.message.size="1.5": not an integer`},
		{"enable.zookeeper", "yes", `enable.zookeeper="yes": want true or false`},
		{"topic.partition.count.map", "a:0", `entry "a:0": value must be an integer in 1..2147483647`},
		{"topic.partition.count.map", "a", `entry "a" is not topic:value`},
		{"topic.partition.count.map", "a/b:2", `invalid topic name`},
		{"topic.partition.count.map", "a:1,a:2", `topic "a" appears twice`},
		{"topic.flush.intervals.ms", "a:x", `entry "a:x": value must be an integer`},
		{"metrics.listen", "9100", `metrics.listen="9100": must be HOST:PORT`},
		{"no.such.key", "1", `unknown broker property "no.such.key"`},
	}
	for _, tc := range tests {
		cfg := DefaultConfig()
		err := cfg.Set(tc.key, tc.value)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Set(%s, %q) = %v; want a message containing %s", tc.key, tc.value, err, tc.msg)
		}
		if !reflect.DeepEqual(cfg, DefaultConfig()) {
			t.Errorf("Set(%s, %q) changed the config", tc.key, tc.value)
		}
	}
}

func TestValidateNamesEveryBadField(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Log.NumPartitions = 0
	cfg.Log.Dir = ""
	cfg.Log.FlushSchedulerInterval = 0
	cfg.Log.MaxMessageSize = 3
	err := cfg.Validate()
	for _, key := range []string{"num.partitions", "log.dir", "log.default.flush.scheduler.interval.ms", "max.message.size"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Validate() = %v; does not name %s", err, key)
		}
	}
	cfg = DefaultConfig()
	if err := cfg.Validate(); err != nil || cfg.UsesZookeeper() {
		t.Fatalf("the default runs without ZooKeeper: %v, %v", err, cfg.UsesZookeeper())
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Defaults, then the file, then the flags: flags win.
func TestLoadConfigFileThenFlags(t *testing.T) {
	path := writeFile(t, "brokerid=3\nlog.dir=/from/file\nnum.partitions=2\nport=1234\nmonitoring.period.secs=600\n")
	fs := pflag.NewFlagSet("kafka-server", pflag.ContinueOnError)
	AddFlags(fs)
	if err := fs.Parse([]string{"--log.dir=/from/flag", "--num.partitions", "5", "--enable.zookeeper=false", "--fetch.use.sendfile=false"}); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg, err := LoadConfig(path, fs, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BrokerID != 3 || cfg.Port != 1234 || cfg.Log.Dir != "/from/flag" || cfg.Log.NumPartitions != 5 || cfg.EnableZookeeper || cfg.Server.UseSendfile {
		t.Fatalf("config %+v", cfg)
	}
	if cfg.Log.MaxMessageSize != 1000000 {
		t.Fatalf("untouched key changed: %d", cfg.Log.MaxMessageSize)
	}
	if !strings.Contains(logs.String(), "monitoring.period.secs") {
		t.Fatalf("unknown key not reported: %s", logs.String())
	}
}

func TestLoadConfigFlushIntervalFollowsScheduler(t *testing.T) {
	cfg, err := LoadConfig(writeFile(t, "log.default.flush.scheduler.interval.ms=700\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Log.FlushIntervalTime != 700*time.Millisecond {
		t.Fatalf("log.default.flush.interval.ms = %v; Kafka 0.7 makes it follow the scheduler", cfg.Log.FlushIntervalTime)
	}
	cfg, err = LoadConfig(writeFile(t, "log.default.flush.scheduler.interval.ms=700\nlog.default.flush.interval.ms=5000\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Log.FlushIntervalTime != 5*time.Second {
		t.Fatalf("log.default.flush.interval.ms = %v", cfg.Log.FlushIntervalTime)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	_, err := LoadConfig(writeFile(t, "# x\nport=6667\nlog.file.size=big\n"), nil, nil)
	if err == nil || !strings.Contains(err.Error(), `:3: `) || !strings.Contains(err.Error(), `log.file.size="big": not an integer`) {
		t.Fatalf("err = %v; want file:line and the key", err)
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing"), nil, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	fs := pflag.NewFlagSet("kafka-server", pflag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	AddFlags(fs)
	err = fs.Parse([]string{"--num.partitions=-3"})
	if err == nil || !strings.Contains(err.Error(), `num.partitions=-3: must be in 1..2147483647`) {
		t.Fatalf("bad flag: %v", err)
	}
}

func TestFlagsDescribeEveryKey(t *testing.T) {
	fs := pflag.NewFlagSet("kafka-server", pflag.ContinueOnError)
	AddFlags(fs)
	usage := fs.FlagUsages()
	for _, k := range KeyNames() {
		f := fs.Lookup(k)
		if f == nil || f.Usage == "" || !strings.Contains(usage, "--"+k) {
			t.Errorf("key %s has no described flag", k)
		}
	}
	if !strings.Contains(usage, `(default 6667)`) {
		t.Errorf("defaults not shown:\n%s", usage)
	}
}
