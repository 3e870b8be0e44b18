package upgrade_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/upgrade"
)

func TestKubernetesSteps(t *testing.T) {
	t.Parallel()
	releases := []string{
		"v1.34.0", "v1.34.3", "v1.35.0", "v1.35.1", "v1.35.2", "v1.35.3", "v1.35.4",
		"v1.36.0", "v1.36.1", "v1.36.2-rc.0", "v1.37.0-alpha.1", "latest", "v2.0.0",
	}
	for _, tc := range []struct {
		name            string
		running, target string
		releases        []string
		want            []string
		err             string
	}{
		{"equal", "v1.36.1", "v1.36.1", releases, nil, ""},
		{"equal, without the v", "1.36.1", "v1.36.1", releases, nil, ""},
		{"patch only", "v1.36.0", "v1.36.1", releases, []string{"v1.36.1"}, ""},
		{"one minor", "v1.35.4", "v1.36.1", releases, []string{"v1.36.1"}, ""},
		{"two minors", "v1.34.3", "v1.36.1", releases, []string{"v1.35.4", "v1.36.1"}, ""},
		{"three minors, the middle one has no release", "v1.33.1", "v1.36.1", releases, []string{"v1.34.3", "v1.35.4", "v1.36.1"}, ""},
		{"no releases at all: each minor at .0", "v1.34.3", "v1.37.0", nil, []string{"v1.35.0", "v1.36.0", "v1.37.0"}, ""},
		{"prereleases are never a step", "v1.35.4", "v1.38.0", releases, []string{"v1.36.1", "v1.37.0", "v1.38.0"}, ""},
		{"unordered releases", "v1.34.3", "v1.36.1", []string{"v1.35.4", "v1.35.10", "v1.35.9"}, []string{"v1.35.10", "v1.36.1"}, ""},
		{"from a prerelease to its release", "v1.36.0-rc.1", "v1.36.0", releases, []string{"v1.36.0"}, ""},
		{"downgrade", "v1.36.1", "v1.35.4", releases, nil, "kubernetes.version v1.35.4 is older than the running v1.36.1; kubernetes downgrades are not supported"},
		{"patch downgrade", "v1.36.1", "v1.36.0", releases, nil, "kubernetes.version v1.36.0 is older than the running v1.36.1; kubernetes downgrades are not supported"},
		{"major change", "v1.36.1", "v2.0.0", releases, nil, "kubernetes.version v2.0.0 changes the major version of the running v1.36.1"},
		{"unreadable running", "", "v1.36.1", releases, nil, "running kubernetes version"},
		{"unreadable target", "v1.36.1", "latest", releases, nil, "kubernetes.version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := upgrade.KubernetesSteps(tc.running, tc.target, tc.releases)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("KubernetesSteps(%s, %s) = %v, %v; want an error containing %q", tc.running, tc.target, got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("KubernetesSteps(%s, %s) = %v, %v; want %v", tc.running, tc.target, got, err, tc.want)
			}
		})
	}
}

func TestCheckDowngrade(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pinned, running string
		downgrade       bool
		err             bool
	}{
		{"v1.14.1", "v1.14.1", false, false},
		{"v1.14.1", "v1.13.8", false, false},
		{"v1.14.0", "v1.14.0-beta.1", false, false},
		{"v1.14.0-beta.1", "v1.14.0", true, true},
		{"v1.13.8", "v1.14.1", true, true},
		{"v1.14.1", "unknown", false, true},
	} {
		err := upgrade.CheckDowngrade(upgrade.KeyTalos, tc.pinned, tc.running)
		_, downgrade := errors.AsType[*upgrade.DowngradeError](err)
		if downgrade != tc.downgrade || (err != nil) != tc.err {
			t.Errorf("CheckDowngrade(%s, %s) = %v; want downgrade %v, error %v", tc.pinned, tc.running, err, tc.downgrade, tc.err)
		}
	}
	err := upgrade.CheckDowngrade(upgrade.KeyTalos, "v1.13.8", "1.14.1")
	if want := "talos.version v1.13.8 is older than the running v1.14.1; talos downgrades are not supported"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
