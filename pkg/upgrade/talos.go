package upgrade

import (
	"fmt"
	"strings"
)

// NeedsTalosUpgrade decides whether a node needs a Talos upgrade (I-R3):
// when the Talos version it runs differs from the pin, or the Image
// Factory schematic it runs differs from the one its pool's extensions
// give (an extension added or removed reinstalls the node on the same
// version). reason says what changes, for plans and logs ("" when
// nothing does). A node running a newer Talos than the pin is refused
// (I-11: Talos downgrades are not supported), as is a version that does
// not parse. The caller passes only values it read: a schematic it could
// not read is the caller's to decide (I-R3 counts it as matching), not an
// empty string here, where "" is a node without a schematic.
func NeedsTalosUpgrade(running, pinned, runningSchematic, wantSchematic string) (bool, string, error) {
	pin, run, err := parsePair(KeyTalos, pinned, running)
	if err != nil {
		return false, "", err
	}
	var changes []string
	if pin.Compare(run) != 0 {
		changes = append(changes, fmt.Sprintf("Talos %s → %s", run, pin))
	}
	if runningSchematic != wantSchematic {
		changes = append(changes, fmt.Sprintf("schematic %s → %s", shortSchematic(runningSchematic), shortSchematic(wantSchematic)))
	}
	return len(changes) > 0, strings.Join(changes, ", "), nil
}

// shortSchematic abbreviates a 64-hex-digit schematic ID for humans, as
// git abbreviates commits.
func shortSchematic(id string) string {
	const n = 12
	switch {
	case id == "":
		return "none"
	case len(id) > n:
		return id[:n] + "…"
	}
	return id
}
