package pbtime

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestTime(t *testing.T) {
	t.Parallel()
	if ToProto(time.Time{}) != nil {
		t.Error("the zero time must not become 1970")
	}
	if got := FromProto(nil); !got.IsZero() {
		t.Errorf("FromProto(nil) = %v, want zero", got)
	}
	if got := FromProto(&timestamppb.Timestamp{}); !got.Equal(time.Unix(0, 0)) {
		t.Errorf("FromProto(zero) = %v, want the epoch", got)
	}
	now := time.Now()
	if got := FromProto(ToProto(now)); !got.Equal(now) || got.Location() != time.Local {
		t.Errorf("round trip of %v = %v", now, got)
	}
}
