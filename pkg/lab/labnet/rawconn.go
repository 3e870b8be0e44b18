package labnet

import "syscall"

// syscallRawConn is the type net.Dialer.ControlContext hands over.
type syscallRawConn = syscall.RawConn
