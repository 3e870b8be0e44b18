//go:build !race

package talosnode_test

// slow stretches the tests' deadlines (race_test.go).
const slow = 1
