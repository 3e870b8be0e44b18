package snapshot_test

import (
	"crypto/sha256"
	"os"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/backup/snapshot"
	"github.com/talosc/talosc/pkg/backup/snapshot/snapshottest"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	good := snapshottest.Take(t, snapshottest.Keys(20))
	st, err := snapshot.Verify(good)
	if err != nil {
		t.Fatalf("a good snapshot: %v", err)
	}
	fi, _ := os.Stat(good)
	if st.Keys != 20 || st.Revision < 21 || st.Size != fi.Size() || len(st.SHA256) != 64 || st.Hash == 0 {
		t.Errorf("status = %+v, want 20 keys, revision >= 21, size %d", st, fi.Size())
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	n := len(data)
	emptySum := sha256.Sum256(nil)
	flipped := append([]byte(nil), data...)
	flipped[n/2] ^= 0x01
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"truncated", "no sha256 trailer", data[:n-100]},
		{"truncated by a block", "does not match", append(append([]byte(nil), data[:n-512-32]...), data[n-32:]...)},
		{"one byte flipped", "does not match", flipped},
		{"no trailer", "no sha256 trailer", data[:n-32]},
		{"empty", "no sha256 trailer", nil},
		{"only a trailer", "no sha256 trailer", emptySum[:]},
	} {
		path := t.TempDir() + "/snap"
		if err := os.WriteFile(path, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := snapshot.Verify(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestVerifyRefusesAnEmptyCluster(t *testing.T) {
	t.Parallel()
	_, err := snapshot.Verify(snapshottest.Take(t, nil))
	if err == nil || !strings.Contains(err.Error(), "holds no data") {
		t.Fatalf("err = %v, want holds no data", err)
	}
}
