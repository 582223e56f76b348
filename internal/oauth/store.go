package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/harness-go/harness/host/conffile"
	"github.com/harness-go/harness/host/secret"
)

// The store (docs/rfc/0007-oauth.md, "The token store"): one JSON file per
// (canonical server URL, issuer) in one folder, 0600 files in a 0700
// folder, each written by rename, with a lock file beside it that is held
// while its refresh token is spent. Every value read from it joins the
// secret set of whoever reads it. A file that cannot be read or decoded
// reads as no login, with a note: never a crash.

// Record is what one file holds: the login to one server at one
// authorization server.
type Record struct {
	// Server is the canonical URL of the MCP server; Resource the resource
	// indicator the tokens were issued for (RFC 8707).
	Server   string `json:"server"`
	Resource string `json:"resource"`
	// Issuer is the authorization server's issuer identifier, as its
	// metadata named it.
	Issuer string `json:"issuer"`
	// Endpoints of the authorization server.
	AuthorizationEndpoint string   `json:"authorizationEndpoint,omitempty"`
	TokenEndpoint         string   `json:"tokenEndpoint"`
	RevocationEndpoint    string   `json:"revocationEndpoint,omitempty"`
	RevocationAuthMethods []string `json:"revocationAuthMethods,omitempty"`

	// Client is the registration at the issuer.
	Client Client `json:"client"`

	// The tokens, and the scopes granted (or asked for, when the token
	// response named none).
	AccessToken  string `json:"accessToken,omitempty"`
	RefreshToken string `json:"refreshToken,omitempty"`
	TokenType    string `json:"tokenType,omitempty"`
	// DPoPKey is the login's own DPoP key (base64 of PKCS #8), when its
	// tokens are bound to one (docs/rfc/0007-oauth.md, "DPoP").
	DPoPKey string `json:"dpopKey,omitempty"`
	// IDToken is the person's ID token, in the record of a login at an
	// IdP (idplogin.go).
	IDToken string    `json:"idToken,omitempty"`
	Expiry  time.Time `json:"expiry,omitzero"`
	Scopes  []string  `json:"scopes,omitempty"`
	// Wanted are scopes the server asked for in a step-up (a 403
	// insufficient_scope) that the login does not have: the next login
	// asks for them too.
	Wanted []string `json:"wanted,omitempty"`

	// LastRefreshError is why the last refresh failed, until one succeeds.
	LastRefreshError string    `json:"lastRefreshError,omitempty"`
	Updated          time.Time `json:"updated"`
}

// Client is a client's registration at one authorization server.
type Client struct {
	ID     string `json:"id"`
	Secret string `json:"secret,omitempty"`
	// AuthMethod is how the client authenticates at the token endpoint:
	// client_secret_basic, client_secret_post or none.
	AuthMethod string `json:"authMethod"`
	// How it came to be: preregistered, metadata-document or dynamic.
	Registration string `json:"registration"`
	// RedirectURIs registered (dynamic registration only).
	RedirectURIs []string `json:"redirectUris,omitempty"`
}

// LoggedIn reports whether the record holds a token to use or refresh.
func (r *Record) LoggedIn() bool { return r != nil && (r.AccessToken != "" || r.RefreshToken != "") }

// secrets are the values of the record that are secrets.
func (r *Record) secrets() []string {
	return []string{r.AccessToken, r.RefreshToken, r.Client.Secret, r.DPoPKey, r.IDToken}
}

// Store is the folder of token files.
type Store struct {
	Dir string
	// Secrets receives every secret value read or written (nil: none).
	Secrets *secret.Set
}

// DefaultDir is the store's folder: $XDG_STATE_HOME/harness/oauth, else
// ~/.local/state/harness/oauth.
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "harness", "oauth"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("the OAuth token store: no home folder and no XDG_STATE_HOME: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "harness", "oauth"), nil
}

