package kubeapi

import "syscall"

// sysProcAttr kills the helper when the process that started it dies, so a
// crashed test never leaves an apiserver behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
