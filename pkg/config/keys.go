package config

import (
	"reflect"
	"strings"
)

// fieldSet is the allowed keys of a struct, from its yaml tags, in field order.
type fieldSet []fieldKey

type fieldKey struct {
	name  string
	index int
}

// yamlFields lists the yaml keys of struct type t (fields tagged "-" or not
// tagged are not keys).
func yamlFields(t reflect.Type) fieldSet {
	var fs fieldSet
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fs = append(fs, fieldKey{name: name, index: i})
	}
	return fs
}

func (fs fieldSet) lookup(key string) (int, bool) {
	for _, f := range fs {
		if f.name == key {
			return f.index, true
		}
	}
	return 0, false
}

func (fs fieldSet) names() []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

// unknownKeyMessage refuses key at path, suggesting the closest allowed key.
func unknownKeyMessage(path, key string, allowed []string) string {
	if s := suggest(key, allowed); s != "" {
		return path + " is not a valid key; did you mean " + s + "?"
	}
	return path + " is not a valid key (valid keys: " + strings.Join(allowed, ", ") + ")"
}

// suggest returns the allowed key closest to key: a case-insensitive match,
// else the nearest within edit distance 2 (shorter keys need a closer match).
func suggest(key string, allowed []string) string {
	for _, a := range allowed {
		if strings.EqualFold(a, key) {
			return a
		}
	}
	best, bestDist := "", 3
	for _, a := range allowed {
		d := editDistance(strings.ToLower(key), a)
		if d < bestDist && d < len(key) && d < len(a) {
			best, bestDist = a, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and adjacent transpositions (regoin -> region is 1).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 64
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range cur {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// moved is a key that older reference versions accepted somewhere else.
type moved struct {
	to      string
	message string
}

// movedKey reports keys that moved (§2.2 rule 4) or that belong to another
// section.
func movedKey(path string) (moved, bool) {
	parent, key := splitLast(path)
	to := ""
	switch {
	case path == "network.cidr":
		to = "network.cluster.cidr"
	case parent == "proxmox.network.cluster" && (key == "vlan" || key == "kubeapi_vip"):
		to = "network.cluster." + key
	case parent == "proxmox.network.external" && isExternalKey(key):
		to = "network.external." + key
	case parent == "network.cluster" && (key == "anchor_cidr" || key == "ingress_pool"):
		return moved{to: "network.external." + key, message: path +
			": anchor_cidr and ingress_pool describe the externally routed network; set them under network.external"}, true
	default:
		return moved{}, false
	}
	return moved{to: to, message: path + " has moved to " + to}, true
}

func isExternalKey(key string) bool {
	switch key {
	case "cidr", "gateway", "anchor_cidr", "kubeapi_vip", "vlan", "ingress_pool":
		return true
	}
	return false
}

func splitLast(path string) (parent, key string) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		return "", path
	}
	return path[:i], path[i+1:]
}
