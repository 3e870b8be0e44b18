package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// errClosed refuses a restart of a closed Server.
var errClosed = errors.New("kubeapi: the server is closed")

// Exited is closed when the current apiserver process has exited (one
// RestartOnEtcd or LoseEtcd stops included).
func (s *Server) Exited() <-chan struct{} { return s.process().exited }

// process is the current apiserver process.
func (s *Server) process() *process {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	return s.proc
}

// LoseEtcd stops the apiserver and moves its etcd's data away (to
// DataDir/etcd.lost), as when the disk of every member of a cluster's
// etcd is wiped: the API's address stays open, but no request reaches an
// apiserver (the front door answers 502), and EtcdEndpoint is "" until
// RestartOnEtcd starts it again. Losing it twice is a no-op.
func (s *Server) LoseEtcd() error {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	if s.closed {
		return errClosed
	}
	if s.etcdLost {
		return nil
	}
	s.etcdLost, s.etcd = true, ""
	err := s.proc.stop()
	lost := filepath.Join(s.dataDir, "etcd.lost")
	return errors.Join(err, os.RemoveAll(lost), os.Rename(filepath.Join(s.dataDir, "etcd"), lost))
}

// RestartOnEtcd stops the apiserver (unless LoseEtcd did), replaces its
// etcd's data directory (DataDir/etcd) with the one fill writes into the
// directory it is given (which does not exist yet: etcd's snapshot
// restore creates it; nil fill: an empty etcd, which the apiserver fills
// with a new cluster's defaults), and starts it again on the same
// address, returning once it is ready. A fill that fails changes
// nothing. The lab's kubelet and controllers go on watching through the
// restart.
func (s *Server) RestartOnEtcd(ctx context.Context, fill func(dir string) error) error {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	if s.closed {
		return errClosed
	}
	next := filepath.Join(s.dataDir, "etcd.next")
	if err := os.RemoveAll(next); err != nil {
		return fmt.Errorf("kubeapi: %w", err)
	}
	if fill != nil {
		if err := fill(next); err != nil {
			_ = os.RemoveAll(next)
			return err
		}
	}
	if !s.etcdLost {
		if err := s.proc.stop(); err != nil {
			s.opts.Logf("kubeapi: stopping for a restart: %v", err)
		}
		s.etcdLost, s.etcd = true, ""
	}
	etcdDir := filepath.Join(s.dataDir, "etcd")
	if err := os.RemoveAll(etcdDir); err != nil {
		return fmt.Errorf("kubeapi: %w", err)
	}
	if fill != nil {
		if err := os.Rename(next, etcdDir); err != nil {
			return fmt.Errorf("kubeapi: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	proc, ready, err := startProcess(ctx, s.opts, s.files, s.backend)
	if err != nil {
		return err
	}
	s.proc, s.etcd, s.etcdLost = proc, ready.Etcd, false
	body, err := s.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		return fmt.Errorf("kubeapi: /readyz after a restart: %q: %w (log: %s)", body, err, proc.logPath)
	}
	return nil
}
