package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-go/harness/internal/safe"
)

// DPoP (RFC 9449; the MCP extension io.modelcontextprotocol/auth/dpop,
// SEP-1932; docs/rfc/0007-oauth.md, "DPoP") binds a login's tokens to a
// key only this login holds, so that a token that leaks is of no use
// without it:
//
//  1. A login is DPoP-bound when the authorization server signs ES256
//     proofs (dpop_signing_alg_values_supported) and either the entry says
//     so (oauth.dpop: true) or the server does: its challenge uses the
//     DPoP scheme, or its resource metadata lists DPoP algorithms or
//     requires bound tokens. oauth.dpop: false never binds.
//  2. Such a login gets a P-256 key of its own, made when it starts and
//     kept in its record in the store (a credential, like its refresh
//     token), so that a refresh and the next run use the same key.
//  3. Every token request of the login (the code exchange, a refresh, a
//     machine grant) carries a proof for POST at the token endpoint; every
//     request to the server, a proof for its method and URL with the
//     token's hash (ath), and the token under the DPoP scheme. Each proof
//     is fresh (its own jti, iat now).
//  4. A server that answers use_dpop_nonce (a 400 of the token endpoint,
//     a 401 challenge of the resource) with a DPoP-Nonce is asked again,
//     once, with the nonce in the proof. The last nonce of each origin is
//     kept and sent in the next proofs, as is any nonce a response brings.
//  5. A token the authorization server issued as Bearer in spite of the
//     proof is sent as Bearer: the token type decides the scheme.

// The values of Settings.DPoP.
const (
	DPoPAuto = "" // when the server asks for it and the authorization server can
	DPoPOn   = "on"
	DPoPOff  = "off"
)

// dpopAlg is the one proof algorithm the client signs with.
const dpopAlg = "ES256"

// wantDPoP decides point 1 for a login being made.
func (f *Flow) wantDPoP(d *Discovery, ch *Challenge) (bool, error) {
	mode := f.Settings.DPoP
	if mode == DPoPOff {
		return false, nil
	}
	as := d.AS
	canSign := slices.Contains(as.DPoPSigningAlgs, dpopAlg)
	required := d.PRM != nil && d.PRM.DPoPBoundRequired
	asked := required || ch.dpop() || (d.PRM != nil && len(d.PRM.DPoPSigningAlgs) > 0)
	switch {
	case canSign && (asked || mode == DPoPOn):
		return true, nil
	case mode == DPoPOn || required:
		why := "oauth.dpop is true"
		if mode != DPoPOn {
			why = "the server requires DPoP-bound tokens (dpop_bound_access_tokens_required)"
		}
		algs := strings.Join(as.DPoPSigningAlgs, ", ")
		if algs == "" {
			algs = "none"
		}
		return false, fmt.Errorf("%s, and the authorization server %s takes no %s DPoP proofs (its dpop_signing_alg_values_supported: %s)", why, safe.Line(as.Issuer), dpopAlg, safe.Line(algs))
	}
	return false, nil
}

// newDPoPKey makes a login's key, in the form its record keeps it
// (base64 of PKCS #8).
func newDPoPKey() (string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("making the DPoP key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", fmt.Errorf("making the DPoP key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(der), nil
}

// dpopKey is a login's key, parsed, with the public JWK its proofs carry.
type dpopKey struct {
	priv *ecdsa.PrivateKey
	jwk  map[string]string
}

// parseDPoPKey reads a record's key.
func parseDPoPKey(s string) (*dpopKey, error) {
	der, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("the login's DPoP key: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("the login's DPoP key: %w", err)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("the login's DPoP key is not a P-256 key")
	}
	pub, err := ec.PublicKey.ECDH()
	if err != nil {
		return nil, fmt.Errorf("the login's DPoP key: %w", err)
	}
	b := pub.Bytes() // 0x04 ‖ x ‖ y
	enc := base64.RawURLEncoding
	return &dpopKey{priv: ec, jwk: map[string]string{"kty": "EC", "crv": "P-256", "x": enc.EncodeToString(b[1:33]), "y": enc.EncodeToString(b[33:])}}, nil
}

// proof is a DPoP proof (RFC 9449 §4.2) for method at uri (its query and
// fragment left out), bound to accessToken when not "" (ath), with the
// server's nonce when not "".
func (k *dpopKey) proof(method, uri, accessToken, nonce string, now time.Time) (string, error) {
	header, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": dpopAlg, "jwk": k.jwk})
	claims := map[string]any{"jti": rand.Text(), "htm": method, "htu": htu(uri), "iat": now.Unix()}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	body, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(body)
	sig, err := (&Key{Signer: k.priv, Alg: dpopAlg}).sign([]byte(input))
	if err != nil {
		return "", fmt.Errorf("signing the DPoP proof: %w", err)
	}
	return input + "." + enc.EncodeToString(sig), nil
}

// htu is a proof's htu: the URI without its query and fragment.
func htu(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	u.RawQuery, u.Fragment, u.RawFragment, u.ForceQuery = "", "", "", false
	return u.String()
}

// nonces are the last DPoP-Nonce of each origin (point 4).
type nonces struct {
	mu sync.Mutex
	m  map[string]string
}

func origin(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

func (n *nonces) get(uri string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[origin(uri)]
}

// keep records the nonce a response of uri brings, if any; it reports
// whether there was one.
func (n *nonces) keep(uri string, h http.Header) bool {
	v := h.Get("DPoP-Nonce")
	if v == "" {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]string{}
	}
	n.m[origin(uri)] = v
	return true
}

// DPoPBound reports whether r's access token is bound to the login's key
// (it goes under the DPoP scheme).
func (r *Record) DPoPBound() bool {
	return r != nil && r.DPoPKey != "" && strings.EqualFold(r.TokenType, "DPoP")
}
