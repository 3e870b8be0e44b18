package proxmox_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/proxmox"
)

// buildISO writes a minimal ISO 9660 image without Joliet: a primary
// descriptor, a terminator, the root directory and one extent per file.
// Each file has an ISO name and, when rr is set, a Rock Ridge NM entry.
func buildISO(label string, files []isoFile) []byte {
	const sec = 2048
	img := make([]byte, (19+len(files))*sec)
	pvd := img[16*sec:]
	pvd[0] = 1
	copy(pvd[1:6], "CD001")
	copy(pvd[40:72], label+"                                ")
	root := pvd[156:190]
	root[0] = 34
	binary.LittleEndian.PutUint32(root[2:], 18)
	binary.LittleEndian.PutUint32(root[10:], sec)
	root[25] = 2
	root[32] = 1
	term := img[17*sec:]
	term[0] = 255
	copy(term[1:6], "CD001")
	dir := img[18*sec : 19*sec]
	off := 0
	for _, dot := range []byte{0, 1} {
		dir[off], dir[off+25], dir[off+32], dir[off+33] = 34, 2, 1, dot
		off += 34
	}
	for i, f := range files {
		ext := 19 + i
		copy(img[ext*sec:], f.data)
		su := []byte{}
		if f.rr != "" {
			su = append([]byte{'N', 'M', byte(5 + len(f.rr)), 1, 0}, f.rr...)
		}
		nl := len(f.iso)
		l := 33 + nl + (1 - nl%2) + len(su)
		rec := dir[off : off+l]
		rec[0] = byte(l)
		binary.LittleEndian.PutUint32(rec[2:], uint32(ext))
		binary.LittleEndian.PutUint32(rec[10:], uint32(len(f.data)))
		rec[32] = byte(nl)
		copy(rec[33:], f.iso)
		copy(rec[33+nl+(1-nl%2):], su)
		off += l
	}
	return img
}

type isoFile struct {
	iso, rr string
	data    []byte
}

func TestReadNoCloud(t *testing.T) {
	t.Parallel()
	// genisoimage without -J: Rock Ridge names.
	rr := buildISO("cidata", []isoFile{{"USER_DAT.;1", "user-data", []byte("machine: {}\n")}, {"META_DAT.;1", "meta-data", []byte("instance-id: x\n")}})
	nc, err := proxmox.ReadNoCloud(rr)
	if err != nil {
		t.Fatal(err)
	}
	if !nc.IsCidata() || string(nc.UserData()) != "machine: {}\n" || string(nc.MetaData()) != "instance-id: x\n" {
		t.Errorf("rock ridge ISO = %q %q %q", nc.Label, nc.UserData(), nc.MetaData())
	}
	// Plain ISO names are lower-cased and lose their version.
	plain := buildISO("CIDATA", []isoFile{{"USER_DATA.;1", "", []byte("u")}})
	nc, err = proxmox.ReadNoCloud(plain)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]byte{"user-data": []byte("u")}, nc.Files); diff != "" || !nc.IsCidata() {
		t.Errorf("plain ISO files (-want +got):\n%s", diff)
	}
	if _, err := proxmox.ReadNoCloud([]byte("boot iso")); !errors.Is(err, proxmox.ErrNotISO) {
		t.Errorf("not an ISO: err = %v", err)
	}
	if nc, err := proxmox.ReadNoCloud(buildISO("TALOS", nil)); err != nil || nc.IsCidata() {
		t.Errorf("boot ISO: %+v, %v", nc, err)
	}
}
