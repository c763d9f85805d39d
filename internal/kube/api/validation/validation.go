// Package validation checks names as the Kubernetes API server does:
// DNS-1123 labels and subdomains, DNS-1035 labels, qualified names and
// label values, with the server's messages.
package validation

import (
	"fmt"
	"regexp"
	"strings"
)

const (
	dns1123LabelFmt     = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123SubdomainFmt = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	dns1035LabelFmt     = "[a-z]([-a-z0-9]*[a-z0-9])?"
	qualifiedNameFmt    = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
	labelValueFmt       = "(" + qualifiedNameFmt + ")?"

	// DNS1123LabelMaxLength is the longest DNS-1123 label.
	DNS1123LabelMaxLength = 63
	// DNS1123SubdomainMaxLength is the longest DNS-1123 subdomain.
	DNS1123SubdomainMaxLength = 253
	// DNS1035LabelMaxLength is the longest DNS-1035 label.
	DNS1035LabelMaxLength  = 63
	qualifiedNameMaxLength = 63
	// LabelValueMaxLength is the longest label value.
	LabelValueMaxLength = 63
)

var (
	dns1123LabelRe     = regexp.MustCompile("^" + dns1123LabelFmt + "$")
	dns1123SubdomainRe = regexp.MustCompile("^" + dns1123SubdomainFmt + "$")
	dns1035LabelRe     = regexp.MustCompile("^" + dns1035LabelFmt + "$")
	qualifiedNameRe    = regexp.MustCompile("^" + qualifiedNameFmt + "$")
	labelValueRe       = regexp.MustCompile("^" + labelValueFmt + "$")
)

// IsDNS1123Label returns what is wrong with value as an RFC 1123 label
// (a namespace or pod name); none when it is one.
func IsDNS1123Label(value string) []string {
	var errs []string
	if len(value) > DNS1123LabelMaxLength {
		errs = append(errs, maxLenError(DNS1123LabelMaxLength))
	}
	if !dns1123LabelRe.MatchString(value) {
		errs = append(errs, regexError("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
			dns1123LabelFmt, "my-name", "123-abc"))
	}
	return errs
}

// IsDNS1123Subdomain returns what is wrong with value as an RFC 1123
// subdomain; none when it is one.
func IsDNS1123Subdomain(value string) []string {
	var errs []string
	if len(value) > DNS1123SubdomainMaxLength {
		errs = append(errs, maxLenError(DNS1123SubdomainMaxLength))
	}
	if !dns1123SubdomainRe.MatchString(value) {
		errs = append(errs, regexError("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
			dns1123SubdomainFmt, "example.com"))
	}
	return errs
}

// IsDNS1035Label returns what is wrong with value as an RFC 1035 label (a
// Service name); none when it is one.
func IsDNS1035Label(value string) []string {
	var errs []string
	if len(value) > DNS1035LabelMaxLength {
		errs = append(errs, maxLenError(DNS1035LabelMaxLength))
	}
	if !dns1035LabelRe.MatchString(value) {
		errs = append(errs, regexError("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
			dns1035LabelFmt, "my-name", "abc-123"))
	}
	return errs
}

// IsQualifiedName returns what is wrong with value as a qualified name
// (a label key: an optional DNS subdomain prefix and a name).
func IsQualifiedName(value string) []string {
	var errs []string
	parts := strings.Split(value, "/")
	var name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		var prefix string
		prefix, name = parts[0], parts[1]
		if len(prefix) == 0 {
			errs = append(errs, "prefix part must be non-empty")
		} else if msgs := IsDNS1123Subdomain(prefix); len(msgs) != 0 {
			for _, m := range msgs {
				errs = append(errs, "prefix part "+m)
			}
		}
	default:
		return append(errs, "a qualified name "+regexError("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
			qualifiedNameFmt, "MyName", "my.name", "123-abc")+" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
	}
	if len(name) == 0 {
		errs = append(errs, "name part must be non-empty")
	} else if len(name) > qualifiedNameMaxLength {
		errs = append(errs, "name part "+maxLenError(qualifiedNameMaxLength))
	}
	if !qualifiedNameRe.MatchString(name) {
		errs = append(errs, "name part "+regexError("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
			qualifiedNameFmt, "MyName", "my.name", "123-abc"))
	}
	return errs
}

// IsValidLabelValue returns what is wrong with value as a label value.
func IsValidLabelValue(value string) []string {
	var errs []string
	if len(value) > LabelValueMaxLength {
		errs = append(errs, maxLenError(LabelValueMaxLength))
	}
	if !labelValueRe.MatchString(value) {
		errs = append(errs, regexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
			labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return errs
}

func maxLenError(n int) string { return fmt.Sprintf("must be no more than %d characters", n) }

func regexError(msg, re string, examples ...string) string {
	if len(examples) == 0 {
		return msg + " (regex used for validation is '" + re + "')"
	}
	msg += " (e.g. "
	for i := range examples {
		if i > 0 {
			msg += " or "
		}
		msg += "'" + examples[i] + "', "
	}
	return msg + "regex used for validation is '" + re + "')"
}
