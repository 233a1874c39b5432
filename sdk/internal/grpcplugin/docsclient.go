package grpcplugin

import (
	"context"

	"github.com/agent-worker/agent-worker/sdk/docprovider"
	"github.com/agent-worker/agent-worker/sdk/wire"
	"github.com/agent-worker/agent-worker/sdk/wire/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// docsClient is plugintest's Provider for a plugin served in the test, as
// the daemon's client (host/pluginclient) is the daemon's. Errors come back
// as the provider made them (class and text); a plugin that cannot be
// reached or died gives sdk.ErrUnavailable.
type docsClient struct {
	rpc pluginv1.DocumentProviderServiceClient
	// done is cancelled when the plugin process exits.
	done context.Context
}

var _ docprovider.Provider = (*docsClient)(nil)

// call runs one RPC with a ctx that also ends if the plugin exits, and
// translates its error.
func call[Resp any](ctx context.Context, c *docsClient, rpc func(context.Context) (Resp, error)) (Resp, error) {
	ctx, stop := grpcerr.Bind(ctx, c.done)
	defer stop()
	resp, err := rpc(ctx)
	if err != nil {
		err, _ = grpcerr.FromCall(ctx, c.done, err)
	}
	return resp, err
}

// Read calls the plugin's Read.
func (c *docsClient) Read(ctx context.Context, r docprovider.Ref) (string, error) {
	resp, err := call(ctx, c, func(ctx context.Context) (*pluginv1.ReadResponse, error) {
		return c.rpc.Read(ctx, &pluginv1.ReadRequest{Ref: wire.RefToProto(r)})
	})
	return resp.GetContent(), err
}

// Write calls the plugin's Write.
func (c *docsClient) Write(ctx context.Context, r docprovider.Ref, content string) error {
	_, err := call(ctx, c, func(ctx context.Context) (*pluginv1.WriteResponse, error) {
		return c.rpc.Write(ctx, &pluginv1.WriteRequest{Ref: wire.RefToProto(r), Content: content})
	})
	return err
}

// Append calls the plugin's Append.
func (c *docsClient) Append(ctx context.Context, r docprovider.Ref, content string) error {
	_, err := call(ctx, c, func(ctx context.Context) (*pluginv1.AppendResponse, error) {
		return c.rpc.Append(ctx, &pluginv1.AppendRequest{Ref: wire.RefToProto(r), Content: content})
	})
	return err
}

// Create calls the plugin's Create.
func (c *docsClient) Create(ctx context.Context, r docprovider.Ref, content string) error {
	_, err := call(ctx, c, func(ctx context.Context) (*pluginv1.CreateResponse, error) {
		return c.rpc.Create(ctx, &pluginv1.CreateRequest{Ref: wire.RefToProto(r), Content: content})
	})
	return err
}

// List calls the plugin's List; the result is never nil on success.
func (c *docsClient) List(ctx context.Context, s docprovider.Scope) ([]docprovider.Info, error) {
	resp, err := call(ctx, c, func(ctx context.Context) (*pluginv1.ListResponse, error) {
		return c.rpc.List(ctx, wire.ScopeToProto(s))
	})
	if err != nil {
		return nil, err
	}
	return wire.InfosFromProto(resp), nil
}
