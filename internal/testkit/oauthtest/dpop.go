package oauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// The authorization server's side of DPoP (RFC 9449), written apart from
// the client's (internal/oauth): the proof is checked field by field as
// RFC 9449 §4.3 lists, and the key's thumbprint is RFC 7638's.

// errNonce is a proof without the server's nonce.
var errNonce = errors.New("use_dpop_nonce")

// tokenProof checks the DPoP proof of a token request (as.mu held): ok is
// false when the request was answered (refused). jkt is the proof key's
// thumbprint, "" when there was no proof.
func (as *AS) tokenProof(w http.ResponseWriter, r *http.Request) (jkt string, ok bool) {
	proofs := r.Header.Values("DPoP")
	if len(proofs) == 0 || !as.DPoP {
		return "", true
	}
	as.counts["dpop:token-proof"]++
	jkt, err := as.verifyProof(proofs, http.MethodPost, as.URL+"/token", "")
	switch {
	case errors.Is(err, errNonce):
		as.counts["dpop:nonce-challenge"]++
		w.Header().Set("DPoP-Nonce", as.Nonce)
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "use_dpop_nonce", "error_description": "a DPoP nonce is required"})
		return "", false
	case err != nil:
		as.counts["dpop:refused"]++
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_dpop_proof", "error_description": err.Error()})
		return "", false
	}
	return jkt, true
}

// bind binds tokens to jkt (as.mu held) and returns their token_type.
func (as *AS) bind(jkt string, tokens ...string) string {
	if jkt == "" {
		return "Bearer"
	}
	for _, t := range tokens {
		as.bound[t] = jkt
	}
	return "DPoP"
}

// verifyProof checks one DPoP proof for method at uri, bound to
// accessToken when not "" (as.mu held), and returns its key's thumbprint.
func (as *AS) verifyProof(proofs []string, method, uri, accessToken string) (string, error) {
	if len(proofs) != 1 {
		return "", fmt.Errorf("%d DPoP headers", len(proofs))
	}
	parts := strings.Split(proofs[0], ".")
	if len(parts) != 3 {
		return "", errors.New("the proof is not a compact JWS")
	}
	enc := base64.RawURLEncoding
	var header struct {
		Typ, Alg string
		JWK      struct{ Kty, Crv, X, Y, D string }
	}
	var claims struct {
		Jti, Htm, Htu, Ath, Nonce string
		Iat                       int64
	}
	hb, err1 := enc.DecodeString(parts[0])
	cb, err2 := enc.DecodeString(parts[1])
	sig, err3 := enc.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3, json.Unmarshal(hb, &header), json.Unmarshal(cb, &claims)); err != nil {
		return "", fmt.Errorf("the proof does not decode: %w", err)
	}
	x, err1 := enc.DecodeString(header.JWK.X)
	y, err2 := enc.DecodeString(header.JWK.Y)
	switch {
	case header.Typ != "dpop+jwt":
		return "", fmt.Errorf("typ %q", header.Typ)
	case header.Alg != "ES256" || header.JWK.Kty != "EC" || header.JWK.Crv != "P-256" || err1 != nil || err2 != nil || len(sig) != 64:
		return "", errors.New("not an ES256 proof with a P-256 jwk")
	case header.JWK.D != "":
		return "", errors.New("the jwk holds the private key")
	}
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", errors.New("the proof's signature does not verify")
	}
	ath := ""
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		ath = enc.EncodeToString(sum[:])
	}
	switch {
	case claims.Jti == "" || as.jtis[claims.Jti]:
		return "", errors.New("the proof's jti is missing or was seen before")
	case claims.Htm != method:
		return "", fmt.Errorf("htm %q, want %q", claims.Htm, method)
	case claims.Htu != uri:
		return "", fmt.Errorf("htu %q, want %q", claims.Htu, uri)
	case time.Since(time.Unix(claims.Iat, 0)).Abs() > time.Minute:
		return "", errors.New("the proof's iat is not now")
	case claims.Ath != ath:
		return "", errors.New("the proof's ath is not the token's hash")
	}
	as.jtis[claims.Jti] = true
	if as.Nonce != "" && claims.Nonce != as.Nonce {
		return "", errNonce
	}
	thumb, _ := json.Marshal(map[string]string{"crv": "P-256", "kty": "EC", "x": header.JWK.X, "y": header.JWK.Y}) // RFC 7638: the members in order
	sum := sha256.Sum256(thumb)
	return enc.EncodeToString(sum[:]), nil
}
