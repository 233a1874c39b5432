package triggers

import (
	"net/http"
	"testing"

	"github.com/agent-worker/agent-worker/host/api"
	"github.com/agent-worker/agent-worker/workflow"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	body := []byte(`{"object_kind":"merge_request"}`)
	tests := map[string]struct {
		provider workflow.HookProvider
		header   map[string]string
		want     api.Code // "" for accepted
	}{
		"gitlab token":              {workflow.ProviderGitLab, map[string]string{api.HeaderGitLabToken: secret}, ""},
		"gitlab wrong token":        {workflow.ProviderGitLab, map[string]string{api.HeaderGitLabToken: "s3cre"}, api.CodeUnauthorized},
		"gitlab missing token":      {workflow.ProviderGitLab, nil, api.CodeUnauthorized},
		"gitlab ignores signatures": {workflow.ProviderGitLab, map[string]string{api.HeaderSignature: Sign(secret, body)}, api.CodeUnauthorized},
		"github signature":          {workflow.ProviderGitHub, map[string]string{api.HeaderSignature: Sign(secret, body)}, ""},
		"github wrong secret":       {workflow.ProviderGitHub, map[string]string{api.HeaderSignature: Sign("other", body)}, api.CodeUnauthorized},
		"github ignores tokens":     {workflow.ProviderGitHub, map[string]string{api.HeaderGitLabToken: secret}, api.CodeUnauthorized},
		"hmac signature":            {workflow.ProviderHMAC, map[string]string{api.HeaderSignature: Sign(secret, body)}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			err := check(tc.provider, secret, h, body)
			if got := api.ErrorCode(err); (err == nil) != (tc.want == "") || (err != nil && got != tc.want) {
				t.Errorf("check = %v (code %q), want code %q", err, got, tc.want)
			}
		})
	}
}

func TestDeliveryID(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set(api.HeaderGitLabEventUUID, "gl-uuid")
	h.Set(api.HeaderDelivery, "gh-guid")
	h.Set(api.HeaderRequestID, "req")
	tests := map[string]struct {
		provider workflow.HookProvider
		h        http.Header
		want     string
	}{
		"gitlab":              {workflow.ProviderGitLab, h, "gl-uuid"},
		"github":              {workflow.ProviderGitHub, h, "gh-guid"},
		"hmac":                {workflow.ProviderHMAC, h, "gh-guid"},
		"hmac request id":     {workflow.ProviderHMAC, http.Header{"X-Request-Id": {"req"}}, "req"},
		"gitlab without uuid": {workflow.ProviderGitLab, http.Header{"X-Github-Delivery": {"gh"}}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := deliveryID(tc.provider, tc.h); got != tc.want {
				t.Errorf("deliveryID = %q, want %q", got, tc.want)
			}
		})
	}
}
