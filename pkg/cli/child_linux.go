package cli

import (
	"os/exec"
	"syscall"
)

// DieWithParent asks the kernel to send cmd SIGTERM when this process dies,
// even by SIGKILL, so phases and plugins a killed front door started stop
// (and write their partial state) instead of carrying on unseen while a
// rerun races them. Call it after anything else that sets SysProcAttr.
// (The signal follows the OS thread that started cmd; Go's runtime keeps
// its threads for the life of the process.)
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
