package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteTextfile writes rep's metrics to path for node-exporter's textfile
// collector, atomically: a temporary file in the same directory (named so
// the collector, which reads only *.prom, skips it) is written, synced,
// made 0644 and renamed over path. A failure leaves the previous file, or
// none, never a half one.
func WriteTextfile(path string, rep *CheckReport) (err error) {
	var data bytes.Buffer
	if err := WriteMetrics(&data, rep); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("textfile %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("textfile %s: %w", path, err), os.Remove(f.Name()))
		}
	}()
	if _, err := f.Write(data.Bytes()); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
