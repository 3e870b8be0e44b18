package report

import (
	"bytes"
	"fmt"
	"io"

	"github.com/talosc/talosc/pkg/atomicfile"
)

// WriteTextfile writes rep's metrics to path for node-exporter's textfile
// collector, atomically and 0644 (atomicfile.Write; the temporary file's
// name does not end in .prom, so the collector skips it). A failure
// leaves the previous file, or none, never a half one.
func WriteTextfile(path string, rep *CheckReport) error {
	return writeTextfile(path, func(w io.Writer) error { return WriteMetrics(w, rep) })
}

// WriteBackupTextfile writes the backup's metrics (WriteBackupMetrics) to
// path as WriteTextfile writes check's.
func WriteBackupTextfile(path, cluster string, b *BackupCheck) error {
	return writeTextfile(path, func(w io.Writer) error { return WriteBackupMetrics(w, cluster, b) })
}

func writeTextfile(path string, write func(io.Writer) error) error {
	var data bytes.Buffer
	if err := write(&data); err != nil {
		return err
	}
	if err := atomicfile.Write(path, data.Bytes(), atomicfile.Options{Mode: 0o644, Replace: true}); err != nil {
		return fmt.Errorf("textfile %s: %w", path, err)
	}
	return nil
}
