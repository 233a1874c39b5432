// Package grpcerr carries sdk error classes across the plugin's gRPC
// boundary, in the manner of containerd's errdefs: ToGRPC in the plugin,
// FromGRPC in the daemon, so that errors.Is(err, sdk.ErrNotFound) and the
// exact message survive the process boundary. It also turns transport
// failures (a plugin process that died) into sdk.ErrUnavailable, which the
// daemon retries. It is public because both sides use it: the SDK's server
// glue and the protocol's client (sdk/wire/client, the daemon's and the
// test kits'). Plugin authors never import it; they return sdk errors and
// the SDK carries them.
package grpcerr
