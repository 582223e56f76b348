package oauth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A client that authenticates with private_key_jwt (RFC 7523 §2.2) signs a
// short JWT for each token request: it names the client as issuer and
// subject and the authorization server as audience (docs/rfc/0007-oauth.md,
// "Machine clients").

// AssertionType is the client_assertion_type of a JWT client assertion.
const AssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// LooksLikeJWT reports whether s has a compact JWT's shape: three
// dot-separated parts, no white space. Whether it verifies is its
// audience's to say.
func LooksLikeJWT(s string) bool {
	return strings.Count(s, ".") == 2 && !strings.ContainsAny(s, " \t\r\n")
}

// assertionLifetime is how long an assertion is good for.
const assertionLifetime = 5 * time.Minute

// Key is a client's private key and the JWS algorithm it signs with.
type Key struct {
	Signer crypto.Signer
	Alg    string // ES256, ES384, ES512, RS256 or EdDSA
}

// ParseKey reads a PEM private key: PKCS #8 ("PRIVATE KEY"), SEC 1 ("EC
// PRIVATE KEY") or PKCS #1 ("RSA PRIVATE KEY"). The algorithm follows from
// the key: ES256/ES384/ES512 for P-256/P-384/P-521, RS256 for RSA (2048
// bits or more), EdDSA for Ed25519. A key whose line breaks were written
// as the two characters \n (as a CI secret or a .env file often holds
// one) is read as if they were line breaks.
func ParseKey(data []byte) (*Key, error) {
	if !bytes.Contains(data, []byte("\n")) && bytes.Contains(data, []byte(`\n`)) {
		data = bytes.ReplaceAll(data, []byte(`\n`), []byte("\n"))
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block (-----BEGIN PRIVATE KEY----- …) in it")
	}
	var k any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("a PEM block of type %q is not a private key (PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY)", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("the %s block: %w", block.Type, err)
	}
	switch k := k.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return &Key{Signer: k, Alg: "ES256"}, nil
		case elliptic.P384():
			return &Key{Signer: k, Alg: "ES384"}, nil
		case elliptic.P521():
			return &Key{Signer: k, Alg: "ES512"}, nil
		}
		return nil, fmt.Errorf("an EC key on %s: only P-256, P-384 and P-521 sign JWTs", k.Curve.Params().Name)
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("an RSA key of %d bits: at least 2048 are needed", k.N.BitLen())
		}
		return &Key{Signer: k, Alg: "RS256"}, nil
	case ed25519.PrivateKey:
		return &Key{Signer: k, Alg: "EdDSA"}, nil
	}
	return nil, fmt.Errorf("a private key of type %T cannot sign JWTs", k)
}

// assertion is a signed client assertion of clientID for audience.
func (k *Key) assertion(clientID, audience string, now time.Time) (string, error) {
	header, _ := json.Marshal(map[string]string{"alg": k.Alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID,
		"sub": clientID,
		"aud": audience,
		"iat": now.Unix(),
		"exp": now.Add(assertionLifetime).Unix(),
		"jti": rand.Text(),
	})
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sig, err := k.sign([]byte(input))
	if err != nil {
		return "", fmt.Errorf("signing the client assertion (%s): %w", k.Alg, err)
	}
	return input + "." + enc.EncodeToString(sig), nil
}

// sign is the JWS signature of input (RFC 7518 §3: ECDSA as the fixed-size
// r‖s, not ASN.1).
func (k *Key) sign(input []byte) ([]byte, error) {
	switch s := k.Signer.(type) {
	case ed25519.PrivateKey:
		return ed25519.Sign(s, input), nil
	case *rsa.PrivateKey:
		d := sha256.Sum256(input)
		return rsa.SignPKCS1v15(nil, s, crypto.SHA256, d[:])
	case *ecdsa.PrivateKey:
		var digest []byte
		switch k.Alg {
		case "ES256":
			d := sha256.Sum256(input)
			digest = d[:]
		case "ES384":
			d := sha512.Sum384(input)
			digest = d[:]
		default:
			d := sha512.Sum512(input)
			digest = d[:]
		}
		r, sv, err := ecdsa.Sign(rand.Reader, s, digest)
		if err != nil {
			return nil, err
		}
		size := (s.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		sv.FillBytes(out[size:])
		return out, nil
	}
	return nil, fmt.Errorf("a %T cannot sign", k.Signer)
}
