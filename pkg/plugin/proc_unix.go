//go:build unix

package plugin

import (
	"errors"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own and makes
// cancelling its context kill that whole group, so a plugin's children (a
// shell's sleep, a kubectl it started) cannot outlive a timeout or keep its
// pipes open.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
}

// textBusy reports an exec that failed because the executable is still open
// for writing somewhere (ETXTBSY): a plugin being installed right now, or a
// file another goroutine's fork briefly inherited (golang/go#22315). It is
// worth a short retry.
func textBusy(err error) bool { return errors.Is(err, syscall.ETXTBSY) }
