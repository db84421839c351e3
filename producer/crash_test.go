package producer

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/brokertest"
	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/netdb11/kafka/zkcoord/zktest"
)

// TestAcksAllSurvivesSIGKILLOfTheLeader: three kafka-server processes
// (min.insync.replicas=2), an RF=3 topic, a producer with acks=-1 found
// through zk.connect; the leader is killed with SIGKILL mid-stream. The
// producer follows the new leader (elected after the dead broker's session
// expires) and every message it was told is acknowledged is on the new
// leader.
func TestAcksAllSurvivesSIGKILLOfTheLeader(t *testing.T) {
	connect := zktest.Start(t) // first: -short skips before the build
	dir := brokertest.Build(t, "github.com/netdb11/kafka/broker/cmd/kafka-server")
	ctx, cancel := context.WithTimeout(t.Context(), clusterTimeout)
	defer cancel()
	zk, err := zkcoord.Dial(ctx, zkcoord.Config{Connect: connect})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	procs := map[wire.BrokerID]*exec.Cmd{}
	for id := range 3 {
		cmd := exec.Command(filepath.Join(dir, "kafka-server"), fmt.Sprintf("--brokerid=%d", id), "--log.dir="+t.TempDir(),
			"--zk.connect="+connect, "--zk.sessiontimeout.ms=2000", "--hostname=127.0.0.1", "--port=0",
			"--log.flush.interval=1", "--replica.lag.time.max.ms=1000", "--replica.fetch.wait.max.ms=100",
			"--replica.fetch.backoff.ms=20", "--replica.high.watermark.checkpoint.interval.ms=100", "--min.insync.replicas=2")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[wire.BrokerID(id)] = cmd
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
			}
			if t.Failed() {
				t.Logf("broker %d:\n%s", id, stderr.String())
			}
		})
	}
	wait.Within(t, clusterTimeout, "three brokers to register", func() bool {
		live, err := zkcoord.RegistryOn(zk).Brokers(false)
		return err == nil && len(live) == 3
	})
	if err := zkcoord.ReplicationOn(zk).CreateTopic("k", zkcoord.Assignment{0: {0, 1, 2}}); err != nil {
		t.Fatal(err)
	}
	state := func(isr int) zkcoord.PartitionState {
		var st zkcoord.PartitionState
		wait.Within(t, clusterTimeout, fmt.Sprintf("k-0 to have a live leader and an ISR of %d", isr), func() bool {
			s, _, ok, err := zkcoord.ReplicationOn(zk).PartitionStateOf("k", 0)
			live, lerr := zkcoord.RegistryOn(zk).Brokers(false)
			st = s
			_, up := live[s.Leader]
			return err == nil && lerr == nil && ok && up && len(s.ISR) == isr
		})
		return st
	}
	st := state(3)

	cfg := acksConfig("", wire.AcksAll)
	cfg.ZkConnect = connect
	cfg.MessageSendMaxRetries = 300 // 30 s: the election waits for the session to expire
	p := newProducer(t, cfg)
	s := streamAcked(30, func(i int) (string, error) {
		v := fmt.Sprintf("m%d", i)
		return v, p.Send(t.Context(), "k", values(v)...)
	})
	wait.Within(t, clusterTimeout, "50 acknowledged messages", func() bool { return s.count() >= 50 })
	leader := procs[st.Leader]
	if err := leader.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	leader.Wait()
	s.mark()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("the producer did not carry on after SIGKILL of leader %d: %v", st.Leader, err)
		}
	case <-time.After(2 * clusterTimeout):
		t.Fatal("the producer made no progress after the leader was killed")
	}
	now := state(2)
	if now.Leader == st.Leader {
		t.Fatalf("leader still %d", now.Leader)
	}
	b, ok, err := zkcoord.RegistryOn(zk).Broker(now.Leader)
	if err != nil || !ok {
		t.Fatalf("new leader %d: %v %v", now.Leader, ok, err)
	}
	want := s.values()
	if missing := waitReadable(t, b.Addr(), "k", want); len(missing) > 0 {
		t.Fatalf("%d of %d acknowledged messages lost after SIGKILL of leader %d (new leader %d), first %q",
			len(missing), len(want), st.Leader, now.Leader, missing[0])
	}
	t.Logf("%d acknowledged, all on the new leader %d (killed %d)", len(want), now.Leader, st.Leader)
}
