package config

import (
	"fmt"
	"strings"
	"time"

	"filippo.io/age"
)

// minBackupMaxAge is the shortest backup.max_age: a shorter one would fail
// check between any two backups a schedule can take.
const minBackupMaxAge = time.Minute

// backupDefaults fills the backup keys the files left unset.
func (v *validator) backupDefaults(b *Backup) {
	if !v.present("backup.dir") {
		b.Dir = DefaultBackupDir
	}
	if !v.present("backup.max_age") {
		b.MaxAge = DefaultBackupMaxAge
	}
	for _, k := range []struct {
		key string
		n   *int
		def int
	}{
		{"hourly", &b.Keep.Hourly, DefaultKeepHourly},
		{"daily", &b.Keep.Daily, DefaultKeepDaily},
		{"weekly", &b.Keep.Weekly, DefaultKeepWeekly},
		{"monthly", &b.Keep.Monthly, DefaultKeepMonthly},
	} {
		if !v.present("backup.keep." + k.key) {
			*k.n = k.def
		}
	}
}

// backup checks the backup section.
func (v *validator) backup() {
	b := v.c.Backup
	if b == nil {
		return
	}
	v.recipients(b.Recipients)
	if v.has("backup.dir") && strings.TrimSpace(b.Dir) == "" {
		v.errf("backup.dir", "is empty; name a directory, or leave dir out for the default %s", DefaultBackupDir)
	}
	v.backupSwift(b)
	if v.has("backup.max_age") {
		switch d, err := time.ParseDuration(b.MaxAge); {
		case err != nil:
			v.errf("backup.max_age", "%q is not a Go duration; write it as 26h, 90m or 1h30m", b.MaxAge)
		case d < minBackupMaxAge:
			v.errf("backup.max_age", "%s is shorter than a minute; set at least 1m", b.MaxAge)
		}
	}
	v.keep(b.Keep)
}

// maxSwiftContainer is Swift's longest container name.
const maxSwiftContainer = 256

// backupSwift checks backup.swift: OpenStack only, a container name
// Swift accepts, and not beside an explicit backup.dir (a backup goes to
// one target).
func (v *validator) backupSwift(b *Backup) {
	if b.Swift == nil || v.failedAbove("backup.swift") {
		return
	}
	switch v.c.Provider() {
	case ProviderOpenStack:
	case ProviderProxmox:
		v.errf("backup.swift", "needs OpenStack's object store; on Proxmox keep the bundles in backup.dir (remove backup.swift)")
		return
	default:
		return // the missing provider section is reported on its own
	}
	if v.present("backup.dir") {
		v.errf("backup.swift", "and backup.dir are both set: a backup goes to one target; remove backup.dir to keep the bundles in Swift, or backup.swift to keep them in the directory")
	}
	switch c := b.Swift.Container; {
	case v.failed("backup.swift.container"):
	case strings.TrimSpace(c) == "":
		v.errf("backup.swift.container", "is required: name the Swift container the bundles are kept in (created on the first backup when missing)")
	case len(c) > maxSwiftContainer || strings.Contains(c, "/"):
		v.errf("backup.swift.container", "%q is not a Swift container name: at most %d bytes and no /", c, maxSwiftContainer)
	}
}

// recipients checks backup.recipients: at least one, each an age X25519
// recipient, none twice. A secret key pasted there is named as such and
// never echoed.
func (v *validator) recipients(list []string) {
	const hint = "kubectl talosc backup init makes an identity and adds its recipient"
	if !v.present("backup.recipients") {
		if !v.failedAbove("backup.recipients") {
			v.errf("backup.recipients", "is required: list at least one age public key (age1...); %s", hint)
		}
		return
	}
	if v.failed("backup.recipients") {
		return
	}
	if len(list) == 0 {
		v.errf("backup.recipients", "is empty: list at least one age public key (age1...); %s", hint)
		return
	}
	for i, r := range list {
		path := fmt.Sprintf("backup.recipients[%d]", i)
		if v.failed(path) {
			continue
		}
		if msg := recipientProblem(r); msg != "" {
			v.errf(path, "%s", msg)
		}
	}
	v.unique("backup.recipients", list)
}

// recipientProblem says what is wrong with one recipient, or "".
func recipientProblem(r string) string {
	switch t := strings.TrimSpace(r); {
	case strings.HasPrefix(strings.ToUpper(t), "AGE-SECRET-KEY-"):
		return "is an age secret key, not a recipient: put its public key here (age-keygen -y FILE prints it) " +
			"and keep the secret key out of the configuration"
	case strings.HasPrefix(t, "ssh-") || strings.HasPrefix(t, "ecdsa-"):
		return "is an SSH key; only age X25519 recipients (age1...) are accepted"
	}
	if _, err := age.ParseX25519Recipient(r); err != nil {
		return fmt.Sprintf("%q is not an age X25519 recipient (age1..., as age-keygen -y prints)", r)
	}
	return ""
}

// keep checks backup.keep: no negative count, and not all four 0.
func (v *validator) keep(k BackupKeep) {
	counts := []struct {
		key string
		n   int
	}{{"hourly", k.Hourly}, {"daily", k.Daily}, {"weekly", k.Weekly}, {"monthly", k.Monthly}}
	total, negative := 0, false
	for _, c := range counts {
		path := "backup.keep." + c.key
		if v.failed(path) {
			return
		}
		if c.n < 0 {
			v.errf(path, "must be at least 0, not %d", c.n)
			negative = true
		}
		total += c.n
	}
	if total == 0 && !negative {
		v.errf("backup.keep", "keeps no bundle by hour, day, week or month (all four are 0, and 0 means none, not unlimited); "+
			"to keep only the newest bundle set keep: {hourly: 1}")
	}
}
