package talosnode

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Recorded methods: "grpc" for calls that may change state, "grpc-read"
// for reads.
const (
	methodWrite = "grpc"
	methodRead  = "grpc-read"
)

// readMethods are the simulated RPCs that never change state.
func isRead(fullMethod string) bool {
	switch fullMethod {
	case "/machine.MachineService/Version", "/machine.MachineService/ServiceList",
		"/machine.MachineService/EtcdMemberList", "/machine.MachineService/EtcdStatus",
		"/machine.MachineService/Kubeconfig", "/cluster.ClusterService/HealthCheck",
		"/machine.MachineService/Read", "/machine.MachineService/Events",
		"/cosi.resource.State/Get", "/cosi.resource.State/List", "/cosi.resource.State/Watch":
		return true
	}
	return false
}

// callPath is the recorded path of a call: the gRPC method and the node
// that answered it ("/machine.MachineService/Version?node=127.21.0.11"), so
// a scripted fault can target a method (PathPrefix = the method) or one
// node's method.
func (a *apiServices) callPath(fullMethod string) string {
	return fullMethod + "?node=" + a.node.addr.String()
}

// recordUnary records the call and applies the injector's decision.
func (a *apiServices) recordUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	method := methodOf(info.FullMethod, req)
	a.node.fleet.opts.Recorder.Arrived(labnet.Call{Service: ServiceName, Method: method, Path: a.callPath(info.FullMethod), Start: start})
	resp, err := func() (any, error) {
		if err := a.inject(ctx, info.FullMethod, method); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}()
	a.record(info.FullMethod, method, start, err)
	return resp, err
}

// recordStream records the call and applies the injector's decision.
func (a *apiServices) recordStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	method := methodOf(info.FullMethod, nil)
	a.node.fleet.opts.Recorder.Arrived(labnet.Call{Service: ServiceName, Method: method, Path: a.callPath(info.FullMethod), Start: start})
	err := a.inject(ss.Context(), info.FullMethod, method)
	if err == nil {
		err = handler(srv, ss)
	}
	a.record(info.FullMethod, method, start, err)
	return err
}

// methodOf is how a call is recorded: a read, or a call that may change
// state. A dry-run ApplyConfiguration changes nothing (Talos only diffs).
func methodOf(fullMethod string, req any) string {
	if apply, ok := req.(*machine.ApplyConfigurationRequest); isRead(fullMethod) || (ok && apply.GetDryRun()) {
		return methodRead
	}
	return methodWrite
}

// record appends the call to the recorder.
func (a *apiServices) record(fullMethod, method string, start time.Time, err error) {
	rec := a.node.fleet.opts.Recorder
	if rec == nil {
		return
	}
	rec.Record(labnet.Call{
		Service: ServiceName, Method: method, Path: a.callPath(fullMethod),
		Status: int(status.Code(err)), Start: start, Duration: time.Since(start),
	})
}

// inject applies the lab's faults: latency, a gRPC error (HTTP statuses
// mapped to their gRPC codes: 5xx is Unavailable) or a hang until the
// client gives up.
func (a *apiServices) inject(ctx context.Context, fullMethod, method string) error {
	inj := a.node.fleet.opts.Injector
	if inj == nil {
		return nil
	}
	d := inj.Decide(ServiceName, method, a.callPath(fullMethod))
	if d.Delay > 0 {
		t := time.NewTimer(d.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return status.FromContextError(ctx.Err()).Err()
		case <-t.C:
		}
	}
	switch {
	case d.Hang:
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	case d.Status != 0:
		return status.Error(grpcCode(d.Status), "injected fault: "+strings.ToLower(http.StatusText(d.Status)))
	}
	return nil
}

// grpcCode maps an HTTP status to the gRPC code a gateway would use.
func grpcCode(httpStatus int) codes.Code {
	switch httpStatus {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusConflict:
		return codes.AlreadyExists
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	case http.StatusInternalServerError:
		return codes.Internal
	default:
		return codes.Unavailable
	}
}
