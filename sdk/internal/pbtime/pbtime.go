// Package pbtime converts times to and from the wire for every part of the
// plugin protocol (document lists, a run's messages), so that the zero time
// and time zones cross it one way.
package pbtime

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
)

// ToProto sends the zero time as no timestamp, so that it comes back zero
// rather than as 1970.
func ToProto(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// FromProto returns local time, as time.Now does, so that a value from
// the other side of a plugin reads like one made in this process.
func FromProto(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime().Local()
}
