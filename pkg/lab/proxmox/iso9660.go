package proxmox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
)

// NoCloud is the content of a NoCloud "cidata" ISO: the machine config a
// Talos node boots from (user-data) and its meta-data.
type NoCloud struct {
	// Label is the ISO volume label (NoCloud wants "cidata" or "CIDATA").
	Label string
	// Files are the root directory's files by name (user-data, meta-data,
	// network-config, vendor-data).
	Files map[string][]byte
}

// UserData is the user-data file (the Talos machine config).
func (n NoCloud) UserData() []byte { return n.Files["user-data"] }

// MetaData is the meta-data file (instance-id, local-hostname).
func (n NoCloud) MetaData() []byte { return n.Files["meta-data"] }

// IsCidata reports whether the label marks a NoCloud data source.
func (n NoCloud) IsCidata() bool { return strings.EqualFold(n.Label, "cidata") }

const isoSector = 2048

// ErrNotISO is returned for data that is not an ISO 9660 image.
var ErrNotISO = errors.New("not an ISO 9660 image")

// ReadNoCloud reads the root directory of an ISO 9660 image as xorriso,
// genisoimage or go-diskfs write a cidata ISO: names come from the Joliet
// tree when there is one, else from Rock Ridge NM entries, else from the
// plain ISO names (lower-cased, version suffix dropped).
func ReadNoCloud(iso []byte) (NoCloud, error) {
	var pvd, joliet []byte
	for sec := 16; ; sec++ {
		d := sector(iso, sec)
		if d == nil || !bytes.Equal(d[1:6], []byte("CD001")) {
			return NoCloud{}, ErrNotISO
		}
		switch d[0] {
		case 1:
			pvd = d
		case 2:
			if esc := d[88:91]; bytes.Equal(esc, []byte("%/@")) || bytes.Equal(esc, []byte("%/C")) || bytes.Equal(esc, []byte("%/E")) {
				joliet = d
			}
		}
		if d[0] == 255 {
			break
		}
	}
	if pvd == nil {
		return NoCloud{}, ErrNotISO
	}
	out := NoCloud{Label: strings.TrimRight(string(pvd[40:72]), " \x00")}
	var err error
	if joliet != nil {
		out.Files, err = readRoot(iso, joliet, nameJoliet)
	} else {
		out.Files, err = readRoot(iso, pvd, namePrimary)
	}
	return out, err
}

func sector(iso []byte, n int) []byte {
	if (n+1)*isoSector > len(iso) {
		return nil
	}
	return iso[n*isoSector : (n+1)*isoSector]
}

type nameFunc func(rec []byte, raw []byte) string

func nameJoliet(_ []byte, raw []byte) string {
	u := make([]uint16, len(raw)/2)
	for i := range u {
		u[i] = binary.BigEndian.Uint16(raw[2*i:])
	}
	return stripVersion(string(utf16.Decode(u)))
}

// namePrimary prefers a Rock Ridge NM entry, then the ISO name.
func namePrimary(rec []byte, raw []byte) string {
	su := 33 + len(raw)
	if len(raw)%2 == 0 {
		su++
	}
	var nm []byte
	for i := su; i+4 <= len(rec); {
		l := int(rec[i+2])
		if l < 4 || i+l > len(rec) {
			break
		}
		if rec[i] == 'N' && rec[i+1] == 'M' && l > 5 {
			nm = append(nm, rec[i+5:i+l]...)
		}
		i += l
	}
	if len(nm) > 0 {
		return string(nm)
	}
	name := strings.ToLower(stripVersion(string(raw)))
	return strings.ReplaceAll(strings.TrimSuffix(name, "."), "_", "-")
}

func stripVersion(s string) string {
	if i := strings.LastIndex(s, ";"); i >= 0 {
		s = s[:i]
	}
	return s
}

// readRoot reads the files of the root directory the descriptor points at.
func readRoot(iso, desc []byte, name nameFunc) (map[string][]byte, error) {
	root := desc[156 : 156+34]
	lba, size := int(binary.LittleEndian.Uint32(root[2:])), int(binary.LittleEndian.Uint32(root[10:]))
	if lba*isoSector+size > len(iso) {
		return nil, fmt.Errorf("%w: root directory out of range", ErrNotISO)
	}
	dir := iso[lba*isoSector : lba*isoSector+size]
	files := map[string][]byte{}
	for off := 0; off < len(dir); {
		l := int(dir[off])
		if l == 0 {
			off = (off/isoSector + 1) * isoSector
			continue
		}
		if off+l > len(dir) || l < 34 {
			return nil, fmt.Errorf("%w: bad directory record", ErrNotISO)
		}
		rec := dir[off : off+l]
		off += l
		nl := int(rec[32])
		raw := rec[33 : 33+nl]
		if rec[25]&2 != 0 || (nl == 1 && raw[0] <= 1) {
			continue // directories, "." and ".."
		}
		ext, n := int(binary.LittleEndian.Uint32(rec[2:])), int(binary.LittleEndian.Uint32(rec[10:]))
		if ext*isoSector+n > len(iso) {
			return nil, fmt.Errorf("%w: file extent out of range", ErrNotISO)
		}
		files[name(rec, raw)] = iso[ext*isoSector : ext*isoSector+n]
	}
	return files, nil
}
