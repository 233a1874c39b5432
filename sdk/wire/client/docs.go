package client

import (
	"context"

	"google.golang.org/grpc"

	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/wire"
	"github.com/agent-worker/agent-worker/sdk/wire/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// Docs is a plugin's docs provider seen from the calling side. Errors come
// back as the provider made them (class and text); a plugin that cannot be
// reached or died gives sdk.ErrUnavailable.
type Docs struct {
	rpc pluginv1.DocumentProviderServiceClient
	// done is cancelled when the plugin process exits.
	done context.Context
}

var _ docprovider.Provider = (*Docs)(nil)

// NewDocs returns the Provider that calls over conn. done is the context
// go-plugin hands GRPCClient, cancelled when the plugin process exits (or
// the connection ends), which fails calls in progress with
// sdk.ErrUnavailable.
func NewDocs(done context.Context, conn grpc.ClientConnInterface) *Docs {
	return &Docs{rpc: pluginv1.NewDocumentProviderServiceClient(conn), done: done}
}

// call runs one RPC with a ctx that also ends if the plugin exits, and
// translates its error.
func call[Resp any](ctx context.Context, c *Docs, rpc func(context.Context) (Resp, error)) (Resp, error) {
	ctx, stop := grpcerr.Bind(ctx, c.done)
	defer stop()
	resp, err := rpc(ctx)
	if err != nil {
		err, _ = grpcerr.FromCall(ctx, c.done, err)
	}
	return resp, err
}

// Read calls the plugin's Read.
func (c *Docs) Read(ctx context.Context, r docprovider.Ref) (string, error) {
	resp, err := call(ctx, c, func(ctx context.Context) (*pluginv1.ReadResponse, error) {
		return c.rpc.Read(ctx, &pluginv1.ReadRequest{Ref: wire.RefToProto(r)})
	})
	return resp.GetContent(), err
}

// Write calls the plugin's Write.
func (c *Docs) Write(ctx context.Context, r docprovider.Ref, content string) error {
	_, err := call(ctx, c, func(ctx context.Context) (*pluginv1.WriteResponse, error) {
		return c.rpc.Write(ctx, &pluginv1.WriteRequest{Ref: wire.RefToProto(r), Content: content})
	})
	return err
}

// Append calls the plugin's Append.
func (c *Docs) Append(ctx context.Context, r docprovider.Ref, content string) error {
	_, err := call(ctx, c, func(ctx context.Context) (*pluginv1.AppendResponse, error) {
		return c.rpc.Append(ctx, &pluginv1.AppendRequest{Ref: wire.RefToProto(r), Content: content})
	})
	return err
}

// Create calls the plugin's Create.
func (c *Docs) Create(ctx context.Context, r docprovider.Ref, content string) error {
	_, err := call(ctx, c, func(ctx context.Context) (*pluginv1.CreateResponse, error) {
		return c.rpc.Create(ctx, &pluginv1.CreateRequest{Ref: wire.RefToProto(r), Content: content})
	})
	return err
}

// List calls the plugin's List; the result is never nil on success.
func (c *Docs) List(ctx context.Context, s docprovider.Scope) ([]docprovider.Info, error) {
	resp, err := call(ctx, c, func(ctx context.Context) (*pluginv1.ListResponse, error) {
		return c.rpc.List(ctx, wire.ScopeToProto(s))
	})
	if err != nil {
		return nil, err
	}
	return wire.InfosFromProto(resp), nil
}
