package talosnode

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
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
		"/machine.MachineService/List", "/machine.MachineService/EtcdSnapshot",
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
	var resp any
	f, err := a.faulted(ctx, info.FullMethod, method, unaryRPC(func(ctx context.Context) (err error) {
		resp, err = handler(ctx, req)
		return err
	}))
	a.record(info.FullMethod, method, start, err, f)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// recordStream records the call and applies the injector's decision. A
// stream whose answer is lost runs to its end with every message it sends
// thrown away.
func (a *apiServices) recordStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	method := methodOf(info.FullMethod, nil)
	a.node.fleet.opts.Recorder.Arrived(labnet.Call{Service: ServiceName, Method: method, Path: a.callPath(info.FullMethod), Start: start})
	f, err := a.faulted(ss.Context(), info.FullMethod, method, streamRPC(srv, ss, handler))
	a.record(info.FullMethod, method, start, err, f)
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
func (a *apiServices) record(fullMethod, method string, start time.Time, err error, f fate) {
	rec := a.node.fleet.opts.Recorder
	if rec == nil {
		return
	}
	rec.Record(labnet.Call{
		Service: ServiceName, Method: method, Path: a.callPath(fullMethod),
		Status: int(status.Code(err)), Lost: f.lost, Late: f.late, Start: start, Duration: time.Since(start),
	})
}

// fate is what a fault did to a call's request: applied, then its answer
// lost (lost), or applied after its answer (late).
type fate struct{ lost, late bool }

// faulted applies the lab's faults to a call: latency, then a gRPC error
// instead of the call (HTTP statuses mapped to their gRPC codes: 5xx is
// Unavailable), a reset connection, or a hang until the client gives up;
// or, for an answer lost after the call was applied, the call (its lost
// form) and then one of those instead of its answer; or, for a late
// write, one of those, and the call (its late form) LateBy after that.
func (a *apiServices) faulted(ctx context.Context, fullMethod, method string, call rpc) (f fate, err error) {
	inj := a.node.fleet.opts.Injector
	if inj == nil {
		return fate{}, call.run(ctx)
	}
	d := inj.Decide(ServiceName, method, a.callPath(fullMethod))
	if d.Delay > 0 {
		t := time.NewTimer(d.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fate{}, status.FromContextError(ctx.Err()).Err()
		case <-t.C:
		}
	}
	if f.lost = d.Lost(); f.lost {
		_ = call.lostRun(ctx) // applied; its answer goes nowhere
	}
	if d.Late && method == methodWrite {
		if apply := call.late(); apply != nil {
			f.late = true
			// once the answer ended, whichever way
			defer inj.Late(ctx, ServiceName+" "+a.callPath(fullMethod), d.LateBy, func(ctx context.Context) { _ = apply(ctx) })
		}
	}
	switch {
	case d.Hang:
		<-ctx.Done()
		return f, status.FromContextError(ctx.Err()).Err()
	case d.Reset:
		a.node.fleet.conns.reset(ctx)
		return f, status.Error(codes.Unavailable, "injected fault: connection reset")
	case d.Status != 0:
		return f, status.Error(grpcCode(d.Status), "injected fault: "+strings.ToLower(http.StatusText(d.Status)))
	}
	return fate{}, call.run(ctx)
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

// conns are apid's client connections (every node's) by the client's
// address, so that an injected fault can reset the one a call came on, as
// a proxy dropping it would. The zero value is ready.
type conns struct{ m sync.Map }

// track registers every connection l accepts until it is closed.
func (c *conns) track(l net.Listener) net.Listener { return &trackedListener{Listener: l, conns: c} }

// reset resets the connection of ctx's call (the client reads ECONNRESET);
// false: the call came on no tracked connection (an in-process one).
func (c *conns) reset(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return false
	}
	v, ok := c.m.Load(p.Addr.String())
	if !ok {
		return false
	}
	conn := v.(net.Conn)
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close with RST, not FIN
	}
	_ = conn.Close()
	return true
}

type trackedListener struct {
	net.Listener
	conns *conns
}

func (l *trackedListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	key := conn.RemoteAddr().String()
	l.conns.m.Store(key, conn)
	return &trackedConn{Conn: conn, forget: func() { l.conns.m.CompareAndDelete(key, conn) }}, nil
}

type trackedConn struct {
	net.Conn
	forget func()
}

func (c *trackedConn) Close() error {
	c.forget()
	return c.Conn.Close()
}
