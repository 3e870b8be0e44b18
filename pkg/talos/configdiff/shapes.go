package configdiff

import (
	"encoding/base64"
	"regexp"
	"strings"
)

// shapes recognises secret-shaped text. The patterns are compiled per
// redactor (no package state).
type shapes struct {
	// assignment is NAME=value or --flag=value at the start of the text or
	// after whitespace or a URL/list delimiter; the value may be quoted.
	assignment *regexp.Regexp
	// lineAssignment is a "name: value" or "NAME=value" line of multi-line text.
	lineAssignment *regexp.Regexp
	// urlPassword is scheme://user:password@.
	urlPassword *regexp.Regexp
	// paddedTail is base64 ending in = or == padding (group 1: the base64).
	paddedTail *regexp.Regexp
	// wholeBase64 is a string that is nothing but base64 (std or URL alphabet).
	wholeBase64 *regexp.Regexp
	// wholeHex is 32 or more hex digits and nothing else.
	wholeHex *regexp.Regexp
	// run is a long run of token characters.
	run *regexp.Regexp
	// pemBlock is a whole PEM block (group 1: its label).
	pemBlock *regexp.Regexp
	// authScheme is an HTTP credential: Basic/Bearer followed by a token.
	authScheme *regexp.Regexp
}

func newShapes() *shapes {
	return &shapes{
		assignment:     regexp.MustCompile(`(^|[\s?&;,])(-{0,2}[A-Za-z_][A-Za-z0-9_.\-]*)=("[^"]*"|'[^']*'|[^\s&;,]*)`),
		lineAssignment: regexp.MustCompile(`(?m)^[\s-]*["']?([A-Za-z_][A-Za-z0-9_.\-]*)["']?\s*[:=]\s*\S`),
		urlPassword:    regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^/\s@:]*:[^/\s@]+@`),
		paddedTail:     regexp.MustCompile(`([A-Za-z0-9+/]{8,}={1,2})(?:[^A-Za-z0-9+/=]|$)`),
		wholeBase64:    regexp.MustCompile(`^[A-Za-z0-9+/_\-]{20,}={0,2}$`),
		wholeHex:       regexp.MustCompile(`^[0-9a-fA-F]{32,}$`),
		run:            regexp.MustCompile(`[A-Za-z0-9+/_\-]{32,}`),
		pemBlock:       regexp.MustCompile(`(?s)-----BEGIN ([A-Z0-9 ]+)-----.*?-----END [A-Z0-9 ]+-----`),
		authScheme:     regexp.MustCompile(`(?i)\b(basic|bearer)\s+[A-Za-z0-9+/._~=\-]{8,}`),
	}
}

// assignments replaces the value of every credential-like or secret-shaped
// NAME=value / --flag=value in s with mark(value); empty values stay.
func (s *shapes) assignments(text string, mark func(string) string) string {
	matches := s.assignment.FindAllStringSubmatchIndex(text, -1)
	if matches == nil {
		return text
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		name, value := text[m[4]:m[5]], text[m[6]:m[7]]
		replacement := value
		switch {
		case value == "":
		case secretName(strings.TrimLeft(name, "-")) || s.secret(value):
			replacement = mark(value)
		default:
			// TS_EXTRA_ARGS=--authkey=...: the value may nest assignments
			replacement = s.assignments(value, mark)
		}
		if replacement == value {
			continue
		}
		b.WriteString(text[last:m[6]])
		b.WriteString(replacement)
		last = m[7]
	}
	b.WriteString(text[last:])
	return b.String()
}

// secret reports secret-shaped text.
func (s *shapes) secret(text string) bool {
	rest, private := s.stripPEM(text)
	return private || s.credential(rest) || s.token(rest) || s.credentialLines(rest)
}

// credential reports a URL with a password or an HTTP Basic/Bearer value.
func (s *shapes) credential(text string) bool {
	return s.urlPassword.MatchString(text) || s.authScheme.MatchString(text)
}

// token reports base64, hex or base36 blobs, padded base64 tails and long
// mixed-case runs.
func (s *shapes) token(text string) bool {
	compact := wholeToken(text)
	if s.wholeBase64.MatchString(compact) {
		if pem, ok := decodeBase64(compact); ok && strings.Contains(pem, "-----BEGIN") {
			_, private := s.stripPEM(pem)
			return private // a base64-encoded certificate stays
		}
		if strings.HasSuffix(compact, "=") || mixed(compact) {
			return true
		}
	}
	if s.wholeHex.MatchString(compact) || base36Token(compact) || s.paddedBase64(text) {
		return true
	}
	for _, r := range s.run.FindAllString(text, -1) {
		// a path is no token: /var/lib/ImageCache1234... has many segments
		if !strings.HasPrefix(r, "/") && strings.Count(r, "/") <= 3 && mixed(r) {
			return true
		}
	}
	return false
}

// credentialLines reports multi-line text with a "name: value" or
// "NAME=value" line whose name is credential-like.
func (s *shapes) credentialLines(text string) bool {
	if !strings.Contains(text, "\n") {
		return false
	}
	for _, m := range s.lineAssignment.FindAllStringSubmatch(text, -1) {
		if secretName(m[1]) {
			return true
		}
	}
	return false
}

// privateKey reports private key material in a certificate value: a PEM
// block other than a certificate or public key, raw or base64-encoded.
func (s *shapes) privateKey(text string) bool {
	if _, private := s.stripPEM(text); private {
		return true
	}
	if pem, ok := decodeBase64(wholeToken(text)); ok && strings.Contains(pem, "-----BEGIN") {
		_, private := s.stripPEM(pem)
		return private
	}
	return strings.Contains(text, "PRIVATE KEY")
}

// stripPEM removes the certificate, CRL, request and public-key PEM blocks
// from text. private reports any other block (a private key, an unknown
// label, a block cut short): those are secret.
func (s *shapes) stripPEM(text string) (rest string, private bool) {
	if !strings.Contains(text, "-----BEGIN") {
		return text, strings.Contains(text, "PRIVATE KEY")
	}
	rest = s.pemBlock.ReplaceAllStringFunc(text, func(block string) string {
		switch s.pemBlock.FindStringSubmatch(block)[1] {
		case "CERTIFICATE", "TRUSTED CERTIFICATE", "X509 CRL", "CERTIFICATE REQUEST", "PUBLIC KEY":
			return ""
		}
		private = true
		return ""
	})
	return rest, private || strings.Contains(rest, "-----BEGIN") || strings.Contains(rest, "PRIVATE KEY")
}

// decodeBase64 decodes std or URL base64, padded or not.
func decodeBase64(s string) (string, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return string(b), true
		}
	}
	return "", false
}

// mixed reports upper case, lower case and digits together: random tokens
// have all three, names, paths and image references rarely do.
func mixed(s string) bool {
	var upper, lower, digit bool
	for _, c := range s {
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	return upper && lower && digit
}

// base36Token reports 32 or more lower-case letters and digits with no
// separator and at least four digits: a random token, not a name.
func base36Token(s string) bool {
	if len(s) < 32 {
		return false
	}
	digits, letters := 0, 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z':
			letters++
		default:
			return false
		}
	}
	return digits >= 4 && letters > 0
}

// paddedBase64 reports a padded base64 tail: a run of base64 ending in = or
// ==, a multiple of four long, with lower case and upper case or digits.
// NAME= and HOSTNAME= (upper case, odd length) are assignments, not base64.
func (s *shapes) paddedBase64(text string) bool {
	for _, m := range s.paddedTail.FindAllStringSubmatch(text, -1) {
		run := m[1]
		body := strings.TrimRight(run, "=")
		if len(run)%4 == 0 && strings.ContainsAny(body, "abcdefghijklmnopqrstuvwxyz") &&
			strings.ContainsAny(body, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") {
			return true
		}
	}
	return false
}

// wholeToken returns text as one token when it is a single word, possibly
// wrapped over several lines (base64 often is); "" when it has words.
func wholeToken(text string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		line = strings.TrimSpace(line)
		if strings.ContainsAny(line, " \t") {
			return ""
		}
		b.WriteString(line)
	}
	return b.String()
}
