package talosnode

import (
	"context"
	"net"

	cosiapi "github.com/cosi-project/runtime/api/v1alpha1"
	"github.com/cosi-project/runtime/pkg/state"
	cosiserver "github.com/cosi-project/runtime/pkg/state/protobuf/server"
	"github.com/siderolabs/talos/pkg/machinery/api/cluster"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// route is one method of a node's API, callable in-process: what apid's
// proxy reaches when a request names another node.
type route struct {
	unary  func(ctx context.Context, req any) (any, error)
	stream func(ss grpc.ServerStream) error
}

// apiServices are a node's gRPC service implementations and their routes.
type apiServices struct {
	node      *Node
	machine   *machineServer
	cluster   *clusterServer
	image     *imageServer
	lifecycle *lifecycleServer
	state     *cosiserver.State
	routes    map[string]route
}

// newAPIServices builds the services of n.
func newAPIServices(n *Node) *apiServices {
	a := &apiServices{
		node:      n,
		machine:   &machineServer{node: n},
		cluster:   &clusterServer{node: n},
		image:     &imageServer{node: n},
		lifecycle: &lifecycleServer{node: n},
		state:     cosiserver.NewState(state.WrapCore(state.Filter(n.st, readOnly))),
		routes:    map[string]route{},
	}
	a.addRoutes(&machine.MachineService_ServiceDesc, a.machine)
	a.addRoutes(&cluster.ClusterService_ServiceDesc, a.cluster)
	a.addRoutes(&machine.ImageService_ServiceDesc, a.image)
	a.addRoutes(&machine.LifecycleService_ServiceDesc, a.lifecycle)
	a.addRoutes(&cosiapi.State_ServiceDesc, a.state)
	return a
}

// addRoutes indexes the methods of one service.
func (a *apiServices) addRoutes(desc *grpc.ServiceDesc, impl any) {
	for _, m := range desc.Methods {
		h := m.Handler
		a.routes["/"+desc.ServiceName+"/"+m.MethodName] = route{unary: func(ctx context.Context, req any) (any, error) {
			return h(impl, ctx, func(v any) error {
				proto.Merge(v.(proto.Message), req.(proto.Message))
				return nil
			}, nil)
		}}
	}
	for _, s := range desc.Streams {
		h := s.Handler
		a.routes["/"+desc.ServiceName+"/"+s.StreamName] = route{stream: func(ss grpc.ServerStream) error {
			return h(impl, ss)
		}}
	}
}

// readOnly refuses writes to COSI resources from the API, as Talos's
// resource access policy does for the resources the simulation serves, and
// reads of sensitive resources (the machine configuration) to callers
// without os:admin, as machined's access filter does.
func readOnly(ctx context.Context, access state.Access) error {
	if !access.Verb.Readonly() {
		return status.Error(codes.PermissionDenied, "write access denied")
	}
	if sensitive(access.ResourceType) && !peerRoles(ctx).Includes(role.Admin) {
		return errNotAuthorized
	}
	return nil
}

// newServer builds apid for one boot: mTLS from the machine config (or the
// maintenance API when mc is nil), with the lab's recording, fault
// injection, Talos authorization and apid's node routing.
func (a *apiServices) newServer(mc *machineConfig, hostname string) (*grpc.Server, error) {
	var creds credentials.TransportCredentials
	if mc == nil {
		tlsCfg, err := maintenanceTLS(a.node.addr)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(tlsCfg)
	} else {
		tlsCfg, err := serverTLS(mc, a.node.trustd(mc), a.node.addr, hostname)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(tlsCfg)
	}
	srv := grpc.NewServer(
		grpc.Creds(creds),
		grpc.ChainUnaryInterceptor(a.recordUnary, a.authorizeUnary, a.routeUnary),
		grpc.ChainStreamInterceptor(a.recordStream, a.authorizeStream, a.routeStream),
	)
	machine.RegisterMachineServiceServer(srv, a.machine)
	cluster.RegisterClusterServiceServer(srv, a.cluster)
	machine.RegisterImageServiceServer(srv, a.image)
	machine.RegisterLifecycleServiceServer(srv, a.lifecycle)
	cosiapi.RegisterStateServer(srv, a.state)
	return srv, nil
}

// authorizeUnary applies Talos's role rules.
func (a *apiServices) authorizeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// authorizeStream applies Talos's role rules.
func (a *apiServices) authorizeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}

// listen opens apid's loopback listener.
func listen(ctx context.Context, endpoint string) (net.Listener, error) {
	return labnet.Listen(ctx, endpoint)
}
