package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/rancher"
)

// RancherUsers are the users the lab's Rancher knows, whatever its auth
// provider: alice, bob and carol, with the look-alikes a prefix search
// also returns (alicia, bobby, caroline: a plugin that takes the first
// row binds the wrong one), and dave, whose global role makes Rancher keep
// a crtb-grb-* cluster-owner binding in every cluster.
var RancherUsers = []rancher.User{
	{Username: "alice", DisplayName: "Alice Liddell"},
	{Username: "alicia", DisplayName: "Alicia Keys"},
	{Username: "bob", DisplayName: "Bob Builder"},
	{Username: "bobby", DisplayName: "Bobby Tables"},
	{Username: "carol", DisplayName: "Carol Danvers"},
	{Username: "caroline", DisplayName: "Caroline Herschel"},
	{Username: "dave", DisplayName: "Dave Global", GlobalOwner: true},
}

// RancherGroups are the directory groups (LDAP providers only).
var RancherGroups = []rancher.Group{
	{Name: "platform", PrincipalID: "openldap_group://cn=platform,ou=groups,dc=lab"},
	{Name: "alice-fans", PrincipalID: "openldap_group://cn=alice-fans,ou=groups,dc=lab"},
}

// Rancher's background work in the lab: conditions turn True after a
// second, commands are filled half a second after a token's create, a
// deleted cluster is gone after two seconds, and agents are looked for
// every quarter second.
const (
	rancherConditionDelay = time.Second
	rancherCommandDelay   = 500 * time.Millisecond
	rancherRemoveDelay    = 2 * time.Second
	rancherAgentPoll      = 250 * time.Millisecond
)

// startRancher starts the lab's Rancher with auth provider auth.
func (l *Lab) startRancher(auth string) error {
	r, err := rancher.Start(l.ctx, rancher.Options{
		Provider: auth, Users: RancherUsers, Groups: RancherGroups,
		ConditionDelay: rancherConditionDelay, CommandDelay: rancherCommandDelay, RemoveDelay: rancherRemoveDelay,
		Injector: l.inj, Recorder: l.rec,
	})
	if err != nil {
		return err
	}
	l.Rancher = r
	l.add(Endpoint{Name: rancher.Service, URL: r.URL}, r.Close)
	return nil
}

// watchAgents runs, until the lab closes, the Rancher agent of every
// cluster API the lab runs once its import manifest is applied.
func (l *Lab) watchAgents() {
	go l.Rancher.WatchAgents(l.ctx, rancherAgentPoll, l.kube.Clients)
}

// RancherCAFile is the lab Rancher's CA, written beside secrets.yaml.
const RancherCAFile = "rancher-ca.pem"

// WriteRancherCredentials gives the cluster directory dir the rancher
// plugin's credentials: rancher.url, rancher.token and rancher.ca_file
// (the lab Rancher's self-signed CA, written as RancherCAFile) appended to
// secrets.yaml, so a user adds only the cluster.yaml section (admins,
// users). It returns the files written.
func (l *Lab) WriteRancherCredentials(dir string) ([]string, error) {
	path := filepath.Join(dir, "secrets.yaml")
	old, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.Contains("\n"+string(old), "\nrancher:") {
		return nil, fmt.Errorf("%s has a rancher section already", path)
	}
	creds := fmt.Sprintf("rancher: # the lab's Rancher\n  url: %s\n  token: %s\n  ca_file: %s\n", l.Rancher.URL, l.Rancher.Token, RancherCAFile)
	files, err := writeFiles(dir, []file{{RancherCAFile, l.Rancher.CAPEM}})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, append(old, creds...), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return append(files, "secrets.yaml"), nil
}

// ForeignRancherCluster makes, in the lab's Rancher, a cluster name that
// someone imported by hand from another cluster (a kube-apiserver the lab
// runs until it closes), its agent connected: a same-named Rancher
// cluster that is not talosc's. It returns its id.
func (l *Lab) ForeignRancherCluster(ctx context.Context, name string) (string, error) {
	srv, err := kubeapi.StartStandalone(ctx, filepath.Join(l.dataDir, "foreign-"+name), l.logf)
	if err != nil {
		return "", err
	}
	l.add(Endpoint{Name: "kubernetes/foreign-" + name, URL: srv.URL()}, srv.Close)
	return l.Rancher.ImportByHand(ctx, name, srv.RESTConfig())
}
