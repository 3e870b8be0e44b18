package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/atomicfile"
)

// dirTarget keeps bundles and their records side by side in a directory.
type dirTarget struct{ path string }

// Dir is a directory target: created 0700 on the first Put; bundles and
// records are written 0600 through pkg/atomicfile.
func Dir(path string) Target { return dirTarget{path: path} }

func (d dirTarget) String() string { return d.path }

func (d dirTarget) Put(ctx context.Context, rec Record, bundle io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckRecord(rec); err != nil {
		return err
	}
	if err := os.MkdirAll(d.path, 0o700); err != nil {
		return fmt.Errorf("backup directory: %w", err)
	}
	dg := NewDigest()
	bundlePath := filepath.Join(d.path, rec.Name)
	err := atomicfile.WriteFrom(bundlePath, ctxReader{ctx, io.TeeReader(bundle, dg)}, atomicfile.Options{
		Mode:         0o600,
		BeforeCommit: func(string) error { return dg.Complete(&rec) },
	})
	if err != nil {
		return fmt.Errorf("store backup: %w", err)
	}
	rec.Problem = ""
	data, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		err = atomicfile.Write(bundlePath+RecordExt, append(data, '\n'), atomicfile.Options{Mode: 0o600})
	}
	if err != nil {
		_ = os.Remove(bundlePath)
		return fmt.Errorf("store backup record: %w", err)
	}
	return nil
}

func (d dirTarget) List(ctx context.Context, cluster string) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(d.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("backup directory: %w", err)
	}
	var recs []Record
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), RecordExt)
		if c, named := ClusterOf(name); !ok || !named || c != cluster || !e.Type().IsRegular() {
			continue
		}
		rec, err := d.readRecord(name, cluster)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	slices.SortFunc(recs, NewestFirst)
	return recs, nil
}

// readRecord reads name's record and marks it when its bundle is missing
// or has another size.
func (d dirTarget) readRecord(name, cluster string) (Record, error) {
	path := filepath.Join(d.path, name+RecordExt)
	var rec Record
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		return Record{}, fmt.Errorf("backup record %s: %w (remove it if its bundle is gone)", path, err)
	}
	if rec.Name != name || rec.Meta.Cluster != cluster {
		return Record{}, fmt.Errorf("backup record %s names bundle %q of cluster %q: it was renamed; give it back its name", path, rec.Name, rec.Meta.Cluster)
	}
	rec.Problem = ""
	fi, err := os.Stat(filepath.Join(d.path, name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rec.Problem = fmt.Sprintf("bundle %s is missing from %s", name, d.path)
	case err != nil:
		rec.Problem = fmt.Sprintf("bundle %s: %v", name, err)
	case fi.Size() != rec.BundleSize:
		rec.Problem = fmt.Sprintf("bundle %s is %d bytes, its record says %d", name, fi.Size(), rec.BundleSize)
	}
	return rec, nil
}

func (d dirTarget) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(d.path, name))
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", name, err)
	}
	return f, nil
}

func (d dirTarget) Delete(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckName(name); err != nil {
		return err
	}
	bundlePath := filepath.Join(d.path, name)
	recErr := os.Remove(bundlePath + RecordExt)
	if recErr != nil && !errors.Is(recErr, fs.ErrNotExist) {
		return fmt.Errorf("delete backup record: %w", recErr)
	}
	err := os.Remove(bundlePath)
	if err != nil && (!errors.Is(err, fs.ErrNotExist) || recErr != nil) {
		return fmt.Errorf("delete backup %s: %w", name, err)
	}
	return nil
}
