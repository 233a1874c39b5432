package contract

// AnswerRequest is POST /questions/{id}/answer's body: the answer (one of
// the options or free text) and who gives it ("user" when empty).
type AnswerRequest struct {
	Answer string `json:"answer"`
	By     string `json:"by,omitempty"`
}

// DecideRequest is POST /questions/{id}/approve and /deny's body: the
// reason (for a denial, the gated call fails with it) and who decides
// ("user" when empty).
type DecideRequest struct {
	Reason string `json:"reason,omitempty"`
	By     string `json:"by,omitempty"`
}
