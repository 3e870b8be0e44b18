package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// rancherCmd runs the lab Rancher's script commands:
//
//	lab rancher DIR              write the lab Rancher's credentials into
//	                             DIR's secrets.yaml (talosc-lab up --rancher)
//	lab rancher-clusters NAME... the Rancher clusters are exactly NAME...
//	                             (none: no cluster), each connected within
//	                             10 s unless NAME ends in "?" (pending)
//	lab rancher-bindings NAME ROLE:WHO...
//	                             cluster NAME's bindings are exactly these
//	                             (WHO a lab username, "admin" for the
//	                             token's user, or a group principal)
//	lab rancher-delete NAME      delete Rancher cluster NAME by hand
//	lab rancher-foreign NAME [pending]
//	                             import another cluster by hand as NAME;
//	                             pending: only create the Rancher cluster
//	                             (no marker, no agent anywhere)
func (s *scriptLab) rancherCmd(ts *testscript.TestScript, args []string) {
	r := s.lab.Rancher
	switch {
	case args[0] == "rancher" && len(args) == 2:
		_, err := s.lab.WriteRancherCredentials(ts.MkAbs(args[1]))
		ts.Check(err)
	case args[0] == "rancher-clusters":
		want := args[1:]
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var got []string
			for _, c := range r.Clusters() {
				got = append(got, c.Name+map[bool]string{true: "", false: "?"}[c.Connected])
			}
			if slices.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("Rancher clusters %q, want %q", got, want)
			}
		}
	case args[0] == "rancher-bindings" && len(args) >= 2:
		who := map[string]string{r.AdminPrincipalID: "admin"}
		for _, u := range r.Users() {
			who[u.PrincipalID] = u.Username
		}
		id := ""
		for _, c := range r.Clusters() {
			if c.Name == args[1] {
				id = c.ID
			}
		}
		var got []string
		for _, b := range r.Bindings() {
			if b.ClusterID == id {
				p := b.UserPrincipalID + b.GroupPrincipalID
				if n, ok := who[p]; ok {
					p = n
				}
				got = append(got, b.RoleTemplateID+":"+p)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(args[2:]))
		if !slices.Equal(got, want) {
			ts.Fatalf("bindings of Rancher cluster %s (%s):\n  %s\nwant\n  %s", args[1], id, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		fmt.Fprintf(ts.Stdout(), "%d bindings\n", len(got))
	case args[0] == "rancher-delete" && len(args) == 2:
		for _, c := range r.Clusters() {
			if c.Name == args[1] {
				s.rancherCall(ts, http.MethodDelete, "/v3/clusters/"+c.ID, "")
				return
			}
		}
		ts.Fatalf("no Rancher cluster %s", args[1])
	case args[0] == "rancher-foreign" && len(args) == 2:
		_, err := s.lab.ForeignRancherCluster(context.Background(), args[1])
		ts.Check(err)
	case args[0] == "rancher-foreign" && len(args) == 3 && args[2] == "pending":
		s.rancherCall(ts, http.MethodPost, "/v3/clusters", `{"type":"cluster","name":"`+args[1]+`"}`)
	default:
		ts.Fatalf("usage: lab rancher DIR | rancher-clusters NAME... | rancher-bindings NAME ROLE:WHO... | rancher-delete NAME | rancher-foreign NAME [pending]")
	}
}

// rancherCall is one request to the lab Rancher as its admin, by hand.
func (s *scriptLab) rancherCall(ts *testscript.TestScript, method, path, body string) {
	r := s.lab.Rancher
	req, err := http.NewRequestWithContext(context.Background(), method, r.URL+path, strings.NewReader(body))
	ts.Check(err)
	req.Header.Set("Authorization", "Bearer "+r.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.Client().Do(req)
	ts.Check(err)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		ts.Fatalf("%s %s: %s", method, path, resp.Status)
	}
}
