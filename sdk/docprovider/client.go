package docprovider

import (
	"context"

	"github.com/agent-worker/agent-worker/sdk/internal/grpcerr"
	"github.com/agent-worker/agent-worker/sdk/internal/pluginv1"
)

// client is the daemon's Provider for a plugin process. Errors come back
// as the provider made them (class and text); a plugin that cannot be
// reached or died gives sdk.ErrUnavailable.
type client struct {
	rpc pluginv1.DocumentProviderServiceClient
	// done is cancelled when the plugin process exits.
	done context.Context
}

var _ Provider = (*client)(nil)

// call runs one RPC with a ctx that also ends if the plugin exits, and
// translates its error.
func call[Resp any](ctx context.Context, c *client, rpc func(context.Context) (Resp, error)) (Resp, error) {
	ctx, stop := grpcerr.Bind(ctx, c.done)
	defer stop()
	resp, err := rpc(ctx)
	if err != nil {
		err, _ = grpcerr.FromCall(ctx, c.done, err)
	}
	return resp, err
}

// Read calls the plugin's Read.
func (c *client) Read(ctx context.Context, r Ref) (string, error) {
	resp, err := call(ctx, c, func(ctx context.Context) (*pluginv1.ReadResponse, error) {
		return c.rpc.Read(ctx, &pluginv1.ReadRequest{Ref: refToProto(r)})
	})
	return resp.GetContent(), err
}

// Write calls the plugin's Write.
func (c *client) Write(ctx context.Context, r Ref, content string) error {
	_, err := call(ctx, c, func(ctx context.Context) (*pluginv1.WriteResponse, error) {
		return c.rpc.Write(ctx, &pluginv1.WriteRequest{Ref: refToProto(r), Content: content})
	})
	return err
}

// Append calls the plugin's Append.
func (c *client) Append(ctx context.Context, r Ref, content string) error {
	_, err := call(ctx, c, func(ctx context.Context) (*pluginv1.AppendResponse, error) {
		return c.rpc.Append(ctx, &pluginv1.AppendRequest{Ref: refToProto(r), Content: content})
	})
	return err
}

// Create calls the plugin's Create.
func (c *client) Create(ctx context.Context, r Ref, content string) error {
	_, err := call(ctx, c, func(ctx context.Context) (*pluginv1.CreateResponse, error) {
		return c.rpc.Create(ctx, &pluginv1.CreateRequest{Ref: refToProto(r), Content: content})
	})
	return err
}

// List calls the plugin's List; the result is never nil on success.
func (c *client) List(ctx context.Context, s Scope) ([]Info, error) {
	resp, err := call(ctx, c, func(ctx context.Context) (*pluginv1.ListResponse, error) {
		return c.rpc.List(ctx, scopeToProto(s))
	})
	if err != nil {
		return nil, err
	}
	return infosFromProto(resp), nil
}
