package log

import (
	"bufio"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// The SIGKILL test re-runs this test binary as a writer child (TestMain
// diverts it when crashDirEnv is set). The child appends to log.dir's
// partition "t-0" forever, printing "W <bytes>" before each append and
// "F <offset>" each time the flushed end moves; the parent kills it with
// SIGKILL at the first "W" after a few "F" reports (so mostly in the middle
// of an append's write or fsync), reopens the log and checks it.
const (
	crashDirEnv  = "KAFKA_LOG_CRASH_DIR"
	crashSeedEnv = "KAFKA_LOG_CRASH_SEED"
	crashRounds  = 20
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		if err := crashChild(dir, os.Getenv(crashSeedEnv)); err != nil {
			fmt.Printf("E %v\n", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashMessage is message seq of the crash test: its size and bytes are a
// function of seq, so the parent can check every byte.
func crashMessage(dst []byte, seq uint64) []byte {
	return wire.AppendMessage(dst, payload(seq, 8+int(seq*7919%1500)))
}

func crashConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.Dir = dir
	cfg.FileSize = 64 << 10
	return cfg
}

// crashChild is the writer. It returns only on error.
func crashChild(dir, seedText string) error {
	seed, err := strconv.ParseUint(seedText, 10, 64)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	cfg := crashConfig(dir)
	cfg.FlushInterval = 1 + rng.IntN(50)
	m, err := Open(cfg)
	if err != nil {
		return err
	}
	l, err := m.GetOrCreate("t", 0)
	if err != nil {
		return err
	}
	seq, _, err := checkCrashLog(l)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	reported := l.EndOffset()
	var set []byte
	for {
		set = set[:0]
		for range 1 + rng.IntN(100) {
			set = crashMessage(set, seq)
			seq++
		}
		// Announce the append, so the parent can kill us inside it.
		fmt.Fprintf(out, "W %d\n", len(set))
		if err := out.Flush(); err != nil {
			return err
		}
		if _, err := l.Append(set); err != nil {
			return err
		}
		if rng.IntN(10) == 0 {
			if err := l.Flush(); err != nil {
				return err
			}
		}
		if end := l.EndOffset(); end != reported {
			reported = end
			fmt.Fprintf(out, "F %d\n", end)
			if err := out.Flush(); err != nil {
				return err
			}
		}
	}
}

// checkCrashLog reads the whole log and checks that it holds exactly
// messages 0, 1, 2, ... It returns how many.
func checkCrashLog(l *Log) (count uint64, end wire.Offset, err error) {
	var want []byte
	off := l.StartOffset()
	for {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			return 0, 0, err
		}
		if r.Len == 0 {
			return count, off, nil
		}
		data, err := r.AppendTo(nil)
		r.Release()
		if err != nil {
			return 0, 0, err
		}
		it := wire.NewIterator(data, off)
		for it.Next() {
			want = crashMessage(want[:0], count)
			if got := data[it.Offset()-off : it.NextOffset()-off]; string(got) != string(want) {
				return 0, 0, fmt.Errorf("message %d at offset %d differs from what was written", count, it.Offset())
			}
			count++
		}
		if err := it.Err(); err != nil {
			return 0, 0, err
		}
		if it.ValidBytes() == 0 {
			return 0, 0, fmt.Errorf("no complete message in the %d bytes at %d", len(data), off)
		}
		off += wire.Offset(it.ValidBytes())
	}
}

func TestSIGKILLMidAppendKeepsAValidPrefixWithEveryFlushedMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns writer processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var prevCount uint64
	var tornRounds, unflushedRounds int
	defer func() {
		t.Logf("%d rounds: %d truncated a torn tail, %d kept unflushed bytes that reached the page cache", crashRounds, tornRounds, unflushedRounds)
	}()
	for round := range crashRounds {
		seed := rng.Uint64()
		reports := 1 + rng.IntN(30)
		flushed := runCrashChild(t, dir, seed, reports)

		var logged strings.Builder
		cfg := crashConfig(dir)
		cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		m, err := Open(cfg)
		if err != nil {
			t.Fatalf("round %d (seed %d): reopen: %v", round, seed, err)
		}
		l, err := m.Get("t", 0)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		count, end, err := checkCrashLog(l)
		if err != nil {
			t.Fatalf("round %d (seed %d): the recovered log is not a valid prefix: %v", round, seed, err)
		}
		if end < flushed {
			t.Fatalf("round %d (seed %d): recovered end %d is below the flushed offset %d the writer reported", round, seed, end, flushed)
		}
		if count < prevCount {
			t.Fatalf("round %d: %d messages, fewer than the %d of the round before", round, count, prevCount)
		}
		torn := strings.Contains(logged.String(), "truncating the torn tail")
		if torn {
			tornRounds++
		}
		if end > flushed {
			unflushedRounds++
		}
		t.Logf("round %d: killed after %d flush reports (flushed %d); recovered %d messages, %d bytes, %d segments; torn tail truncated: %v",
			round, reports, flushed, count, end, len(segmentFiles(t, l.dir)), torn)
		prevCount = count
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if round%2 == 1 { // half the rounds start the child without the marker too
			if err := os.Remove(l.dir + "/" + CleanShutdownFile); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runCrashChild starts a writer on dir, kills it with SIGKILL after it has
// reported `reports` flushes, and returns the last flushed offset it
// reported.
func runCrashChild(t *testing.T, dir string, seed uint64, reports int) wire.Offset {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashSeedEnv+"="+strconv.FormatUint(seed, 10))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() })
	defer watchdog.Stop()

	var flushed wire.Offset
	sc := bufio.NewScanner(stdout)
	for n := 0; sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "W ") {
			if n >= reports {
				break
			}
			continue
		}
		off, ok := strings.CutPrefix(line, "F ")
		if !ok {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("writer (seed %d): %s", seed, line)
		}
		v, err := strconv.ParseInt(off, 10, 64)
		if err != nil || wire.Offset(v) < flushed {
			t.Fatalf("writer (seed %d): bad report %q", seed, line)
		}
		flushed = wire.Offset(v)
		n++
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("writer (seed %d) ended early: %v; stderr: %s", seed, err, stderr.String())
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("writer (seed %d) did not die of SIGKILL: %v; stderr: %s", seed, err, stderr.String())
	}
	return flushed
}
