package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// versionPattern is the reference's version syntax (§2.2 rule 8).
const versionPattern = `^v?(\d+)\.(\d+)\.(\d+)((?:[-+][0-9A-Za-z.-]+)?)$`

// Version is a parsed vMAJOR.MINOR.PATCH[-pre][+build] release.
type Version struct {
	// Major, Minor and Patch are the release numbers.
	Major, Minor, Patch int
	// Suffix is the prerelease/build suffix including its leading - or +.
	Suffix string
}

// ParseVersion parses a release version with or without the leading "v".
func ParseVersion(s string) (Version, error) {
	m := regexp.MustCompile(versionPattern).FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("%q is not a version like v1.13.8", s)
	}
	var parts [3]int
	for i := range parts {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return Version{}, fmt.Errorf("%q is not a version like v1.13.8: %w", s, err)
		}
		parts[i] = n
	}
	return Version{Major: parts[0], Minor: parts[1], Patch: parts[2], Suffix: m[4]}, nil
}

// String renders the version with a leading "v".
func (v Version) String() string {
	return fmt.Sprintf("v%d.%d.%d%s", v.Major, v.Minor, v.Patch, v.Suffix)
}

// MinorString renders MAJOR.MINOR (e.g. "1.13").
func (v Version) MinorString() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Compare orders versions numerically; at equal numbers a prerelease
// (-suffix) sorts before the release and build metadata (+suffix) is ignored.
func (v Version) Compare(o Version) int {
	for _, d := range [3]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d != 0 {
			return sign(d)
		}
	}
	vp, op := prerelease(v.Suffix), prerelease(o.Suffix)
	switch {
	case vp == op:
		return 0
	case vp == "":
		return 1
	case op == "":
		return -1
	}
	return strings.Compare(vp, op)
}

func prerelease(suffix string) string {
	if !strings.HasPrefix(suffix, "-") {
		return ""
	}
	pre, _, _ := strings.Cut(suffix[1:], "+")
	return pre
}

func sign(d int) int {
	if d < 0 {
		return -1
	}
	return 1
}

// kubeSupport is one row of the Talos support matrix.
type kubeSupport struct {
	talosMinor       int // Talos 1.<talosMinor>
	kubeMin, kubeMax int // Kubernetes 1.<kubeMin> .. 1.<kubeMax>
}

// supportMatrix lists, per Talos 1.x minor this talosc knows, the Kubernetes
// 1.x minors that Talos release supports (the Talos support matrix). The
// oldest row is the oldest Talos talosc accepts; add a row per Talos minor.
func supportMatrix() []kubeSupport {
	return []kubeSupport{
		{talosMinor: 13, kubeMin: 31, kubeMax: 36},
		{talosMinor: 14, kubeMin: 32, kubeMax: 37},
	}
}

// KubernetesSupport returns the Kubernetes minors ("1.32", "1.37") that
// Talos release t supports, per the support matrix; ok is false for a
// Talos minor this talosc does not know. Messages that tell an operator
// which Kubernetes to move to quote it.
func KubernetesSupport(t Version) (oldest, newest string, ok bool) {
	row, ok := supportOf(t)
	if !ok {
		return "", "", false
	}
	return fmt.Sprintf("1.%d", row.kubeMin), fmt.Sprintf("1.%d", row.kubeMax), true
}

// supportOf is the support-matrix row of Talos release t.
func supportOf(t Version) (kubeSupport, bool) {
	for _, row := range supportMatrix() {
		if t.Major == 1 && row.talosMinor == t.Minor {
			return row, true
		}
	}
	return kubeSupport{}, false
}

// versions checks talos.version and kubernetes.version and normalises both
// to a leading "v" (§2.2 rule 8, §2.3 general).
func (v *validator) versions() {
	tv, tok := v.version("talos.version", &v.c.Talos.Version)
	kv, kok := v.version("kubernetes.version", &v.c.Kubernetes.Version)
	if !tok {
		return
	}
	m := supportMatrix()
	oldest, newest := m[0], m[len(m)-1]
	// Only the numbers count: v1.13.0-beta.1 is accepted like v1.13.0.
	if tv.Major < 1 || tv.Major == 1 && tv.Minor < oldest.talosMinor {
		v.errf("talos.version", "%s is older than v1.%d.0, the oldest Talos talosc supports", tv, oldest.talosMinor)
		return
	}
	if tv.Major > 1 || tv.Minor > newest.talosMinor {
		v.errf("talos.version", "%s is newer than this talosc knows (it knows Talos up to 1.%d); upgrade talosc", tv, newest.talosMinor)
		return
	}
	if !kok {
		return
	}
	if row, _ := supportOf(tv); kv.Major != 1 || kv.Minor < row.kubeMin || kv.Minor > row.kubeMax {
		v.errf("kubernetes.version", "%s is not supported by Talos 1.%d (it supports Kubernetes 1.%d to 1.%d)",
			kv, row.talosMinor, row.kubeMin, row.kubeMax)
	}
}

func (v *validator) version(path string, s *string) (Version, bool) {
	if !v.required(path) {
		return Version{}, false
	}
	ver, err := ParseVersion(*s)
	if err != nil {
		v.errf(path, "%q is not a version (vMAJOR.MINOR.PATCH, e.g. v1.13.8)", *s)
		return Version{}, false
	}
	*s = ver.String()
	return ver, true
}
