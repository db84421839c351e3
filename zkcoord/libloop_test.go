package zkcoord

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/netdb11/kafka/zkcoord/zktest"
)

// stackBlock is one goroutine of a runtime.Stack dump, shaped as Go prints it.
func stackBlock(id, creator string, frames ...string) string {
	var b strings.Builder
	b.WriteString("goroutine " + id + " [state]:\n")
	for _, f := range frames {
		b.WriteString(f + "(0xc000010000)\n\t/src/file.go:1 +0x1\n")
	}
	b.WriteString("github.com/go-zookeeper/zk.(*Conn).loop(0xc000010000, {0x1, 0x2})\n\t/mod/zk/conn.go:485 +0x559\n")
	b.WriteString("github.com/go-zookeeper/zk.Connect.func1()\n\t/mod/zk/conn.go:224 +0x4b\n")
	b.WriteString("created by github.com/go-zookeeper/zk.Connect in goroutine " + creator + "\n\t/mod/zk/conn.go:223 +0x8e7")
	return b.String()
}

func TestLibraryLoopParked(t *testing.T) {
	const other = "goroutine 3 [select]:\nmain.f()\n\t/src/main.go:1 +0x1\ncreated by main.main in goroutine 1\n\t/src/main.go:2 +0x2"
	parked := stackBlock("40", "21", "sync.runtime_SemacquireWaitGroup", "sync.(*WaitGroup).Wait")
	inSetWatches := stackBlock("41", "21", "sync.(*Mutex).Lock", "github.com/go-zookeeper/zk.(*Conn).sendSetWatches")
	between := stackBlock("41", "21")
	reconnecting := stackBlock("41", "21", "net.(*Dialer).DialContext", "github.com/go-zookeeper/zk.(*Conn).connect")
	othersLoop := stackBlock("50", "22", "github.com/go-zookeeper/zk.(*Conn).sendSetWatches")
	for _, tc := range []struct {
		name string
		dump []string
		want bool
	}{
		{"no loop of ours", []string{other, othersLoop}, true},
		{"parked", []string{other, parked}, true},
		{"in sendSetWatches", []string{inSetWatches, other}, false},
		{"runnable between statements", []string{between}, false},
		{"reconnecting", []string{reconnecting}, true},
		{"an older loop parked, the newest not", []string{parked, inSetWatches}, false},
		{"the newest parked, another creator's not", []string{othersLoop, parked}, true},
	} {
		if got := libraryLoopParked([]byte(strings.Join(tc.dump, "\n\n")+"\n"), 21); got != tc.want {
			t.Errorf("%s: libraryLoopParked = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDialLeavesLibraryLoopParked: under the race detector, Dial returns
// only once the library's connection goroutine is past sendSetWatches, so a
// watch set at once cannot meet the library's unlocked zxid read. In every
// build, the goroutine must be found in the dump: if a new Go or library
// version printed it differently, the wait would silently do nothing.
func TestDialLeavesLibraryLoopParked(t *testing.T) {
	connect := zktest.Start(t)
	for range 5 {
		c, err := Dial(context.Background(), testConfig(connect))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		dump := buf[:runtime.Stack(buf, true)]
		found := libraryLoop(dump, goroutineID()) != nil
		parked := libraryLoopParked(dump, goroutineID())
		c.Close()
		if !found {
			t.Fatalf("no go-zookeeper connection loop created by this goroutine in the stack dump:\n%s", dump)
		}
		if raceEnabled && !parked {
			t.Fatal("Dial returned before the library's connection goroutine passed sendSetWatches")
		}
	}
}
