package talosnode

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// target is where apid's director sends a call: "" for this node, one
// node ("node" metadata) or several ("nodes" metadata, aggregated).
type target struct {
	nodes     []string
	aggregate bool
}

// direct is apid's director: it reads the "node"/"nodes" metadata.
func direct(ctx context.Context, fullMethod string) (target, error) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return target{}, nil
	}
	if _, ok := md["proxyfrom"]; ok {
		return target{}, nil
	}
	nodes, okNodes := md["nodes"]
	node, okNode := md["node"]
	if okNode && len(node) != 1 {
		return target{}, status.Error(codes.InvalidArgument, "node metadata must be single-valued")
	}
	switch {
	case okNodes:
		if !strings.HasPrefix(fullMethod, "/machine.MachineService/") && !strings.HasPrefix(fullMethod, "/cluster.ClusterService/") {
			return target{}, status.Errorf(codes.InvalidArgument, "one-2-many proxying is not supported for method %s", fullMethod)
		}
		return target{nodes: nodes, aggregate: true}, nil
	case okNode:
		return target{nodes: node}, nil
	}
	return target{}, nil
}

// proxied strips the routing metadata, as the proxy marks a forwarded call.
func proxied(ctx context.Context) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	md = md.Copy()
	delete(md, "node")
	delete(md, "nodes")
	md.Set("proxyfrom", "lab")
	return metadata.NewIncomingContext(ctx, md)
}

// resolve finds the node a target names, failing as apid's dial would.
func (a *apiServices) resolve(name string) (*Node, error) {
	f := a.node.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.lookup(name)
	endpoint := name
	if t != nil {
		endpoint = t.Endpoint()
	}
	switch {
	case t == nil || !t.apiUp:
		return nil, status.Errorf(codes.Unavailable,
			"connection error: desc = \"transport: Error while dialing: dial tcp %s: connect: connection refused\"", withPort(endpoint, f.opts.Port))
	case t.cfg == nil || a.node.cfg == nil || t.cfg.osCA.Crt == nil || string(t.cfg.osCA.Crt) != string(a.node.cfg.osCA.Crt):
		return nil, status.Errorf(codes.Unavailable,
			"connection error: desc = \"transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority\"")
	}
	return t, nil
}

// withPort adds apid's port to a bare host.
func withPort(endpoint string, port int) string {
	if strings.Contains(endpoint, ":") {
		return endpoint
	}
	return fmt.Sprintf("%s:%d", endpoint, port)
}

// routeUnary forwards a unary call to the node(s) named in its metadata.
func (a *apiServices) routeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	t, err := direct(ctx, info.FullMethod)
	if err != nil || len(t.nodes) == 0 {
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
	if !t.aggregate {
		n, err := a.resolve(t.nodes[0])
		if err != nil {
			return nil, err
		}
		// The target's own faults apply to what is forwarded to it (the
		// entry node recorded the call and applied its own).
		var resp any
		if _, err := n.api.faulted(ctx, info.FullMethod, methodOf(info.FullMethod, req), unaryRPC(func(ctx context.Context) (err error) {
			resp, err = n.api.routes[info.FullMethod].unary(proxied(ctx), req)
			return err
		})); err != nil {
			return nil, err
		}
		return resp, nil
	}
	out, err := newOutput(info.FullMethod)
	if err != nil {
		return nil, err
	}
	for _, name := range t.nodes {
		var resp any
		n, err := a.resolve(name)
		if err == nil {
			resp, err = n.api.routes[info.FullMethod].unary(proxied(ctx), req)
		}
		appendMessages(out, name, resp, err)
	}
	return out, nil
}

// routeStream forwards a streaming call to the node(s) named in its
// metadata; several nodes answer one after the other.
func (a *apiServices) routeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	t, err := direct(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if len(t.nodes) == 0 {
		return handler(srv, ss)
	}
	for _, name := range t.nodes {
		n, err := a.resolve(name)
		if err == nil {
			err = n.api.routes[info.FullMethod].stream(&forwardedStream{ServerStream: ss, ctx: proxied(ss.Context()), hostname: name, stamp: t.aggregate})
		}
		if err == nil {
			continue
		}
		if !t.aggregate {
			return err
		}
		msg, merr := newStreamOutput(info.FullMethod)
		if merr != nil {
			return merr
		}
		setMetadata(msg, name, err)
		if err := ss.SendMsg(msg); err != nil {
			return err
		}
	}
	return nil
}

// forwardedStream is a server stream handed to another node's handler.
type forwardedStream struct {
	grpc.ServerStream
	ctx      context.Context
	hostname string
	stamp    bool
}

// Context is the forwarded call's context.
func (s *forwardedStream) Context() context.Context { return s.ctx }

// SendMsg stamps the node's metadata on aggregated responses.
func (s *forwardedStream) SendMsg(m any) error {
	if s.stamp {
		if pm, ok := m.(proto.Message); ok {
			setMetadata(pm, s.hostname, nil)
		}
	}
	return s.ServerStream.SendMsg(m)
}

// method finds a method's descriptor.
func method(fullMethod string) (protoreflect.MethodDescriptor, error) {
	svc, name, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if ok {
		if d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc)); err == nil {
			if sd, ok := d.(protoreflect.ServiceDescriptor); ok {
				if md := sd.Methods().ByName(protoreflect.Name(name)); md != nil {
					return md, nil
				}
			}
		}
	}
	return nil, status.Errorf(codes.Unimplemented, "unknown method %s", fullMethod)
}

// newOutput is an empty response of a unary method.
func newOutput(fullMethod string) (proto.Message, error) {
	md, err := method(fullMethod)
	if err != nil {
		return nil, err
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "response type of %s: %v", fullMethod, err)
	}
	return mt.New().Interface(), nil
}

// newStreamOutput is an empty message of a streaming method.
func newStreamOutput(fullMethod string) (proto.Message, error) {
	return newOutput(fullMethod)
}

// appendMessages adds one node's answer to an aggregated response: its
// messages stamped with the node, or one message carrying its error.
func appendMessages(out proto.Message, node string, resp any, err error) {
	o := out.ProtoReflect()
	fd := o.Descriptor().Fields().ByName("messages")
	if fd == nil || !fd.IsList() {
		return
	}
	list := o.Mutable(fd).List()
	if err != nil {
		el := list.NewElement()
		setMetadata(el.Message().Interface(), node, err)
		list.Append(el)
		return
	}
	r, ok := resp.(proto.Message)
	if !ok {
		return
	}
	src := r.ProtoReflect().Get(fd).List()
	for i := range src.Len() {
		m := proto.Clone(src.Get(i).Message().Interface())
		setMetadata(m, node, nil)
		list.Append(protoreflect.ValueOfMessage(m.ProtoReflect()))
	}
}

// setMetadata sets common.Metadata{hostname, error, status} on a message
// that has a metadata field.
func setMetadata(m proto.Message, node string, err error) {
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("metadata")
	if fd == nil || fd.Message() == nil {
		return
	}
	md := r.Mutable(fd).Message()
	if h := md.Descriptor().Fields().ByName("hostname"); h != nil {
		md.Set(h, protoreflect.ValueOfString(node))
	}
	if err == nil {
		return
	}
	if e := md.Descriptor().Fields().ByName("error"); e != nil {
		md.Set(e, protoreflect.ValueOfString(err.Error()))
	}
	if s := md.Descriptor().Fields().ByName("status"); s != nil {
		proto.Merge(md.Mutable(s).Message().Interface(), status.Convert(err).Proto())
	}
}
