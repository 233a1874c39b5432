package api

import "unicode/utf8"

// CheckUTF8 refuses a request body that is not UTF-8 (JSON must be):
// decoding would store what it cannot read as U+FFFD, silently changing
// the text. The HTTP API and the MCP endpoint both call it.
func CheckUTF8(body []byte) error {
	if utf8.Valid(body) {
		return nil
	}
	i := 0
	for i < len(body) {
		r, n := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		i += n
	}
	return Errorf(CodeInvalid, "request body is not valid UTF-8 (at byte %d): send text; to pass binary data, write it to a file and send its path", i)
}
