package js

import (
	"net/http"

	"github.com/Azure/go-ntlmssp"
)

// ntlmClient is hc with its transport behind go-ntlmssp's Negotiator, as
// k6's params.auth "ntlm" has it: the request goes out anonymously, and
// when the server answers 401 with an NTLM (or Negotiate) challenge the
// URL's credentials ("DOMAIN\user" or "user@domain" as the user name) run
// NTLMv2's three-message handshake on that connection, the body sent again
// with the last message. The response is the handshake's last one.
func ntlmClient(hc *http.Client) *http.Client {
	c := *hc
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = ntlmssp.Negotiator{RoundTripper: rt}
	return &c
}
