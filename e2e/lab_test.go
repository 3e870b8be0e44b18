package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/labnet"
	osprovider "github.com/talosc/talosc/pkg/provider/openstack"
)

// labKey is the testscript value holding a script's *scriptLab.
type labKey struct{}

// scriptLab is the talosc-lab of one script, started by "lab up".
type scriptLab struct {
	index   int // picks the script's own loopback networks
	lab     *lab.Lab
	cluster string
	mark    int // calls recorded before the last "lab mark"
}

// newScriptLab returns the (not yet started) lab of the next script.
func newScriptLab(seq *atomic.Int32) *scriptLab { return &scriptLab{index: int(seq.Add(1))} }

// networks are the lab's cluster and external networks. Every script gets
// its own, so scripts run in parallel; the second octet comes from the pid
// so that two test processes on one machine do not meet either.
func (s *scriptLab) networks() (cluster, external string) {
	base := 100 + os.Getpid()%50
	return fmt.Sprintf("127.%d.%d.0/24", base, s.index%256), fmt.Sprintf("127.%d.%d.0/24", base+50, s.index%256)
}

// cmdLab drives the script's lab:
//
//	lab up PROVIDER DIR [NAME]   start it and write the cluster directory DIR
//	                             (cluster NAME, default "demo"); point the
//	                             phases at its Image Factory, with short waits
//	lab mark                     start counting calls afresh
//	lab mutations N              N mutating calls since the mark (listed if not)
//	lab owned N                  N OpenStack resources owned by the cluster
//	lab images N                 N images in the lab's Glance
//	lab faults error-rate R seed S | lab faults off
//	                             fail a fraction R of every service's requests
//	                             with 503 (replayably), or stop doing so
func cmdLab(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: lab up|mark|mutations|owned|images|faults ...")
	}
	s, _ := ts.Value(labKey{}).(*scriptLab)
	if args[0] == "up" {
		s.up(ts, args[1:])
		return
	}
	if s.lab == nil {
		ts.Fatalf("lab %s: no lab yet (lab up first)", args[0])
	}
	switch args[0] {
	case "mark":
		s.mark = len(s.lab.Recorder().Calls())
	case "mutations":
		s.mutations(ts, count(ts, args))
	case "owned":
		owned := s.lab.OpenStack.Owned(osprovider.ClusterTags(s.cluster)...)
		want(ts, "owned resources", count(ts, args), sum(owned), fmt.Sprint(owned))
	case "images":
		images := s.lab.OpenStack.Inventory().Images
		want(ts, "images", count(ts, args), len(images), fmt.Sprint(images))
	case "faults":
		s.faults(ts, args[1:])
	default:
		ts.Fatalf("lab %s: unknown subcommand", args[0])
	}
}

func (s *scriptLab) up(ts *testscript.TestScript, args []string) {
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: lab up PROVIDER DIR [NAME]")
	}
	if s.lab != nil {
		ts.Fatalf("lab up: this script's lab is already up")
	}
	s.cluster = "demo"
	if len(args) == 3 {
		s.cluster = args[2]
	}
	clusterCIDR, externalCIDR := s.networks()
	l, err := lab.Start(context.Background(), lab.Options{
		Provider:     args[0],
		NodesBoot:    200 * time.Millisecond,
		ClusterCIDR:  clusterCIDR,
		ExternalCIDR: externalCIDR,
		Logf:         ts.Logf,
	})
	ts.Check(err)
	ts.Defer(func() {
		if err := l.Close(); err != nil {
			ts.Logf("lab close: %v", err)
		}
	})
	s.lab = l
	_, err = l.WriteClusterDir(ts.MkAbs(args[1]), s.cluster)
	ts.Check(err)
	ts.Setenv("TALOSC_IMAGE_FACTORY_URL", l.Factory.URL)
	// The lab's machines boot in 200 ms: poll every 750 ms, not every 15 s.
	ts.Setenv("TALOSC_TIME_SCALE", "0.05")
}

// mutations checks the number of calls since the mark that change state.
// Two kinds of POST only look like changes: Keystone issuing a token (every
// process authenticates) and the Image Factory registering a schematic it
// already has (content-addressed: same schematic, same id).
func (s *scriptLab) mutations(ts *testscript.TestScript, n int) {
	since := s.lab.Recorder().Calls()[s.mark:]
	changes := slices.DeleteFunc(since, func(c labnet.Call) bool {
		return !c.Mutating() || onlyLooksLikeChange(c)
	})
	var list strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&list, "\n  %s %s %s -> %d", c.Service, c.Method, c.Path, c.Status)
	}
	want(ts, "mutating calls since the mark", n, len(changes), list.String())
}

func onlyLooksLikeChange(c labnet.Call) bool {
	switch c.Service + " " + c.Method + " " + c.Path {
	case "keystone POST /v3/auth/tokens", "imagefactory POST /schematics":
		return true
	default:
		return false
	}
}

func (s *scriptLab) faults(ts *testscript.TestScript, args []string) {
	switch {
	case len(args) == 1 && args[0] == "off":
		s.lab.Injector().Set(labnet.Knobs{})
	case len(args) == 4 && args[0] == "error-rate" && args[2] == "seed":
		rate, err := strconv.ParseFloat(args[1], 64)
		ts.Check(err)
		seed, err := strconv.ParseUint(args[3], 10, 64)
		ts.Check(err)
		s.lab.Injector().Set(labnet.Knobs{ErrorRate: rate, Seed: seed})
	default:
		ts.Fatalf("usage: lab faults error-rate R seed S | lab faults off")
	}
}

// count parses the N of "lab SUBCOMMAND N".
func count(ts *testscript.TestScript, args []string) int {
	if len(args) != 2 {
		ts.Fatalf("usage: lab %s N", args[0])
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	return n
}

func want(ts *testscript.TestScript, what string, n, got int, detail string) {
	if got != n {
		ts.Fatalf("%d %s, want %d: %s", got, what, n, detail)
	}
}

func sum(m map[string]int) int {
	total := 0
	for _, v := range m {
		total += v
	}
	return total
}
