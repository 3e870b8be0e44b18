//go:build !unix

package plugin

import "os/exec"

// ownProcessGroup is a no-op where process groups do not exist; cancelling
// the context kills the plugin process only.
func ownProcessGroup(*exec.Cmd) {}

// textBusy is false where ETXTBSY does not exist.
func textBusy(error) bool { return false }
