package js

import (
	"crypto/tls"
	"strings"

	"github.com/grafana/sobek"
	"golang.org/x/crypto/ocsp"
)

// httpOCSP is a response's ocsp object, as k6's: the OCSP response the
// server stapled to its TLS handshake. A TLS response without one (or
// with one that does not parse) has status "unknown" and zero times; a
// response without TLS the zero value (status ""). Times are Unix
// seconds, and a time the OCSP response leaves out is Go's zero time's
// (-62135596800), as k6 reports it.
type httpOCSP struct {
	producedAt, thisUpdate, nextUpdate, revokedAt int64
	revocationReason, status                      string
}

// ocspStatuses are k6's names of the OCSP statuses (http.OCSP_STATUS_*).
var ocspStatuses = []struct {
	id   int
	name string
}{
	{ocsp.Good, "good"}, {ocsp.Revoked, "revoked"}, {ocsp.ServerFailed, "server_failed"}, {ocsp.Unknown, "unknown"},
}

// ocspReasons are k6's names of the revocation reasons
// (http.OCSP_REASON_*).
var ocspReasons = []struct {
	id   int
	name string
}{
	{ocsp.Unspecified, "unspecified"}, {ocsp.KeyCompromise, "key_compromise"}, {ocsp.CACompromise, "ca_compromise"},
	{ocsp.AffiliationChanged, "affiliation_changed"}, {ocsp.Superseded, "superseded"},
	{ocsp.CessationOfOperation, "cessation_of_operation"}, {ocsp.CertificateHold, "certificate_hold"},
	{ocsp.RemoveFromCRL, "remove_from_crl"}, {ocsp.PrivilegeWithdrawn, "privilege_withdrawn"},
	{ocsp.AACompromise, "aa_compromise"},
}

// stapledOCSP reads the OCSP response stapled to a TLS connection. Its
// signature is not checked (k6 does not either: the issuer is not at
// hand), so it reports what the server claims.
func stapledOCSP(cs *tls.ConnectionState) httpOCSP {
	out := httpOCSP{status: "unknown"}
	r, err := ocsp.ParseResponse(cs.OCSPResponse, nil)
	if err != nil {
		return out
	}
	for _, s := range ocspStatuses {
		if s.id == r.Status {
			out.status = s.name
		}
	}
	for _, s := range ocspReasons {
		if s.id == r.RevocationReason {
			out.revocationReason = s.name
		}
	}
	out.producedAt, out.thisUpdate = r.ProducedAt.Unix(), r.ThisUpdate.Unix()
	out.nextUpdate, out.revokedAt = r.NextUpdate.Unix(), r.RevokedAt.Unix()
	return out
}

// object is o as the response's ocsp property.
func (o httpOCSP) object(rt *sobek.Runtime) *sobek.Object {
	obj := rt.NewObject()
	set(obj, "produced_at", o.producedAt)
	set(obj, "this_update", o.thisUpdate)
	set(obj, "next_update", o.nextUpdate)
	set(obj, "revocation_reason", o.revocationReason)
	set(obj, "revoked_at", o.revokedAt)
	set(obj, "status", o.status)
	return obj
}

// setOCSPConstants sets k6/http's OCSP_STATUS_* and OCSP_REASON_*
// constants on the module object.
func setOCSPConstants(o *sobek.Object) {
	for _, s := range ocspStatuses {
		set(o, "OCSP_STATUS_"+strings.ToUpper(s.name), s.name)
	}
	for _, s := range ocspReasons {
		set(o, "OCSP_REASON_"+strings.ToUpper(s.name), s.name)
	}
}
