package oauthbearer

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// jwt is a compact JWS split and decoded, its signature unchecked.
type jwt struct {
	header    map[string]any
	claims    map[string]any
	signed    string // header.payload, what the signature covers
	signature []byte
}

var b64 = base64.RawURLEncoding

func parseJWT(token string) (jwt, error) {
	var j jwt
	if len(token) > maxTokenBytes {
		return j, errors.New("token too long")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return j, fmt.Errorf("a JWS has 3 parts, this token %d", len(parts))
	}
	j.signed = parts[0] + "." + parts[1]
	var err error
	if j.header, err = decodeJSONPart(parts[0]); err != nil {
		return j, fmt.Errorf("header: %w", err)
	}
	if j.claims, err = decodeJSONPart(parts[1]); err != nil {
		return j, fmt.Errorf("claims: %w", err)
	}
	if j.signature, err = b64.DecodeString(strings.TrimRight(parts[2], "=")); err != nil {
		return j, fmt.Errorf("signature: %w", err)
	}
	return j, nil
}

func decodeJSONPart(s string) (map[string]any, error) {
	raw, err := b64.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// numericDate reads a NumericDate claim (seconds, possibly fractional).
func (j jwt) numericDate(name string) (time.Time, bool, error) {
	v, ok := j.claims[name]
	if !ok {
		return time.Time{}, false, nil
	}
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e15 {
		return time.Time{}, false, fmt.Errorf("claim %s is not a number of seconds", name)
	}
	return time.UnixMilli(int64(f * 1000)), true, nil
}

func (j jwt) stringClaim(name string) (string, bool) {
	s, ok := j.claims[name].(string)
	return s, ok
}

// stringList reads a claim that is a string or an array of strings; a
// string scope is space-separated (RFC 8693).
func (j jwt) stringList(name string, split bool) ([]string, error) {
	switch v := j.claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		if split {
			return strings.Fields(v), nil
		}
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("claim %s holds a non-string", name)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("claim %s is neither a string nor a list", name)
}

// checkTimes applies Kafka's rules: exp present and not past, iat (when
// present) not in the future and not after exp, each within skew.
func (j jwt) checkTimes(now time.Time, skew time.Duration) (exp, iat time.Time, err error) {
	exp, ok, err := j.numericDate("exp")
	if err != nil {
		return exp, iat, err
	}
	if !ok {
		return exp, iat, errors.New("the token has no exp claim")
	}
	if now.Add(-skew).After(exp) {
		return exp, iat, fmt.Errorf("the token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	iat, ok, err = j.numericDate("iat")
	if err != nil {
		return exp, iat, err
	}
	if ok {
		if iat.After(now.Add(skew)) {
			return exp, iat, fmt.Errorf("the token was issued in the future (%s)", iat.UTC().Format(time.RFC3339))
		}
		if iat.After(exp) {
			return exp, iat, errors.New("the token was issued after it expired")
		}
	}
	return exp, iat, nil
}

// Unsecured is Kafka's OAuthBearerUnsecuredValidatorCallbackHandler,
// configured from the JAAS options unsecuredValidatorPrincipalClaimName,
// unsecuredValidatorScopeClaimName, unsecuredValidatorRequiredScope and
// unsecuredValidatorAllowableClockSkewMs. It trusts unsigned tokens: for
// tests and development only.
type Unsecured struct {
	PrincipalClaim string // default "sub"
	ScopeClaim     string // default "scope"
	RequiredScope  []string
	Skew           time.Duration
}

// Validate implements Validator.
func (u Unsecured) Validate(token string, now time.Time) (Token, error) {
	j, err := parseJWT(token)
	if err != nil {
		return Token{}, err
	}
	if alg, _ := j.header["alg"].(string); alg != "none" {
		return Token{}, fmt.Errorf("an unsecured token has alg none, this one %q", alg)
	}
	if len(j.signature) != 0 {
		return Token{}, errors.New("an unsecured token has no signature")
	}
	return u.claims(j, now)
}

func (u Unsecured) claims(j jwt, now time.Time) (Token, error) {
	pc, sc := u.PrincipalClaim, u.ScopeClaim
	if pc == "" {
		pc = "sub"
	}
	if sc == "" {
		sc = "scope"
	}
	var t Token
	var ok bool
	if t.Principal, ok = j.stringClaim(pc); !ok || strings.TrimSpace(t.Principal) == "" {
		return Token{}, fmt.Errorf("the token has no %s claim naming its principal", pc)
	}
	var err error
	if t.Expiry, t.IssuedAt, err = j.checkTimes(now, u.Skew); err != nil {
		return Token{}, err
	}
	if t.Scope, err = j.stringList(sc, true); err != nil {
		return Token{}, err
	}
	for _, s := range u.RequiredScope {
		if !slices.Contains(t.Scope, s) {
			return Token{}, fmt.Errorf("the token lacks the required scope %s", s)
		}
	}
	return t, nil
}

// UnsecuredToken makes the token Kafka's unsecured login module makes
// (unsecuredLoginStringClaim_sub and unsecuredLoginLifetimeSeconds), for
// weir's clients and inter-broker connections on test setups.
func UnsecuredToken(principal string, lifetime time.Duration, now time.Time) string {
	header, _ := json.Marshal(map[string]string{"alg": "none"})
	claims, _ := json.Marshal(map[string]any{
		"sub": principal,
		"iat": float64(now.UnixMilli()) / 1000,
		"exp": float64(now.Add(lifetime).UnixMilli()) / 1000,
	})
	return b64.EncodeToString(header) + "." + b64.EncodeToString(claims) + "."
}
