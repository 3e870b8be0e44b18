//go:build race

package talosnode_test

// slow stretches the tests' deadlines: the race detector makes every TLS
// handshake and gRPC call several times slower.
const slow = 5
