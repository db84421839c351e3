package kit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Proc is a long-running process the harness started (a broker, a
// ZooKeeper, a mirror, a client): it owns it and stops it. Every server of
// the experiments, the fault suite and the pipeline runs as one.
type Proc struct {
	name    string
	cmd     *exec.Cmd
	log     string
	started time.Time     // just before the process started
	done    chan struct{} // closed when the process has exited
	err     error         // Wait's result, valid after done
	// closeErr is the log file's Close result, valid after done.
	closeErr error

	stopOnce sync.Once
	stopErr  error
}

// Output says where a started process writes.
type Output struct {
	// Log receives the process's standard error, and its standard output
	// unless Stdout is set.
	Log string
	// Append adds to Log rather than truncating it: a restarted server's
	// log continues its earlier life's.
	Append bool
	// Stdout, when set, receives the standard output instead (a client's
	// JSON summary).
	Stdout io.Writer
	// Stdin, when set, is the standard input.
	Stdin io.Reader
}

// Start starts cmd (made by a Host: the process is argv itself, so its PID
// is the one measured and signalled) in a process group of its own, with its
// output in out.Log. It is not tied to any context: the caller stops it with
// Stop or Kill, and Start's caller must build cmd without one that may be
// cancelled (context.Background or context.WithoutCancel).
func Start(name string, cmd *exec.Cmd, out Output) (*Proc, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if out.Append {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	log, err := os.OpenFile(out.Log, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kit: %w", err)
	}
	cmd.Stdout, cmd.Stderr, cmd.Stdin = log, log, out.Stdin
	if out.Stdout != nil {
		cmd.Stdout = out.Stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("kit: starting %s: %w", name, err), log.Close())
	}
	p := &Proc{name: name, cmd: cmd, log: out.Log, started: started, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		p.closeErr = log.Close()
		close(p.done)
	}()
	return p, nil
}

// StartOn starts argv on host with its output in logPath (truncated): the
// experiments' servers.
func StartOn(host Host, name, logPath string, argv ...string) (*Proc, error) {
	return Start(name, host.Command(context.Background(), argv...), Output{Log: logPath})
}

// Name names the process in logs and errors.
func (p *Proc) Name() string { return p.name }

// LogPath is the file its output goes to.
func (p *Proc) LogPath() string { return p.log }

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Started is when the process was started (just before).
func (p *Proc) Started() time.Time { return p.started }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns how it ended (exec.Cmd's
// Wait result).
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Exited reports whether the process has ended, with its log and exit
// status (for Server and WaitFor).
func (p *Proc) Exited() (bool, error) {
	if p.Running() {
		return false, nil
	}
	return true, fmt.Errorf("kit: %s exited (log: %s): %v", p.name, p.log, p.err)
}

// CPUSeconds is the CPU time the process has used.
func (p *Proc) CPUSeconds() (float64, error) { return CPUSeconds(p.Pid()) }

// RSSBytes is the process's resident memory.
func (p *Proc) RSSBytes() (int64, error) { return RSSBytes(p.Pid()) }

// Signal sends sig to the process (not its group). Signalling a process
// that has exited does nothing.
func (p *Proc) Signal(sig syscall.Signal) error {
	if !p.Running() {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kit: signalling %s: %w", p.name, err)
	}
	return nil
}

// Kill sends SIGKILL (and SIGCONT, for a process a nemesis stopped) and
// waits for the process to end: a crash.
func (p *Proc) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	_ = p.Signal(syscall.SIGCONT)
	<-p.done
}

// Stop ends the process gracefully: SIGTERM (Kafka flushes and writes its
// clean-shutdown marker), and SIGCONT in case a nemesis stopped it; after
// timeout it kills the process group. It returns an error when the process
// had to be killed or exited with a failure of its own; an end by our
// signal, or the JVM's status 143 (128 + SIGTERM), is a clean stop. Calling
// it again returns the first call's result.
func (p *Proc) Stop(timeout time.Duration) error {
	p.stopOnce.Do(func() { p.stopErr = p.stopNow(timeout) })
	return p.stopErr
}

func (p *Proc) stopNow(timeout time.Duration) error {
	if p.Running() {
		_ = p.Signal(syscall.SIGTERM)
		_ = p.Signal(syscall.SIGCONT)
		select {
		case <-p.done:
		case <-time.After(timeout):
			_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
			<-p.done
			return errors.Join(fmt.Errorf("kit: %s ignored SIGTERM for %v and was killed", p.name, timeout), p.closeErr)
		}
	}
	var exitErr *exec.ExitError
	err := p.err
	if errors.As(err, &exitErr) {
		if ws := exitErr.Sys().(syscall.WaitStatus); ws.Signaled() || ws.ExitStatus() == 128+int(syscall.SIGTERM) {
			err = nil // ended by our SIGTERM
		}
	}
	if err != nil {
		err = fmt.Errorf("kit: %s exited: %w (log: %s)", p.name, err, p.log)
	}
	return errors.Join(err, p.closeErr)
}
