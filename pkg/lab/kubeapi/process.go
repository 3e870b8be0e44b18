package kubeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// process is the running helper.
type process struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error // set before exited is closed
}

// startProcess execs the helper, logging to DataDir/apiserver.log, and waits
// for its ready file; it returns what that file says (the apiserver's
// address, its etcd).
func startProcess(ctx context.Context, o Options, f pkiFiles, listen string) (*process, readyInfo, error) {
	ready := filepath.Join(o.DataDir, "ready")
	if err := os.Remove(ready); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, readyInfo{}, fmt.Errorf("kubeapi: %w", err)
	}
	p := &process{logPath: filepath.Join(o.DataDir, "apiserver.log"), exited: make(chan struct{})}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, readyInfo{}, fmt.Errorf("kubeapi: %w", err)
	}
	p.cmd = exec.Command(o.Binary, apiserverArgs(o, f, listen)...) //nolint:gosec,noctx // the helper outlives ctx; Close stops it
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = sysProcAttr()

	started := make(chan error, 1)
	go func() {
		// The parent-death signal belongs to the thread that forked the
		// child: keep that thread alive (locked) while the child runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer logf.Close()
		if err := p.cmd.Start(); err != nil {
			started <- err
			close(p.exited)
			return
		}
		started <- nil
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, readyInfo{}, fmt.Errorf("kubeapi: start %s: %w", o.Binary, err)
	}

	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if ri, err := readReady(ready); err == nil {
			return p, ri, nil
		}
		select {
		case <-p.exited:
			return nil, readyInfo{}, fmt.Errorf("kubeapi: kube-apiserver exited before it was ready: %w\n%s", p.waitErr, p.logTail())
		case <-ctx.Done():
			_ = p.stop()
			return nil, readyInfo{}, fmt.Errorf("kubeapi: kube-apiserver not ready: %w\n%s", ctx.Err(), p.logTail())
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM and waits, then kills after stopTimeout.
func (p *process) stop() error {
	select {
	case <-p.exited:
		return p.exitErr()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.exitErr()
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("kubeapi: kube-apiserver ignored SIGTERM for %s; killed", stopTimeout)
	}
}

func (p *process) exitErr() error {
	if p.waitErr != nil {
		return fmt.Errorf("kubeapi: kube-apiserver: %w (log: %s)", p.waitErr, p.logPath)
	}
	return nil
}

func (p *process) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	return tail(b, 4000)
}

// readyInfo is what the helper writes into its ready file: the apiserver's
// address, its process id and the etcd it stores in (absent from helpers
// built before it was reported).
type readyInfo struct {
	Address string `json:"address"`
	PID     int    `json:"pid"`
	Etcd    string `json:"etcd"`
}

func readReady(path string) (readyInfo, error) {
	var ri readyInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return ri, err
	}
	if err := json.Unmarshal(b, &ri); err != nil {
		return ri, fmt.Errorf("kubeapi: ready file %s: %w", path, err)
	}
	return ri, nil
}
