package js

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"golang.org/x/crypto/md4" //lint:ignore SA1019 NTLM hashes passwords with MD4
)

// ntlmServer answers as an NTLM-protected web server does (MS-NLMP,
// connection-oriented): a request without an NTLM message gets 401
// "WWW-Authenticate: NTLM"; a NEGOTIATE message gets a CHALLENGE with a
// fresh server challenge for that connection; an AUTHENTICATE message on
// the same connection is checked as NTLMv2 against password (NTProofStr
// = HMAC-MD5(NTOWFv2, server challenge || the client's blob)) and gets
// 200 with "DOMAIN\user body", else 401 with no challenge. It counts the
// messages it saw by type.
type ntlmServer struct {
	password string
	mu       sync.Mutex
	pending  map[string][]byte // remote address → the challenge sent on that connection
	seen     map[string]int    // "anonymous", "negotiate", "authenticate", "ok"
}

func (s *ntlmServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "NTLM ")
	msg, err := base64.StdEncoding.DecodeString(token)
	if !ok || err != nil || len(msg) < 12 || !bytes.HasPrefix(msg, []byte("NTLMSSP\x00")) {
		s.seen["anonymous"]++
		w.Header().Set("WWW-Authenticate", "NTLM")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch binary.LittleEndian.Uint32(msg[8:12]) {
	case 1:
		s.seen["negotiate"]++
		challenge := make([]byte, 8)
		_, _ = rand.Read(challenge)
		s.pending[r.RemoteAddr] = challenge
		w.Header().Set("WWW-Authenticate", "NTLM "+base64.StdEncoding.EncodeToString(ntlmChallengeMessage(challenge)))
		w.WriteHeader(http.StatusUnauthorized)
	case 3:
		s.seen["authenticate"]++
		challenge := s.pending[r.RemoteAddr]
		delete(s.pending, r.RemoteAddr)
		who, err := ntlmCheck(msg, challenge, s.password)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		s.seen["ok"]++
		fmt.Fprintf(w, "%s %s", who, body)
	default:
		http.Error(w, "unknown NTLM message", http.StatusBadRequest)
	}
}

// ntlmChallengeMessage is a CHALLENGE message: Unicode and NTLM
// negotiated, target info with only MsvAvEOL.
func ntlmChallengeMessage(challenge []byte) []byte {
	const flags = 0x00000001 | 0x00000200 | 0x00800000 // UNICODE | NTLM | TARGET_INFO
	targetInfo := []byte{0, 0, 0, 0}                   // MsvAvEOL
	b := new(bytes.Buffer)
	b.WriteString("NTLMSSP\x00")
	_ = binary.Write(b, binary.LittleEndian, uint32(2))
	_ = binary.Write(b, binary.LittleEndian, [2]uint16{0, 0}) // target name: none
	_ = binary.Write(b, binary.LittleEndian, uint32(48))
	_ = binary.Write(b, binary.LittleEndian, uint32(flags))
	b.Write(challenge)
	b.Write(make([]byte, 8))
	_ = binary.Write(b, binary.LittleEndian, [2]uint16{uint16(len(targetInfo)), uint16(len(targetInfo))})
	_ = binary.Write(b, binary.LittleEndian, uint32(48))
	b.Write(targetInfo)
	return b.Bytes()
}

// ntlmCheck verifies an AUTHENTICATE message's NTLMv2 response to
// challenge and returns "DOMAIN\user".
func ntlmCheck(msg, challenge []byte, password string) (string, error) {
	if challenge == nil {
		return "", fmt.Errorf("no challenge was sent on this connection")
	}
	field := func(at int) ([]byte, error) {
		if len(msg) < at+8 {
			return nil, fmt.Errorf("short message")
		}
		n, off := int(binary.LittleEndian.Uint16(msg[at:])), int(binary.LittleEndian.Uint32(msg[at+4:]))
		if off+n > len(msg) {
			return nil, fmt.Errorf("field at %d out of the message", at)
		}
		return msg[off : off+n], nil
	}
	nt, err := field(20)
	if err != nil {
		return "", err
	}
	domain, err := field(28)
	if err != nil {
		return "", err
	}
	user, err := field(36)
	if err != nil {
		return "", err
	}
	if len(nt) < 16+28 {
		return "", fmt.Errorf("not an NTLMv2 response (%d bytes)", len(nt))
	}
	utf16le := func(s string) []byte {
		var b []byte
		for _, u := range utf16.Encode([]rune(s)) {
			b = binary.LittleEndian.AppendUint16(b, u)
		}
		return b
	}
	str := func(b []byte) string {
		u := make([]uint16, len(b)/2)
		for i := range u {
			u[i] = binary.LittleEndian.Uint16(b[2*i:])
		}
		return string(utf16.Decode(u))
	}
	hm := func(key []byte, data ...[]byte) []byte {
		m := hmac.New(md5.New, key)
		for _, d := range data {
			m.Write(d)
		}
		return m.Sum(nil)
	}
	h := md4.New()
	h.Write(utf16le(password))
	ntowf := hm(h.Sum(nil), utf16le(strings.ToUpper(str(user))+str(domain)))
	if !hmac.Equal(hm(ntowf, challenge, nt[16:]), nt[:16]) {
		return "", fmt.Errorf("wrong NTLMv2 response for %s\\%s", str(domain), str(user))
	}
	return str(domain) + `\` + str(user), nil
}

// TestHTTPNTLMAuth: params.auth "ntlm" runs NTLMv2's handshake with the
// URL's credentials against a server that checks it, the body sent again
// with the last message; a wrong password ends in the server's 401, and
// without params.auth the credentials are never tried as NTLM.
func TestHTTPNTLMAuth(t *testing.T) {
	ns := &ntlmServer{password: "S3cret!", pending: map[string][]byte{}, seen: map[string]int{}}
	srv := httptest.NewServer(ns)
	t.Cleanup(srv.Close)
	src := `import http from 'k6/http';
export default function () {
  const host = __ENV.URL.replace('http://', '');
  let r = http.post('http://CORP%5Cjane:S3cret!@' + host + '/ntlm', 'the body', { auth: 'ntlm' });
  eq(r.status, 200, 'ntlm status');
  eq(r.body, 'CORP\\jane the body', 'ntlm body');
  r = http.get('http://jane:wrong@' + host + '/ntlm', { auth: 'ntlm' });
  eq(r.status, 401, 'wrong password');
  r = http.get('http://CORP%5Cjane:S3cret!@' + host + '/ntlm');
  eq(r.status, 401, 'no params.auth');
}
` + jsAsserts
	runIteration(context.Background(), t, src, map[string]string{"URL": srv.URL}).mustPass(t)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	want := map[string]int{"anonymous": 3, "negotiate": 2, "authenticate": 2, "ok": 1}
	for k, n := range want {
		if ns.seen[k] != n {
			t.Errorf("the server saw %v, want %v", ns.seen, want)
			break
		}
	}
}
