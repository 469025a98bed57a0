package oauthbearer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"net/url"
	"os"
	"slices"
	"time"
)

// JWKS validates signed tokens against a JWK set: Kafka's
// OAuthBearerValidatorCallbackHandler with sasl.oauthbearer.* settings.
type JWKS struct {
	keys []jwk
	// Audience, when not empty, must share a value with the token's aud.
	Audience []string
	// Issuer, when not empty, must equal the token's iss.
	Issuer         string
	PrincipalClaim string // sasl.oauthbearer.sub.claim.name, default "sub"
	ScopeClaim     string // sasl.oauthbearer.scope.claim.name, default "scope"
	Skew           time.Duration
}

type jwk struct {
	kid string
	alg string // "" when the key does not name one
	pub crypto.PublicKey
}

// maxJWKSBytes bounds a JWK set file.
const maxJWKSBytes = 1 << 20

// LoadJWKSFile reads the JWK set sasl.oauthbearer.jwks.endpoint.url names:
// a file: URL or a plain path. http(s) URLs are refused: weir does not
// fetch keys over the network.
func LoadJWKSFile(location string) (*JWKS, error) {
	path := location
	if u, err := url.Parse(location); err == nil && u.Scheme != "" {
		if u.Scheme != "file" {
			return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: only file: URLs are read (weir fetches no keys over the network)", location)
		}
		path = u.Path
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
	}
	if st.Size() > maxJWKSBytes {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: larger than %d bytes", path, maxJWKSBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
	}
	return ParseJWKS(data)
}

// ParseJWKS reads a JWK set (RFC 7517): RSA and EC (P-256, P-384, P-521)
// signing keys; other keys are skipped.
func ParseJWKS(data []byte) (*JWKS, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Alg string `json:"alg"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("JWK set: %w", err)
	}
	j := &JWKS{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var pub crypto.PublicKey
		switch k.Kty {
		case "RSA":
			n, err1 := b64.DecodeString(k.N)
			e, err2 := b64.DecodeString(k.E)
			if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
				return nil, fmt.Errorf("JWK set: RSA key %q: bad n or e", k.Kid)
			}
			pub = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		case "EC":
			var curve elliptic.Curve
			switch k.Crv {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			case "P-521":
				curve = elliptic.P521()
			default:
				continue
			}
			x, err1 := b64.DecodeString(k.X)
			y, err2 := b64.DecodeString(k.Y)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("JWK set: EC key %q: bad x or y", k.Kid)
			}
			size := (curve.Params().BitSize + 7) / 8
			if len(x) != size || len(y) != size {
				return nil, fmt.Errorf("JWK set: EC key %q: coordinates are not %d bytes", k.Kid, size)
			}
			raw := append(append([]byte{4}, x...), y...)
			key, err := ecdsa.ParseUncompressedPublicKey(curve, raw)
			if err != nil {
				return nil, fmt.Errorf("JWK set: EC key %q: %w", k.Kid, err)
			}
			pub = key
		default:
			continue
		}
		j.keys = append(j.keys, jwk{kid: k.Kid, alg: k.Alg, pub: pub})
	}
	if len(j.keys) == 0 {
		return nil, errors.New("JWK set: no RSA or EC signing key")
	}
	return j, nil
}

// Validate implements Validator.
func (v *JWKS) Validate(token string, now time.Time) (Token, error) {
	j, err := parseJWT(token)
	if err != nil {
		return Token{}, err
	}
	alg, _ := j.header["alg"].(string)
	kid, _ := j.header["kid"].(string)
	var lastErr error = fmt.Errorf("no key of the JWK set matches kid %q", kid)
	for _, k := range v.keys {
		if (kid != "" && k.kid != kid) || (k.alg != "" && k.alg != alg) {
			continue
		}
		if lastErr = verify(alg, k.pub, []byte(j.signed), j.signature); lastErr == nil {
			return v.claims(j, now)
		}
	}
	return Token{}, lastErr
}

func (v *JWKS) claims(j jwt, now time.Time) (Token, error) {
	t, err := Unsecured{PrincipalClaim: v.PrincipalClaim, ScopeClaim: v.ScopeClaim, Skew: v.Skew}.claims(j, now)
	if err != nil {
		return Token{}, err
	}
	if v.Issuer != "" {
		if iss, _ := j.stringClaim("iss"); iss != v.Issuer {
			return Token{}, fmt.Errorf("the token's issuer %q is not %q", iss, v.Issuer)
		}
	}
	if len(v.Audience) > 0 {
		aud, err := j.stringList("aud", false)
		if err != nil {
			return Token{}, err
		}
		if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.Audience, a) }) {
			return Token{}, fmt.Errorf("the token's audience %v is not among %v", aud, v.Audience)
		}
	}
	return t, nil
}

// verify checks a JWS signature (RFC 7518).
func verify(alg string, pub crypto.PublicKey, signed, sig []byte) error {
	var h func() hash.Hash
	var ch crypto.Hash
	switch alg[len(alg)-min(3, len(alg)):] {
	case "256":
		h, ch = sha256.New, crypto.SHA256
	case "384":
		h, ch = sha512.New384, crypto.SHA384
	case "512":
		h, ch = sha512.New, crypto.SHA512
	default:
		return fmt.Errorf("unsupported JWS algorithm %q", alg)
	}
	d := h()
	d.Write(signed)
	digest := d.Sum(nil)
	switch {
	case len(alg) == 5 && alg[:2] == "RS":
		k, ok := pub.(*rsa.PublicKey)
		if !ok {
			return errors.New("an RS algorithm needs an RSA key")
		}
		return rsa.VerifyPKCS1v15(k, ch, digest, sig)
	case len(alg) == 5 && alg[:2] == "PS":
		k, ok := pub.(*rsa.PublicKey)
		if !ok {
			return errors.New("a PS algorithm needs an RSA key")
		}
		return rsa.VerifyPSS(k, ch, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case len(alg) == 5 && alg[:2] == "ES":
		k, ok := pub.(*ecdsa.PublicKey)
		if !ok {
			return errors.New("an ES algorithm needs an EC key")
		}
		bits := k.Curve.Params().BitSize
		if want := map[string]int{"ES256": 256, "ES384": 384, "ES512": 521}[alg]; bits != want {
			return fmt.Errorf("%s needs a P-%d key", alg, want)
		}
		size := (bits + 7) / 8
		if len(sig) != 2*size {
			return errors.New("ECDSA signature of the wrong length")
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		if !ecdsa.Verify(k, digest, r, s) {
			return errors.New("ECDSA signature does not verify")
		}
		return nil
	}
	return fmt.Errorf("unsupported JWS algorithm %q", alg)
}
