package grpcerr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/agent-worker/agent-worker/sdk"
	"github.com/agent-worker/agent-worker/sdk/wire/pluginv1"
)

var classes = map[string]error{
	"not found":   sdk.ErrNotFound,
	"conflict":    sdk.ErrConflict,
	"invalid":     sdk.ErrInvalid,
	"permission":  sdk.ErrPermission,
	"unavailable": sdk.ErrUnavailable,
}

// Every class survives the wire, through the stream's Error message and
// through a gRPC status, with its exact text and Permanent bit.
func TestClassesRoundTrip(t *testing.T) {
	t.Parallel()
	for name, class := range classes {
		for _, permanent := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s permanent=%v", name, permanent), func(t *testing.T) {
				t.Parallel()
				in := fmt.Errorf("write specs/api.md: %w", sdk.Errorf(class, "document %q is %s", "api.md", name))
				check := func(how string, got error, gotPermanent bool) {
					t.Helper()
					if !errors.Is(got, class) || sdk.Class(got) != class {
						t.Errorf("%s: %v has class %v, want %v", how, got, sdk.Class(got), class)
					}
					if got.Error() != in.Error() {
						t.Errorf("%s: message %q, want %q", how, got, in)
					}
					if gotPermanent != permanent {
						t.Errorf("%s: permanent = %v, want %v", how, gotPermanent, permanent)
					}
				}
				got, p := FromProto(ToProto(in, permanent))
				check("proto", got, p)
				got, p = FromGRPC(ToGRPC(in, permanent))
				check("grpc", got, p)
			})
		}
	}
}

// A non-Go client sees the class in the status code.
func TestToGRPCCodes(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err  error
		want codes.Code
	}{
		"not found":   {sdk.Errorf(sdk.ErrNotFound, "x"), codes.NotFound},
		"conflict":    {sdk.Errorf(sdk.ErrConflict, "x"), codes.AlreadyExists},
		"invalid":     {sdk.Errorf(sdk.ErrInvalid, "x"), codes.InvalidArgument},
		"permission":  {sdk.Errorf(sdk.ErrPermission, "x"), codes.PermissionDenied},
		"unavailable": {sdk.Errorf(sdk.ErrUnavailable, "x"), codes.Unavailable},
		"plain":       {errors.New("x"), codes.Unknown},
		"canceled":    {fmt.Errorf("read: %w", context.Canceled), codes.Canceled},
		"deadline":    {context.DeadlineExceeded, codes.DeadlineExceeded},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := status.Convert(ToGRPC(tc.err, false))
			if st.Code() != tc.want || st.Message() != tc.err.Error() {
				t.Errorf("ToGRPC(%v) = %v %q, want %v %q", tc.err, st.Code(), st.Message(), tc.want, tc.err.Error())
			}
		})
	}
}

func TestNilAndZero(t *testing.T) {
	t.Parallel()
	if ToProto(nil, true) != nil || ToGRPC(nil, true) != nil {
		t.Error("a nil error must stay nil")
	}
	if err, p := FromProto(nil); err != nil || p {
		t.Errorf("FromProto(nil) = %v, %v", err, p)
	}
	if err, p := FromGRPC(nil); err != nil || p {
		t.Errorf("FromGRPC(nil) = %v, %v", err, p)
	}
	// An error from a careless non-Go plugin still says something.
	err, p := FromProto(&pluginv1.Error{})
	if err == nil || err.Error() != noMessage || sdk.Class(err) != nil || p {
		t.Errorf("FromProto(zero) = %v (class %v), %v", err, sdk.Class(err), p)
	}
	// An unclassified error stays unclassified.
	want := &pluginv1.Error{Message: "boom"}
	if diff := cmp.Diff(want, ToProto(errors.New("boom"), false), protocmp.Transform()); diff != "" {
		t.Errorf("ToProto (-want +got):\n%s", diff)
	}
	err, _ = FromGRPC(ToGRPC(errors.New("boom"), false))
	if err.Error() != "boom" || sdk.Class(err) != nil {
		t.Errorf("unclassified round trip = %v (class %v)", err, sdk.Class(err))
	}
}

