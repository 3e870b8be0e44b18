//go:build !linux

package cli

import "os/exec"

// DieWithParent is Linux's parent-death signal; elsewhere children of a
// killed front door run to their end.
func DieWithParent(*exec.Cmd) {}
