package lab

import "github.com/talosc/talosc/pkg/lab/talosnode"

// Fleet lets tests power the Talos nodes off and on, as a provider's stop
// and start would.
func (l *Lab) Fleet() *talosnode.Fleet { return l.fleet }