// Statuses the plugin did not make come from the transport: a dead plugin
// must be retryable, a wrong kind of plugin must not.
func TestTransportStatuses(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err       error
		class     error
		ctxErr    error
		permanent bool
		text      string // the end of the message
	}{
		"connection lost": {status.Error(codes.Unavailable, "error reading from server: EOF"), sdk.ErrUnavailable, nil, false, "plugin unavailable: error reading from server: EOF"},
		"unimplemented":   {status.Error(codes.Unimplemented, "unknown service x"), nil, nil, true, "unknown service x"},
		"not found code":  {status.Error(codes.NotFound, "gone"), sdk.ErrNotFound, nil, false, "plugin: gone"},
		"internal":        {status.Error(codes.Internal, "bad frame"), nil, nil, false, "plugin: bad frame"},
		"canceled":        {status.Error(codes.Canceled, "context canceled"), nil, context.Canceled, false, "context canceled"},
		"deadline":        {status.Error(codes.DeadlineExceeded, "context deadline exceeded"), nil, context.DeadlineExceeded, false, "context deadline exceeded"},
		"not a status":    {errors.New("pipe broke"), sdk.ErrUnavailable, nil, false, "plugin unavailable: pipe broke"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, permanent := FromGRPC(tc.err)
			if sdk.Class(got) != tc.class || permanent != tc.permanent {
				t.Errorf("FromGRPC(%v) = class %v permanent %v, want %v %v", tc.err, sdk.Class(got), permanent, tc.class, tc.permanent)
			}
			if tc.ctxErr != nil && !errors.Is(got, tc.ctxErr) {
				t.Errorf("FromGRPC(%v) = %v, want it to be %v", tc.err, got, tc.ctxErr)
			}
			if !strings.HasSuffix(got.Error(), tc.text) {
				t.Errorf("FromGRPC(%v) text = %q, want it to end in %q", tc.err, got, tc.text)
			}
		})
	}
}

func TestFromCall(t *testing.T) {
	t.Parallel()
	canceled := status.Error(codes.Canceled, "grpc: the client connection is closing")
	exited, exit := context.WithCancel(context.Background())
	exit()
	tests := map[string]struct {
		parent, done context.Context
		err          error
		want         error // a class or a ctx error the result must be
		text         string
	}{
		"plugin exited before the call": {context.Background(), exited, canceled, sdk.ErrUnavailable, "plugin unavailable: the plugin process exited"},
		"client closed by the daemon":   {context.Background(), context.Background(), canceled, sdk.ErrUnavailable, "plugin unavailable: grpc: the client connection is closing"},
		"caller cancelled":              {cancelledCtx(), context.Background(), canceled, context.Canceled, "context canceled"},
		"plugin error":                  {context.Background(), nil, ToGRPC(sdk.Errorf(sdk.ErrConflict, "exists"), false), sdk.ErrConflict, "exists"},
		"plugin's own cancellation":     {context.Background(), nil, ToGRPC(fmt.Errorf("call model: %w", context.Canceled), false), context.Canceled, "call model: context canceled"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, stop := Bind(tc.parent, tc.done)
			defer stop()
			got, _ := FromCall(ctx, tc.done, tc.err)
			if !errors.Is(got, tc.want) || got.Error() != tc.text {
				t.Errorf("FromCall = %q, want %q of %v", got, tc.text, tc.want)
			}
		})
	}
	ctx, stop := Bind(context.Background(), nil)
	defer stop()
	if err, _ := FromCall(ctx, nil, nil); err != nil {
		t.Errorf("FromCall(nil) = %v", err)
	}
}

// The plugin exiting during a call cancels the call.
func TestBindCancelsWhenThePluginExits(t *testing.T) {
	t.Parallel()
	done, exit := context.WithCancel(context.Background())
	ctx, stop := Bind(context.Background(), done)
	defer stop()
	exit()
	<-ctx.Done() // a hang here is the failure
	if err, _ := FromCall(ctx, done, status.Error(codes.Canceled, "context canceled")); !errors.Is(err, sdk.ErrUnavailable) {
		t.Errorf("FromCall after the plugin exited = %v, want sdk.ErrUnavailable", err)
	}
}

func cancelledCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
