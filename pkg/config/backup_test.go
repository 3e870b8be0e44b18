package config_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
)

func newIdentity(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestBackup_Defaults: a section with only recipients gets the default
// dir, max_age and retention; an unset keep count takes its default beside
// a set one.
func TestBackup_Defaults(t *testing.T) {
	t.Parallel()
	r := newIdentity(t).Recipient().String()
	c := mustLoad(t, openstackBase+"backup:\n  recipients: ["+r+"]\n")
	want := &config.Backup{
		Recipients: []string{r}, Dir: config.DefaultBackupDir, MaxAge: "26h",
		Keep: config.BackupKeep{Hourly: 24, Daily: 7, Weekly: 4, Monthly: 12},
	}
	if d := cmp.Diff(want, c.Backup); d != "" {
		t.Errorf("backup (-want +got):\n%s", d)
	}
	if got := c.Backup.MaxAgeDuration(); got != 26*time.Hour {
		t.Errorf("MaxAgeDuration = %v", got)
	}
	if got, want := c.BackupDir(), filepath.Join(c.Dir, "backups"); got != want {
		t.Errorf("BackupDir = %q, want %q", got, want)
	}
	rs, err := c.Backup.AgeRecipients()
	if err != nil || len(rs) != 1 {
		t.Fatalf("AgeRecipients = %v, %v", rs, err)
	}

	c = mustLoad(t, openstackBase+"backup:\n  recipients: ["+r+"]\n  dir: /srv/backups/../demo\n  max_age: 90m\n  keep: {daily: 30, monthly: 0}\n")
	want = &config.Backup{
		Recipients: []string{r}, Dir: "/srv/backups/../demo", MaxAge: "90m",
		Keep: config.BackupKeep{Hourly: 24, Daily: 30, Weekly: 4, Monthly: 0},
	}
	if d := cmp.Diff(want, c.Backup); d != "" {
		t.Errorf("backup (-want +got):\n%s", d)
	}
	if c.BackupDir() != "/srv/demo" || c.Backup.MaxAgeDuration() != 90*time.Minute {
		t.Errorf("BackupDir %q MaxAgeDuration %v", c.BackupDir(), c.Backup.MaxAgeDuration())
	}
	c = mustLoad(t, openstackBase+"backup:\n  recipients: ["+r+"]\n  keep: {hourly: 1, daily: 0, weekly: 0, monthly: 0}\n")
	if c.Backup.Keep != (config.BackupKeep{Hourly: 1}) {
		t.Errorf("keep only the newest: %+v", c.Backup.Keep)
	}
}

// TestBackup_Swift: backup.swift names the container; the directory keeps
// its default (unused).
func TestBackup_Swift(t *testing.T) {
	t.Parallel()
	r := newIdentity(t).Recipient().String()
	c := mustLoad(t, openstackBase+"backup:\n  recipients: ["+r+"]\n  swift: {container: demo-backups}\n")
	if c.Backup.Swift == nil || c.Backup.Swift.Container != "demo-backups" {
		t.Errorf("backup.swift = %+v", c.Backup.Swift)
	}
}

// TestBackup_Absent: no section (or an empty one) configures no backups.
func TestBackup_Absent(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{openstackBase, openstackBase + "backup:\n  # recipients: []\n"} {
		c := mustLoad(t, doc)
		if c.Backup != nil {
			t.Errorf("backup = %+v, want nil", c.Backup)
		}
		if got := c.BackupDir(); got != filepath.Join(c.Dir, "backups") {
			t.Errorf("BackupDir = %q", got)
		}
	}
}

// TestBackup_InIncludeFile: the section merges from an include file like
// any other.
func TestBackup_InIncludeFile(t *testing.T) {
	t.Parallel()
	r := newIdentity(t).Recipient().String()
	c, probs := load(t, map[string]string{
		config.ClusterFile: openstackBase + "include: [secrets.yaml]\nbackup: {dir: b}\n",
		config.SecretsFile: "backup: {recipients: [" + r + "]}\n",
	}, config.LoadOptions{})
	if probs != nil {
		t.Fatal(probs)
	}
	if c.Backup.Dir != "b" || len(c.Backup.Recipients) != 1 {
		t.Errorf("backup %+v", c.Backup)
	}
}

func TestBackup_Problems(t *testing.T) {
	t.Parallel()
	id := newIdentity(t)
	r := id.Recipient().String()
	with := func(section string) map[string]string {
		return only(openstackBase + "backup:\n" + section)
	}
	rs := "  recipients: [" + r + "]\n"
	none := config.LoadOptions{}
	const hint = "list at least one age public key (age1...); kubectl talosc backup init makes an identity and adds its recipient"
	runProblemCases(t, []problemCase{
		{"recipients required", with("  dir: b\n"), none, config.Problems{inCluster("backup.recipients", "backup.recipients is required: "+hint)}},
		{"recipients empty", with("  recipients: []\n"), none, config.Problems{inCluster("backup.recipients", "backup.recipients is empty: "+hint)}},
		{"recipients not a list", with("  recipients: " + r + "\n"), none, config.Problems{inCluster("backup.recipients", `backup.recipients must be a list, not the string "`+r[:40]+`..."`)}},
		{
			"bad recipient", with("  recipients: [" + r + ", age1nope]\n"), none,
			config.Problems{inCluster("backup.recipients[1]", `backup.recipients[1] "age1nope" is not an age X25519 recipient (age1..., as age-keygen -y prints)`)},
		},
		{
			"ssh key", with("  recipients: [ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHsKLqeplhpW+uObz5dvMgjz1OxfM/XXUB+VHtZ6isGN]\n"), none,
			config.Problems{inCluster("backup.recipients[0]", "backup.recipients[0] is an SSH key; only age X25519 recipients (age1...) are accepted")},
		},
		{"twice", with("  recipients: [" + r + ", " + r + "]\n"), none, config.Problems{inCluster("backup.recipients[1]", "backup.recipients[1] lists "+r+" twice")}},
		{"empty dir", with(rs + "  dir: ''\n"), none, config.Problems{inCluster("backup.dir", "backup.dir is empty; name a directory, or leave dir out for the default backups")}},
		{"bad duration", with(rs + "  max_age: 1d\n"), none, config.Problems{inCluster("backup.max_age", `backup.max_age "1d" is not a Go duration; write it as 26h, 90m or 1h30m`)}},
		{"bare number", with(rs + "  max_age: 26\n"), none, config.Problems{inCluster("backup.max_age", `backup.max_age "26" is not a Go duration; write it as 26h, 90m or 1h30m`)}},
		{"too short", with(rs + "  max_age: 30s\n"), none, config.Problems{inCluster("backup.max_age", "backup.max_age 30s is shorter than a minute; set at least 1m")}},
		{"negative", with(rs + "  max_age: -2h\n"), none, config.Problems{inCluster("backup.max_age", "backup.max_age -2h is shorter than a minute; set at least 1m")}},
		{"negative keep", with(rs + "  keep: {weekly: -1}\n"), none, config.Problems{inCluster("backup.keep.weekly", "backup.keep.weekly must be at least 0, not -1")}},
		{
			"keep nothing", with(rs + "  keep: {hourly: 0, daily: 0, weekly: 0, monthly: 0}\n"), none,
			config.Problems{inCluster("backup.keep", "backup.keep keeps no bundle by hour, day, week or month (all four are 0, and 0 means none, not unlimited); to keep only the newest bundle set keep: {hourly: 1}")},
		},
		{"keep typo", with(rs + "  keep: {dayly: 3}\n"), none, config.Problems{inCluster("backup.keep.dayly", "backup.keep.dayly is not a valid key; did you mean daily?")}},
		{"swift without container", with(rs + "  swift: {}\n"), none, config.Problems{inCluster("backup.swift.container", "backup.swift.container is required: name the Swift container the bundles are kept in (created on the first backup when missing)")}},
		{"swift container with a slash", with(rs + "  swift: {container: a/b}\n"), none, config.Problems{inCluster("backup.swift.container", `backup.swift.container "a/b" is not a Swift container name: at most 256 bytes and no /`)}},
		{
			"swift beside dir", with(rs + "  dir: b\n  swift: {container: c}\n"), none,
			config.Problems{inCluster("backup.swift", "backup.swift and backup.dir are both set: a backup goes to one target; remove backup.dir to keep the bundles in Swift, or backup.swift to keep them in the directory")},
		},
		{
			"swift on proxmox", only(proxmoxBase + "backup:\n" + rs + "  swift: {container: c}\n"), none,
			config.Problems{inCluster("backup.swift", "backup.swift needs OpenStack's object store; on Proxmox keep the bundles in backup.dir (remove backup.swift)")},
		},
		{"swift typo", with(rs + "  swift: {bucket: c}\n"), none, config.Problems{
			inCluster("backup.swift.bucket", "backup.swift.bucket is not a valid key (valid keys: container)"),
			inCluster("backup.swift.container", "backup.swift.container is required: name the Swift container the bundles are kept in (created on the first backup when missing)"),
		}},
		{"section typo", with(rs + "  max-age: 2h\n"), none, config.Problems{inCluster("backup.max-age", "backup.max-age is not a valid key; did you mean max_age?")}},
	})
}

// TestBackup_SecretKeyIsNeverEchoed: an identity pasted as a recipient is
// refused without printing it.
func TestBackup_SecretKeyIsNeverEchoed(t *testing.T) {
	t.Parallel()
	secret := newIdentity(t).String()
	_, probs := load(t, only(openstackBase+"backup:\n  recipients: ["+secret+"]\n"), config.LoadOptions{})
	want := config.Problems{inCluster("backup.recipients[0]", "backup.recipients[0] is an age secret key, not a recipient: "+
		"put its public key here (age-keygen -y FILE prints it) and keep the secret key out of the configuration")}
	if d := diffProblems(want, probs); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if strings.Contains(probs.Error(), secret[len("AGE-SECRET-KEY-"):]) {
		t.Errorf("the secret key is echoed: %v", probs)
	}
}
