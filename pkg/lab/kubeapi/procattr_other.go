//go:build !linux

package kubeapi

import "syscall"

// sysProcAttr: outside Linux there is no parent-death signal; Close (or the
// test's cleanup) must stop the helper.
func sysProcAttr() *syscall.SysProcAttr { return nil }