// Canonical is the canonical form of a server URL (the MCP specification's
// canonical server URI): lower-case scheme and host, no default port, no
// fragment, no trailing slash on a path.
func Canonical(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	if (u.Scheme == "https" && u.Port() == "443") || (u.Scheme == "http" && u.Port() == "80") {
		u.Host = u.Hostname()
	}
	u.Fragment, u.RawFragment = "", ""
	u.User = nil
	if u.Path != "/" {
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawPath = ""
	} else if u.RawQuery == "" {
		u.Path = ""
	}
	return u.String()
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

// Path is the file of (server, issuer).
func (s *Store) Path(server, issuer string) string {
	return filepath.Join(s.Dir, hash(Canonical(server))+"-"+hash(issuer)+".json")
}

// ReadNote is a store file that could not be read: it counts as no login.
type ReadNote struct {
	Path string
	Err  error
}

func (n *ReadNote) Error() string {
	return fmt.Sprintf("the token file %s cannot be used (it counts as logged out): %v", n.Path, n.Err)
}

// Load returns the newest record for server (at any issuer), or nil when
// there is none. A file that cannot be read or decoded is skipped, and
// reported as a *ReadNote beside what else was found.
func (s *Store) Load(server string) (*Record, error) {
	recs, err := s.LoadAll(server)
	if len(recs) == 0 {
		return nil, err
	}
	return recs[0], err
}

// LoadAll returns every record for server, newest first.
func (s *Store) LoadAll(server string) ([]*Record, error) {
	canon := Canonical(server)
	paths, _ := filepath.Glob(filepath.Join(s.Dir, hash(canon)+"-*.json"))
	var out []*Record
	var notes []error
	for _, p := range paths {
		r, err := s.read(p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				notes = append(notes, &ReadNote{Path: p, Err: err})
			}
			continue
		}
		if Canonical(r.Server) != canon {
			continue // a hash collision, or a file copied by hand
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out, errors.Join(notes...)
}

// read reads one file through the bounded, non-blocking reader of
// configuration files.
func (s *Store) read(path string) (*Record, error) {
	b, err := conffile.Read(path)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("not a token file: %v", err)
	}
	if r.Server == "" || r.Issuer == "" {
		return nil, errors.New("not a token file: no server or issuer")
	}
	s.Secrets.AddCredential(r.secrets()...)
	return &r, nil
}

// readAt reads the record of (server, issuer), nil when there is none.
func (s *Store) readAt(server, issuer string) (*Record, error) {
	r, err := s.read(s.Path(server, issuer))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return r, err
}

// Save writes r to its file: a temporary file in the folder (0600), then a
// rename over the old one, so a reader sees the old record or the new one.
func (s *Store) Save(r *Record) error {
	s.Secrets.AddCredential(r.secrets()...)
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("the OAuth token store: %w", err)
	}
	_ = os.Chmod(s.Dir, 0o700)
	r.Server = Canonical(r.Server)
	r.Updated = time.Now().UTC()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	path := s.Path(r.Server, r.Issuer)
	tmp, err := os.CreateTemp(s.Dir, ".tmp-*.json")
	if err != nil {
		return fmt.Errorf("the OAuth token store: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing there
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("the OAuth token store: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("the OAuth token store: writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("the OAuth token store: writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("the OAuth token store: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("the OAuth token store: %w", err)
	}
	return nil
}

// Delete removes every file of server (and their lock files); it returns
// the records it removed.
func (s *Store) Delete(server string) ([]*Record, error) {
	recs, _ := s.LoadAll(server)
	canon := Canonical(server)
	paths, _ := filepath.Glob(filepath.Join(s.Dir, hash(canon)+"-*"))
	var errs []error
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return recs, errors.Join(errs...)
}

// Stamp is what tells a change of the store for one server: the folder's
// modification time (a file written by rename, or removed, changes it) and
// the current file's time and size (a file rewritten in place). Two stats,
// at every request of the server: no listing of the folder. The folder's
// time tells a new login at an IdP too (idplogin.go), which any entry
// through that IdP may wait for.
type Stamp struct {
	dir, file time.Time
	size      int64
}
