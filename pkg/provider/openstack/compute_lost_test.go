package openstack_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/inventory"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider/openstack"
)

// connect replaces the lab's talosc session with one using o.
func (l *computeLab) connect(t *testing.T, o openstack.Options) {
	t.Helper()
	o.Poll, o.Wait = 20*time.Millisecond, 5*time.Second
	o.Logf = l.logs.printf
	c, err := openstack.Connect(t.Context(), l.cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	l.cloud = c
}

func TestCreateMachines_LostAnswerAdoptsTheServerItMade(t *testing.T) {
	t.Parallel()
	clean := newComputeLab(t, labos.Config{}, threeCPs)
	clean.boot(t)
	lostAnswerRuns(t, clean.lab.Snapshot(), labnet.Fault{Service: labos.Nova, Method: http.MethodPost, PathPrefix: "/v2.1/servers", Nth: 2}, func(t *testing.T, l *computeLab) {
		t.Helper()
		if _, got := l.boot(t); len(got) != 3 {
			t.Errorf("booted %v, want the 3 control planes", hostnames(got))
		}
	})
}

// lostAnswerRuns runs run on a fresh compute lab once for each way of
// losing the answer of the request at, then compares the lab's whole
// inventory with want (a fault-free run's).
func lostAnswerRuns(t *testing.T, want inventory.Snapshot, at labnet.Fault, run func(*testing.T, *computeLab)) {
	t.Helper()
	for how, f := range lostAnswers {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			f.Service, f.Method, f.PathPrefix, f.Nth = at.Service, at.Method, at.PathPrefix, at.Nth
			inj := labnet.NewInjector(labnet.Knobs{})
			l := newComputeLab(t, labos.Config{Injector: inj}, threeCPs)
			l.connect(t, lostOptions(how))
			inj.Set(labnet.Knobs{Faults: []labnet.Fault{f}})
			run(t, l)
			if !lostCall(l.lab.Recorder()) {
				t.Fatal("no answer was lost: the fault matched nothing")
			}
			if diff := inventory.Diff(want, l.lab.Snapshot()); len(diff) != 0 {
				t.Errorf("whole inventory differs from a fault-free run's:\n%s\n%s", strings.Join(diff, "\n"), l.logs)
			}
		})
	}
}
