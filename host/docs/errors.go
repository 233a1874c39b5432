package docs

import (
	"context"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/sdk/docprovider"
)

// This file is the document providers' side of the plugin boundary of the
// error vocabulary: whatever a provider (a docs plugin, or a built-in
// provider, which speaks the same sdk) returns is turned into the
// daemon's codes here, with api.FromSDK's one table, before it reaches
// the team service or the HTTP layer.

// coded is a document provider whose errors are in the daemon's codes.
type coded struct{ p docprovider.Provider }

var _ docprovider.Provider = coded{}

func (c coded) Read(ctx context.Context, r docprovider.Ref) (string, error) {
	s, err := c.p.Read(ctx, r)
	return s, api.FromSDK(err)
}

func (c coded) Write(ctx context.Context, r docprovider.Ref, content string) error {
	return api.FromSDK(c.p.Write(ctx, r, content))
}

func (c coded) Append(ctx context.Context, r docprovider.Ref, content string) error {
	return api.FromSDK(c.p.Append(ctx, r, content))
}

func (c coded) Create(ctx context.Context, r docprovider.Ref, content string) error {
	return api.FromSDK(c.p.Create(ctx, r, content))
}

func (c coded) List(ctx context.Context, s docprovider.Scope) ([]docprovider.Info, error) {
	infos, err := c.p.List(ctx, s)
	return infos, api.FromSDK(err)
}
