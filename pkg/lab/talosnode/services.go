package talosnode

import (
	"context"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/resources/v1alpha1"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// serviceState is a service's state, last message and health.
type serviceState struct {
	state, msg string
	healthy    bool
}

// service is one system service of a node.
type service struct {
	id string
	serviceState
}

// running is a healthy running service.
var running = serviceState{"Running", "Health check successful", true}

// services are the node's system services, in machined's (alphabetical)
// order: what ServiceList, the Service resources and the health check
// report; f.mu held.
func (n *Node) services() []service {
	list := []service{{"apid", running}, {"containerd", running}}
	if n.cfg == nil {
		return append(list, service{"machined", running}, service{"udevd", running})
	}
	cri := running
	if !n.servicesUp {
		cri = serviceState{"Preparing", "Running pre state", false}
	}
	list = append(list, service{"cri", cri})
	if n.cfg.controlPlane() {
		list = append(list, service{"etcd", n.etcdState()})
	}
	list = append(list, service{"kubelet", n.kubeletState()}, service{"machined", running})
	if n.cfg.controlPlane() {
		list = append(list, service{"trustd", running})
	}
	return append(list, service{"udevd", running})
}

// serviceOf is the state of one of the node's services, ok false when the
// node has no such service; f.mu held.
func (n *Node) serviceOf(id string) (serviceState, bool) {
	for _, s := range n.services() {
		if s.id == id {
			return s.serviceState, true
		}
	}
	return serviceState{}, false
}

// ServiceList lists the node's system services.
func (s *machineServer) ServiceList(context.Context, *emptypb.Empty) (*machine.ServiceListResponse, error) {
	n := s.node
	n.fleet.mu.Lock()
	services := n.services()
	n.fleet.mu.Unlock()
	now := timestamppb.New(time.Now())
	list := make([]*machine.ServiceInfo, 0, len(services))
	for _, svc := range services {
		list = append(list, &machine.ServiceInfo{
			Id: svc.id, State: svc.state,
			Events: &machine.ServiceEvents{Events: []*machine.ServiceEvent{{Msg: svc.msg, State: svc.state, Ts: now}}},
			Health: &machine.ServiceHealth{Healthy: svc.healthy, LastMessage: svc.msg, LastChange: now},
		})
	}
	return &machine.ServiceListResponse{Messages: []*machine.ServiceList{{Services: list}}}, nil
}

// syncServices publishes a Service resource (runtime namespace) for every
// running service, as machined's service controller does; a service that
// stops, restarts or fails loses it.
func (n *Node) syncServices(ctx context.Context, v resourceView) {
	var want []*v1alpha1.Service
	for _, svc := range v.services {
		if svc.state != "Running" {
			continue
		}
		r := v1alpha1.NewService(svc.id)
		r.TypedSpec().Running, r.TypedSpec().Healthy = true, svc.healthy
		want = append(want, r)
	}
	syncKind(ctx, n.st, v1alpha1.NamespaceName, v1alpha1.ServiceType, want)
}
