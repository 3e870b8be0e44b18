package talosnode_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/google/go-cmp/cmp"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"go.yaml.in/yaml/v4"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/util/jsonpath"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// talosctlGet is `talosctl get TYPE` through machinery's client, as
// talosctl v1.14 does it (cmd/talosctl/cmd/talos/get.go): resolve TYPE
// among the node's resource definitions, list that type in its default
// namespace without unmarshalling the protobuf spec, and render each item
// as the table writer does (ID, then the definition's print columns
// evaluated on the spec's YAML, with go.yaml.in/yaml/v4 as talosctl). It
// returns the header and one row per item.
func talosctlGet(ctx context.Context, c *client.Client, typ string) ([]string, [][]string, error) {
	var ns resource.Namespace
	rd, err := c.ResolveResourceKind(ctx, &ns, typ)
	if err != nil {
		return nil, nil, err
	}
	header := []string{"ID"}
	var columns []*jsonpath.JSONPath
	for _, col := range rd.TypedSpec().PrintColumns {
		header = append(header, strings.ToUpper(col.Name))
		p := jsonpath.New(col.Name).AllowMissingKeys(true)
		if err := p.Parse(col.JSONPath); err != nil {
			return nil, nil, err
		}
		columns = append(columns, p)
	}
	items, err := c.COSI.List(ctx, resource.NewMetadata(ns, rd.TypedSpec().Type, "", resource.VersionUndefined),
		state.WithListUnmarshalOptions(state.WithSkipProtobufUnmarshal()))
	if err != nil {
		return nil, nil, err
	}
	var rows [][]string
	for _, r := range items.Items {
		spec, err := yaml.Marshal(r.Spec())
		if err != nil {
			return nil, nil, err
		}
		var v any
		if err := yaml.Unmarshal(spec, &v); err != nil {
			return nil, nil, err
		}
		row := []string{r.Metadata().ID()}
		for _, p := range columns {
			var b bytes.Buffer
			if err := p.Execute(&b, v); err != nil {
				return nil, nil, err
			}
			row = append(row, b.String())
		}
		rows = append(rows, row)
	}
	return header, rows, nil
}

// TestTalosctlGet: what an operator types on day 2 resolves and lists on
// a lab node as on Talos: get members, extensions, machineconfig,
// machinestatus, imagefactoryschematic (Talos ≥ 1.14 only: a 1.13 node
// does not know the type), rd and namespaces; through apid's routing too
// (-n another node).
func TestTalosctlGet(t *testing.T) {
	t.Parallel()
	for _, ver := range []string{talos114, talos113} {
		t.Run(ver, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, ver)
			l := newLab(t, fx, talosnode.Options{})
			l.boot(cp(1), worker)
			c := l.client(cp(1))
			eventually(t, "both discovery members", func() bool { return len(memberNames(t, c)) == 2 })
			schematic := l.nodes[cp(1)].Status().Schematic
			get := func(typ string) ([]string, [][]string, error) { return talosctlGet(ctx(t, 2*time.Second), c, typ) }
			for _, tc := range []struct {
				typ    string
				header []string
				rows   [][]string
			}{
				{"members", []string{"ID", "HOSTNAME", "MACHINE TYPE", "OS", "ADDRESSES"}, [][]string{
					{cp(1), cp(1), "controlplane", "Talos (" + ver + ")", `["` + fx.addrs[cp(1)].String() + `"]`},
					{worker, worker, "worker", "Talos (" + ver + ")", `["` + fx.addrs[worker].String() + `"]`},
				}},
				{"Member", []string{"ID", "HOSTNAME", "MACHINE TYPE", "OS", "ADDRESSES"}, nil},
				{"machineconfig", []string{"ID"}, [][]string{{"v1alpha1"}}},
				{"machinestatus", []string{"ID", "STAGE", "READY"}, [][]string{{"machine", "running", "false"}}},
			} {
				header, rows, err := get(tc.typ)
				if err != nil {
					t.Errorf("get %s: %v", tc.typ, err)
					continue
				}
				if d := cmp.Diff(tc.header, header); d != "" {
					t.Errorf("get %s header (-want +got):\n%s", tc.typ, d)
				}
				if tc.rows != nil {
					slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
					if d := cmp.Diff(tc.rows, rows); d != "" {
						t.Errorf("get %s (-want +got):\n%s", tc.typ, d)
					}
				}
			}
			_, exts, err := get("extensions")
			if err != nil || !slices.ContainsFunc(exts, func(r []string) bool { return r[1] == "schematic" && r[2] == schematic }) {
				t.Errorf("get extensions = %v, %v; want the schematic %s", exts, err, schematic)
			}
			_, rds, err := get("rd")
			if err != nil || !slices.ContainsFunc(rds, func(r []string) bool { return r[0] == "members.cluster.talos.dev" }) {
				t.Errorf("get rd = %v, %v; want members.cluster.talos.dev among them", rds, err)
			}
			_, nss, err := get("namespaces")
			if err != nil || len(nss) != 6 {
				t.Errorf("get namespaces = %v, %v; want meta, config, cluster, runtime, k8s, controlplane", nss, err)
			}
			_, ifs, err := get("imagefactoryschematic")
			if ver == talos114 && (err != nil || len(ifs) != 1 || ifs[0][1] != schematic) {
				t.Errorf("get imagefactoryschematic on %s = %v, %v; want the schematic %s", ver, ifs, err, schematic)
			}
			if ver == talos113 && (status.Code(err) != codes.NotFound || !contains(err, `resource "imagefactoryschematic" is not registered`)) {
				t.Errorf("get imagefactoryschematic on %s = %v, want not registered", ver, err)
			}
			if _, _, err := get("pods"); !contains(err, `resource "pods" is not registered`) {
				t.Errorf("get pods = %v, want not registered", err)
			}
			// talosctl -e cp-01 -n worker: apid routes the resolution and the list
			_, ms, err := talosctlGet(client.WithNode(ctx(t, 2*time.Second), fx.addrs[worker].String()), c, "machinestatus")
			if err != nil || len(ms) != 1 || ms[0][1] != "running" {
				t.Errorf("get machinestatus -n worker = %v, %v", ms, err)
			}
		})
	}
}

// TestTalosctlDay2Reads: `talosctl version` and `talosctl etcd members`
// (EtcdMemberList with QueryLocal, as talosctl asks) answer what talosctl
// prints.
func TestTalosctlDay2Reads(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.bootstrapped()
	c := l.client(cp(2))
	v, err := c.Version(ctx(t, 2*time.Second))
	if err != nil || v.GetMessages()[0].GetVersion().GetTag() != talos114 {
		t.Fatalf("version = %v, %v", v, err)
	}
	resp, err := c.EtcdMemberList(ctx(t, 2*time.Second), &machine.EtcdMemberListRequest{QueryLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range resp.GetMessages()[0].GetMembers() {
		names = append(names, m.GetHostname())
		if len(m.GetPeerUrls()) != 1 || len(m.GetClientUrls()) != 1 || m.GetIsLearner() {
			t.Errorf("member %s: peer %v client %v learner %t", m.GetHostname(), m.GetPeerUrls(), m.GetClientUrls(), m.GetIsLearner())
		}
	}
	slices.Sort(names)
	if want := []string{cp(1), cp(2), cp(3)}; !slices.Equal(names, want) {
		t.Errorf("etcd members = %v, want %v", names, want)
	}
}
