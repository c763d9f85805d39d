package js

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// TLSAuth is one entry of k6's tlsAuth option: a client certificate and
// its key (PEM), the key's password when it is encrypted (legacy PEM
// encryption, as k6 reads), and the domains it is meant for.
//
// As in k6, the certificate a server gets is the first whose issuer the
// server's request accepts (Go's choice among the entries); Domains is
// read and checked but does not restrict it (k6 hands the list to Go's
// deprecated, server-side NameToCertificate and warns that it may go).
type TLSAuth struct {
	Cert, Key string
	Password  *string
	Domains   []string
}

// certificates reads the tlsAuth entries; each error is an
// *HTTPOptionError naming the entry (tlsAuth[0]).
func tlsAuthCertificates(auths []TLSAuth) ([]tls.Certificate, []error) {
	var certs []tls.Certificate
	var errs []error
	for i, a := range auths {
		opt := fmt.Sprintf("tlsAuth[%d]", i)
		key := []byte(a.Key)
		if a.Password != nil {
			k, err := decryptPEMKey(a.Key, *a.Password)
			if err != nil {
				errs = append(errs, &HTTPOptionError{Option: opt + ".key", Msg: ": " + err.Error()})
				continue
			}
			key = k
		}
		c, err := tls.X509KeyPair([]byte(a.Cert), key)
		if err != nil {
			errs = append(errs, &HTTPOptionError{Option: opt, Msg: ": cert and key: " + err.Error()})
			continue
		}
		for j, d := range a.Domains {
			if !hostPattern.MatchString(d) {
				errs = append(errs, &HTTPOptionError{Option: fmt.Sprintf("%s.domains[%d]", opt, j), Msg: fmt.Sprintf(" %q: not a host name", d)})
			}
		}
		certs = append(certs, c)
	}
	return certs, errs
}

// decryptPEMKey decrypts a legacy-encrypted PEM private key (Proc-Type:
// 4,ENCRYPTED), the form k6's tlsAuth password reads; PKCS#8 encrypted
// keys are refused, as k6 refuses them.
func decryptPEMKey(key, password string) ([]byte, error) {
	block, _ := pem.Decode([]byte(key))
	if block == nil {
		return nil, errors.New("not a PEM key")
	}
	if block.Type == "ENCRYPTED PRIVATE KEY" {
		return nil, errors.New("an encrypted PKCS#8 key is not supported (as in k6): decrypt it, or use a legacy-encrypted PEM key")
	}
	//lint:ignore SA1019 k6's tlsAuth password reads legacy-encrypted PEM keys, the only kind the standard library decrypts.
	der, err := x509.DecryptPEMBlock(block, []byte(password)) //nolint:staticcheck // as above
	if err != nil {
		return nil, fmt.Errorf("decrypt with the password: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der}), nil
}
