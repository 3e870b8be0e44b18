package openstack_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/swauth"

	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/provider/openstack"
)

// EnvRealSwift names a real Swift for TestSwiftTargetAgainstRealSwift:
// "AUTH_URL USER KEY" of a tempauth user (hack/swift-lab.sh env prints it
// for Debian's Swift started by hack/swift-lab.sh up).
const EnvRealSwift = "TALOSC_REAL_SWIFT"

// TestSwiftTargetAgainstRealSwift runs the Swift target's contract
// against Debian's real Swift (python3-swift 2.30), each part in a
// container of its own: what the lab's object API answers is what Swift
// answers (If-None-Match: *, the ETag, listings, metadata).
// noKeepAlive is the test's HTTP client: a connection per request, as the
// provider's transport gives the target (TestSwiftTargetSurvivesAStrayChunkTerminator),
// since Swift's eventlet proxy ends a HEAD of a container with a stray
// chunk terminator that breaks the next request on a kept connection.
var noKeepAlive = http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func TestSwiftTargetAgainstRealSwift(t *testing.T) {
	t.Parallel()
	env := os.Getenv(EnvRealSwift)
	if env == "" {
		t.Skipf("%s is not set: start Debian's Swift with hack/swift-lab.sh up and eval \"$(hack/swift-lab.sh env)\"", EnvRealSwift)
	}
	f := strings.Fields(env)
	if len(f) != 3 {
		t.Fatalf("%s=%q: want AUTH_URL USER KEY", EnvRealSwift, env)
	}
	authURL, ok := strings.CutSuffix(f[0], "auth/v1.0")
	if !ok {
		t.Fatalf("%s: the auth URL %q does not end in auth/v1.0", EnvRealSwift, f[0])
	}
	sc, err := swauth.NewObjectStorageV1(t.Context(), &gophercloud.ProviderClient{IdentityBase: authURL, HTTPClient: noKeepAlive}, swauth.AuthOpts{User: f[1], Key: f[2]})
	if err != nil {
		t.Fatalf("authenticate at %s: %v", f[0], err)
	}
	run := fmt.Sprintf("talosc-test-%d", time.Now().UnixNano())
	for name, body := range map[string]func(*testing.T, *swiftEnv){
		"PutListGetDelete":        swiftPutListGetDelete,
		"CreatesAnOwnedContainer": swiftCreatesAnOwnedContainer,
		"NeverReplaces":           swiftNeverReplaces,
		"MarksABrokenRecord":      swiftMarksABrokenRecord,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := &swiftEnv{demo: sc, container: run + "-" + strings.ToLower(name)}
			l.open = func(_ *testing.T, container string) backup.Target {
				return openstack.NewSwiftTarget(sc, container, "c")
			}
			l.target = l.open(t, l.container)
			body(t, l)
		})
	}
}
