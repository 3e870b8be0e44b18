package proxmox

import (
	"maps"
	"slices"
)

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// sortedVMIDs returns the VMIDs of m, ascending.
func sortedVMIDs[V any](m map[int]V) []int {
	return slices.Sorted(maps.Keys(m))
}
