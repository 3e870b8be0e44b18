package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/cli"
)

// maxOutput bounds what a plugin may write on stdout: a state document is
// small, and a runaway plugin must not exhaust the front door's memory.
const maxOutput = 64 << 20

// waitDelay is how long Wait waits for a plugin's pipes after it exited (or
// was killed) before closing them; children that kept them open lose them.
const waitDelay = 2 * time.Second

// invocation is one execution of a plugin binary.
type invocation struct {
	path    string
	args    []string
	env     []string // nil means the current process's environment
	stdin   []byte
	stderr  io.Writer // nil discards
	timeout time.Duration
}

// outcome is what an invocation produced.
type outcome struct {
	stdout   []byte
	exitCode int  // -1 when the process did not exit normally
	timedOut bool // the timeout (not the caller's context) ended it
	err      error
}

// startAttempts bounds the retries of a start that failed with ETXTBSY.
const startAttempts = 5

// execute runs inv and waits for it. The error in the outcome is nil only when
// the process exited 0.
func execute(ctx context.Context, inv invocation) outcome {
	runCtx, cancel := context.WithTimeout(ctx, inv.timeout)
	defer cancel()
	var cmd *exec.Cmd
	out := &limitedBuffer{max: maxOutput}
	var err error
	for attempt := range startAttempts {
		cmd = exec.CommandContext(runCtx, inv.path, inv.args...)
		ownProcessGroup(cmd)
		cli.DieWithParent(cmd)
		cmd.WaitDelay = waitDelay
		cmd.Env = inv.env
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Stdin = bytes.NewReader(inv.stdin)
		cmd.Stdout = out
		cmd.Stderr = inv.stderr
		if cmd.Stderr == nil {
			cmd.Stderr = io.Discard
		}
		if err = cmd.Start(); err == nil || !textBusy(err) || runCtx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
	}
	if err == nil {
		err = cmd.Wait()
	}
	res := outcome{stdout: out.Bytes(), exitCode: -1, err: err}
	if cmd.ProcessState != nil {
		res.exitCode = cmd.ProcessState.ExitCode()
	}
	switch {
	case ctx.Err() != nil:
		res.err = fmt.Errorf("stopped: %w", ctx.Err())
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		res.timedOut = true
		res.err = fmt.Errorf("timed out after %s: %w", inv.timeout, context.DeadlineExceeded)
	case out.overflow:
		res.err = fmt.Errorf("wrote more than %d MiB on stdout", maxOutput>>20)
	case err != nil && errors.Is(err, exec.ErrWaitDelay) && res.exitCode == 0:
		// It exited 0 but a child kept stdout open; what it wrote is complete.
		res.err = nil
	}
	return res
}

// limitedBuffer keeps at most max bytes. Past that it fails further writes,
// or, with discard set, drops them quietly.
type limitedBuffer struct {
	bytes.Buffer
	max      int
	discard  bool
	overflow bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.overflow = true
		if b.discard {
			return len(p), nil
		}
		return 0, errors.New("output too large")
	}
	return b.Buffer.Write(p)
}

// prefixWriter writes each line it receives to w with prefix in front. It is
// safe for concurrent use. Call Flush to write a final unterminated line.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func newPrefixWriter(w io.Writer, prefix string) *prefixWriter {
	return &prefixWriter{w: w, prefix: prefix}
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		line := p.buf[:i+1]
		if _, err := io.WriteString(p.w, p.prefix+string(line)); err != nil {
			return 0, err
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// Flush writes a pending unterminated line, adding the newline.
func (p *prefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		_, _ = io.WriteString(p.w, p.prefix+string(p.buf)+"\n")
		p.buf = nil
	}
}
