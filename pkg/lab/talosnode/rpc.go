package talosnode

import (
	"context"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// rpc is one call as the lab's faults run it.
type rpc struct {
	// run makes the call as the client did, with ctx (a stream keeps
	// its own).
	run func(ctx context.Context) error
	// lost makes the call with its answer thrown away; nil: run.
	lost func(ctx context.Context) error
	// late reads now what the call needs (a stream's request) and returns
	// the call to make later, with a context of its own, its answer
	// thrown away; nil when it cannot be made later.
	late func() func(ctx context.Context) error
}

// lostRun makes the call with its answer thrown away.
func (c rpc) lostRun(ctx context.Context) error {
	if c.lost != nil {
		return c.lost(ctx)
	}
	return c.run(ctx)
}

// unaryRPC is a unary call: its request is in hand, so it can run late as
// it is (its answer goes nowhere).
func unaryRPC(run func(context.Context) error) rpc {
	return rpc{run: run, late: func() func(context.Context) error { return run }}
}

// streamRPC is a streaming call: lost, its handler runs with every message
// it sends thrown away; late, its request is read now and replayed to its
// handler later (a server-streaming call has one request; a client
// stream's later messages are not replayed).
func streamRPC(srv any, ss grpc.ServerStream, handler grpc.StreamHandler) rpc {
	return rpc{
		run:  func(context.Context) error { return handler(srv, ss) },
		lost: func(context.Context) error { return handler(srv, lostStream{ss}) },
		late: func() func(context.Context) error {
			// An Empty keeps every field of the request as unknown
			// fields, which marshal back as they came.
			var req emptypb.Empty
			if ss.RecvMsg(&req) != nil {
				return nil
			}
			data, err := proto.Marshal(&req)
			if err != nil {
				return nil
			}
			return func(ctx context.Context) error { return handler(srv, &replayStream{ctx: ctx, req: data}) }
		},
	}
}

// lostStream is a server stream whose messages never reach the client.
type lostStream struct{ grpc.ServerStream }

func (lostStream) SendMsg(any) error { return nil }

// replayStream is a server stream whose client is gone: it hands the
// handler the request read before, then io.EOF; what it sends goes nowhere.
type replayStream struct {
	ctx  context.Context
	req  []byte
	read bool
}

func (s *replayStream) SetHeader(metadata.MD) error  { return nil }
func (s *replayStream) SendHeader(metadata.MD) error { return nil }
func (s *replayStream) SetTrailer(metadata.MD)       {}
func (s *replayStream) Context() context.Context     { return s.ctx }
func (s *replayStream) SendMsg(any) error            { return nil }

func (s *replayStream) RecvMsg(m any) error {
	msg, ok := m.(proto.Message)
	if s.read || !ok {
		return io.EOF
	}
	s.read = true
	return proto.Unmarshal(s.req, msg)
}
