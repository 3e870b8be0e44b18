// Package provider holds what the phases share about the clouds talosc
// drives. Provider implementations (OpenStack, Proxmox) live in sub-packages;
// each phase binary hands the runner their Connectors (pkg/provider/clouds).
package provider

import (
	"errors"
	"fmt"
)

// ErrNotAvailable reports that this build has no implementation of a provider.
var ErrNotAvailable = errors.New("provider not available in this build")

// NotAvailableError names the provider and the operation that needed it.
type NotAvailableError struct {
	Provider string
	Phase    string
}

func (e *NotAvailableError) Error() string {
	return fmt.Sprintf("%s: the %s provider is not available in this talosc build yet; nothing was changed", e.Phase, e.Provider)
}

// Unwrap lets errors.Is(err, ErrNotAvailable) match.
func (e *NotAvailableError) Unwrap() error { return ErrNotAvailable }
