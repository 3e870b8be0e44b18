package plugin

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Order returns ps in run order: a topological sort over each plugin's After
// list, restricted to the plugins in ps (After names that are not installed
// are ignored, as is a plugin naming itself), alphabetical within a tier. A
// cycle is reported through warn (when not nil) and the plugins still pending
// then run alphabetically. Names in ps must be unique.
func Order(ps []Plugin, warn func(string)) []Plugin {
	byName := make(map[string]Plugin, len(ps))
	for _, p := range ps {
		byName[p.Name] = p
	}
	pending := make(map[string]map[string]bool, len(ps))
	for _, p := range ps {
		deps := map[string]bool{}
		for _, a := range p.After {
			if _, installed := byName[a]; installed && a != p.Name {
				deps[a] = true
			}
		}
		pending[p.Name] = deps
	}
	ordered := make([]Plugin, 0, len(ps))
	for len(pending) > 0 {
		var ready []string
		for name, deps := range pending {
			if len(deps) == 0 {
				ready = append(ready, name)
			}
		}
		if len(ready) == 0 {
			rest := slices.Sorted(maps.Keys(pending))
			if warn != nil {
				warn(fmt.Sprintf("plugin ordering has a cycle (%s); falling back to alphabetical", strings.Join(rest, ", ")))
			}
			for _, n := range rest {
				ordered = append(ordered, byName[n])
			}
			break
		}
		slices.Sort(ready)
		for _, n := range ready {
			ordered = append(ordered, byName[n])
			delete(pending, n)
		}
		for _, deps := range pending {
			for _, n := range ready {
				delete(deps, n)
			}
		}
	}
	return ordered
}
