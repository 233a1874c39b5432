package grpcerr

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

// table is the one mapping between sdk classes, wire classes and gRPC
// codes; the zero class is the row for errors of no known class.
var table = []struct {
	class error
	wire  pluginv1.ErrorClass
	code  codes.Code
}{
	{sdk.ErrNotFound, pluginv1.ErrorClass_ERROR_CLASS_NOT_FOUND, codes.NotFound},
	{sdk.ErrConflict, pluginv1.ErrorClass_ERROR_CLASS_CONFLICT, codes.AlreadyExists},
	{sdk.ErrInvalid, pluginv1.ErrorClass_ERROR_CLASS_INVALID, codes.InvalidArgument},
	{sdk.ErrPermission, pluginv1.ErrorClass_ERROR_CLASS_PERMISSION, codes.PermissionDenied},
	{sdk.ErrUnavailable, pluginv1.ErrorClass_ERROR_CLASS_UNAVAILABLE, codes.Unavailable},
}

// noMessage stands in for an empty message from a plugin, so that the user
// never reads an empty error.
const noMessage = "plugin failed without a message"

// ToProto describes err for the wire: its exact message, its class and
// whether retrying can help. It returns nil for a nil err.
func ToProto(err error, permanent bool) *pluginv1.Error {
	if err == nil {
		return nil
	}
	e := &pluginv1.Error{Message: err.Error(), Permanent: permanent}
	class := sdk.Class(err)
	for _, row := range table {
		if row.class == class {
			e.Class = row.wire
		}
	}
	return e
}

// FromProto rebuilds an error sent by a plugin: its Error() is the message
// the plugin made, errors.Is finds its class, and permanent says whether the
// plugin marked it not worth retrying. A nil e gives nil.
func FromProto(e *pluginv1.Error) (err error, permanent bool) {
	if e == nil {
		return nil, false
	}
	msg := e.GetMessage()
	if msg == "" {
		msg = noMessage
	}
	for _, row := range table {
		if row.wire == e.GetClass() {
			return sdk.Errorf(row.class, "%s", msg), e.GetPermanent()
		}
	}
	return errors.New(msg), e.GetPermanent()
}

// ToGRPC turns an error of a plugin's unary call into a gRPC status: the
// code follows the class (so non-Go clients understand it too) and the
// details hold the Error that FromGRPC restores exactly. A nil err gives
// nil.
func ToGRPC(err error, permanent bool) error {
	if err == nil {
		return nil
	}
	code := codes.Unknown
	switch {
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	default:
		class := sdk.Class(err)
		for _, row := range table {
			if row.class == class {
				code = row.code
			}
		}
	}
	st := status.New(code, err.Error())
	if withDetails, derr := st.WithDetails(ToProto(err, permanent)); derr == nil {
		st = withDetails
	}
	return st.Err()
}

// FromGRPC turns the error of a gRPC call into an sdk error. A status that
// a plugin made with ToGRPC comes back exactly as the plugin made it. Any
// other status is the transport's or go-plugin's own: its class follows the
// code, so a plugin that died (codes.Unavailable) gives sdk.ErrUnavailable,
// and a call the plugin does not serve (codes.Unimplemented) is permanent.
// Cancellation keeps errors.Is(err, context.Canceled) working. A nil err
// gives nil.
func FromGRPC(err error) (_ error, permanent bool) {
	if err == nil {
		return nil, false
	}
	st, ok := status.FromError(err)
	if !ok {
		return sdk.Errorf(sdk.ErrUnavailable, "plugin unavailable: %w", err), false
	}
	var out error
	for _, d := range st.Details() {
		if e, ok := d.(*pluginv1.Error); ok {
			out, permanent = FromProto(e)
			break
		}
	}
	if out == nil {
		out, permanent = fromCode(st)
	}
	switch st.Code() {
	case codes.Canceled:
		out = &ctxError{out, context.Canceled}
	case codes.DeadlineExceeded:
		out = &ctxError{out, context.DeadlineExceeded}
	}
	return out, permanent
}

// fromCode classifies a status that carries no Error detail.
func fromCode(st *status.Status) (error, bool) {
	switch st.Code() {
	case codes.Unavailable:
		return sdk.Errorf(sdk.ErrUnavailable, "plugin unavailable: %s", st.Message()), false
	case codes.Unimplemented:
		return fmt.Errorf("plugin does not serve this call (is it the right kind of plugin?): %s", st.Message()), true
	case codes.Canceled, codes.DeadlineExceeded:
		return errors.New(st.Message()), false
	}
	for _, row := range table {
		if row.code == st.Code() {
			return sdk.Errorf(row.class, "plugin: %s", st.Message()), false
		}
	}
	return fmt.Errorf("plugin: %s", st.Message()), false
}

// ctxError keeps the message of a cancelled call while errors.Is still
// finds the context error.
type ctxError struct{ err, ctx error }

func (e *ctxError) Error() string   { return e.err.Error() }
func (e *ctxError) Unwrap() []error { return []error{e.err, e.ctx} }

// errPluginExited is the cancel cause Bind sets when the plugin process
// goes away.
var errPluginExited = errors.New("plugin process exited")

// Bind returns a ctx for one call that is also cancelled when done is (the
// ctx go-plugin cancels when the plugin process exits), so that no call
// outlives its plugin. Call the returned stop when the call is over.
func Bind(ctx, done context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	if done == nil {
		return ctx, func() { cancel(nil) }
	}
	stopAfter := context.AfterFunc(done, func() { cancel(errPluginExited) })
	return ctx, func() {
		stopAfter()
		cancel(nil)
	}
}

// FromCall is FromGRPC for a call made with a ctx from Bind(parent, done).
// It tells the three reasons a call can be cut short apart: the plugin
// process exited (done is over), or the daemon closed its client, give
// sdk.ErrUnavailable so that the daemon restarts the plugin and retries;
// the caller's own cancellation gives the caller's ctx error.
func FromCall(ctx, done context.Context, err error) (_ error, permanent bool) {
	if err == nil {
		return nil, false
	}
	if done != nil && done.Err() != nil {
		return sdk.Errorf(sdk.ErrUnavailable, "plugin unavailable: the plugin process exited"), false
	}
	if cause := context.Cause(ctx); cause != nil {
		if errors.Is(cause, errPluginExited) {
			return sdk.Errorf(sdk.ErrUnavailable, "plugin unavailable: the plugin process exited"), false
		}
		return cause, false
	}
	// A Canceled status the plugin did not make, while the caller's ctx is
	// live, is the connection closing under the call.
	if st, ok := status.FromError(err); ok && st.Code() == codes.Canceled && !hasDetail(st) {
		return sdk.Errorf(sdk.ErrUnavailable, "plugin unavailable: %s", st.Message()), false
	}
	return FromGRPC(err)
}

func hasDetail(st *status.Status) bool {
	for _, d := range st.Details() {
		if _, ok := d.(*pluginv1.Error); ok {
			return true
		}
	}
	return false
}
