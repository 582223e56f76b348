package secret_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/harness-go/harness/host/secret"
)

func TestQualifies(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"":                 false,
		"short":            false,
		"1234567":          false,
		"12345678":         false, // a plain number
		"3.14159265":       false,
		"-100000000":       false,
		"true":             false,
		"FALSE":            false,
		"abcdefgh":         true,
		"  abcdefgh  ":     true, // trimmed
		"ghp_0123456789ab": true,
	} {
		if got := secret.Qualifies(v); got != want {
			t.Errorf("Qualifies(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	s := secret.New()
	s.Add("abcd1234", "abcd1234567", "short", "  padded-secret  ", "Bearer tok-xyz-0123", "Basic dXNlcjpwYXNz", `q"uo\te-1234`, "a b/c+d=e&f?g")
	s.Add("postgres://user:pw-0123456789@db:5432/x")
	s.Add("Bearer wJalrXUtnFEMI+K7MDENG/bPxRfiCY", "it's (a) *b!+c")
	s.Add("pässwörd-🔑-1234", "clé/secrète-99")
	s.Add("-----BEGIN PRIVATE KEY-----\r\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\r\n8n4XJTv0ZDs1yPRsE4f0\r\n-----END PRIVATE KEY-----\r\n")
	for _, tc := range []struct{ in, want string }{
		{"nothing secret", "nothing secret"},
		{"token abcd1234 here", "token <redacted> here"},
		{"longer first: abcd1234567", "longer first: <redacted>"},
		{"short is too short to hide", "short is too short to hide"},
		{"padded-secret", "<redacted>"},
		{"Authorization: Bearer tok-xyz-0123", "Authorization: <redacted>"},
		{"the credential alone: tok-xyz-0123", "the credential alone: <redacted>"},
		{"dXNlcjpwYXNz", "<redacted>"},
		{"twice abcd1234 abcd1234", "twice <redacted> <redacted>"},
		// JSON-escaped, with and without HTML escaping, and URL-encoded.
		{`{"v":"q\"uo\\te-1234"}`, `{"v":"<redacted>"}`},
		{`"a b/c+d=e\u0026f?g"`, `"<redacted>"`},
		{"?k=a+b%2Fc%2Bd%3De%26f%3Fg", "?k=<redacted>"},
		{"/a%20b%2Fc+d=e&f%3Fg", "/<redacted>"},
		{"?k=a%20b%2fc%2bd%3de%26f%3fg", "?k=<redacted>"},                   // lower-case hex
		{"q=a%20b/c%2Bd%3De%26f%3Fg", "q=<redacted>"},                       // Python's quote keeps /
		{"enc=Bearer%20wJalrXUtnFEMI%2BK7MDENG/bPxRfiCY", "enc=<redacted>"}, // quote of a header
		{"x=it's%20(a)%20*b!%2Bc", "x=<redacted>"},                          // encodeURIComponent
		// Python's json.dumps (every non-ASCII character as \uXXXX, a
		// surrogate pair beyond the BMP), in either hex case; PHP's
		// json_encode ("/" as "\/", non-ASCII escaped or not).
		{`{"v": "p\u00e4ssw\u00f6rd-\ud83d\udd11-1234"}`, `{"v": "<redacted>"}`},
		{`{"v": "p\u00E4ssw\u00F6rd-\uD83D\uDD11-1234"}`, `{"v": "<redacted>"}`},
		{`{"k":"a b\/c+d=e&f?g"}`, `{"k":"<redacted>"}`},
		{`{"k":"cl\u00e9\/secr\u00e8te-99"}`, `{"k":"<redacted>"}`},
		{`{"k":"clé\/secrète-99"}`, `{"k":"<redacted>"}`},
		// A JSON message logged as a JSON string: escaped twice.
		{`{"msg": "{\"v\": \"q\\\"uo\\\\te-1234\"}"}`, `{"msg": "{\"v\": \"<redacted>\"}"}`},
		{`{"msg": "{\"v\": \"p\\u00e4ssw\\u00f6rd-\\ud83d\\udd11-1234\"}"}`, `{"msg": "{\"v\": \"<redacted>\"}"}`},
		{`"{\"k\":\"a b/c+d=e\\u0026f?g\"}"`, `"{\"k\":\"<redacted>\"}"`},
		{`"{\"k\":\"a b\\\/c+d=e&f?g\"}"`, `"{\"k\":\"<redacted>\"}"`},
		// Each line of a PEM key alone.
		{"stderr: MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "stderr: <redacted>"},
		{"stderr: 8n4XJTv0ZDs1yPRsE4f0", "stderr: <redacted>"},
		// A password inside a URL is a secret of its own.
		{"auth failed for pw-0123456789", "auth failed for <redacted>"},
	} {
		if got := s.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := s.Contains(tc.in); got != (tc.in != tc.want) {
			t.Errorf("Contains(%q) = %v", tc.in, got)
		}
	}
	var none *secret.Set
	if none.Redact("abcd1234") != "abcd1234" || none.Contains("abcd1234") || none.Len() != 0 || none.MaxLen() != 0 {
		t.Fatal("a nil set changed something")
	}
	none.Add("abcd1234") // no panic
}

// Go's HTTP client turns a URL's user information into a Basic
// Authorization header: a server that echoes its request headers prints
// the password in base64.
func TestURLPasswordAsBasicAuth(t *testing.T) {
	t.Parallel()
	const u = "http://alice:urlpass-123456@host/mcp"
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := req.URL.User.Password()
	req.SetBasicAuth(req.URL.User.Username(), pw) // what the client's send does
	header := "authorization: " + req.Header.Get("Authorization")
	if header != "authorization: Basic YWxpY2U6dXJscGFzcy0xMjM0NTY=" {
		t.Fatalf("net/http sends %q", header)
	}
	added := secret.New()
	added.Add(u) // a URL that is a secret as a whole (an env value)
	printed := secret.New()
	printed.Add(secret.URLCredentials(u)...) // a url field
	for _, s := range []*secret.Set{added, printed} {
		for in, want := range map[string]string{
			header:                        "authorization: Basic <redacted>",
			"YWxpY2U6dXJscGFzcy0xMjM0NTY": "<redacted>",
			"urlpass-123456":              "<redacted>",
		} {
			if got := s.Redact(in); got != want {
				t.Errorf("Redact(%q) = %q, want %q", in, got, want)
			}
		}
	}
}

// Secrets that overlap or touch are hidden whole: the union of every match
// of every spelling is one <redacted>.
func TestRedactOverlapping(t *testing.T) {
	t.Parallel()
	s := secret.New()
	s.Add("AAAAxxxxBBBB", "BBBBccccDDDD", "abcdefgh12", "cdefgh12345678", "same-secret-1", `q"uote-0000`, `0000-q"uote`)
	for _, tc := range []struct{ in, want string }{
		{"AAAAxxxxBBBBccccDDDD", "<redacted>"},
		{"[AAAAxxxxBBBBccccDDDD] and BBBBccccDDDD", "[<redacted>] and <redacted>"},
		{"AAAAxxxxBBBBBBBBccccDDDD", "<redacted>"},   // touching
		{"AAAAxxxxBBBBccccDDD", "<redacted>ccccDDD"}, // the second incomplete
		{"abcdefgh12345678!", "<redacted>!"},         // the longer one starts inside
		{"same-secret-1same-secret-1 same-secret-1", "<redacted> <redacted>"},
		{`{"v":"q\"uote-0000-q\"uote"}`, `{"v":"<redacted>"}`}, // JSON-escaped spellings overlapping
		{"clean text, longer than a secret", "clean text, longer than a secret"},
	} {
		if got := s.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSetOnlyGrows(t *testing.T) {
	t.Parallel()
	s := secret.New()
	s.Add("first-secret")
	n := s.Len()
	s.Add("first-secret", "tiny")
	if s.Len() != n {
		t.Fatalf("Len %d after adding nothing new, want %d", s.Len(), n)
	}
	s.Add("second-secret")
	if s.Len() != n+1 || s.Redact("first-secret second-secret") != "<redacted> <redacted>" {
		t.Fatalf("after a second Add: %d values, %q", s.Len(), s.Redact("first-secret second-secret"))
	}
}

func TestClipRedactsFirst(t *testing.T) {
	t.Parallel()
	s := secret.New()
	const key = "sk-live-0123456789"
	s.Add(key)
	if s.MaxLen() < len(key) {
		t.Fatalf("MaxLen %d < %d", s.MaxLen(), len(key))
	}
	text := strings.Repeat("x", 10) + key + " tail"
	for max := 0; max < len(text)+2; max++ {
		got := s.Clip(text, max)
		for n := 4; n <= len(key); n++ {
			if strings.Contains(got, key[:n]) {
				t.Fatalf("Clip(…, %d) = %q leaks %q", max, got, key[:n])
			}
		}
	}
	if got := s.Clip("héllo wörld", 2); got != "h…" {
		t.Fatalf("Clip at a UTF-8 boundary: %q", got)
	}
	if got := s.Clip("short", 10); got != "short" {
		t.Fatalf("Clip of a short text: %q", got)
	}
}

func TestErr(t *testing.T) {
	t.Parallel()
	s := secret.New()
	s.Add("Bearer tok-xyz-0123")
	base := errors.New("dial: Bearer tok-xyz-0123 rejected")
	err := s.Err(fmt.Errorf("connect: %w", base))
	if err.Error() != "connect: dial: <redacted> rejected" || !errors.Is(err, base) || !secret.IsRedacted(err) {
		t.Fatalf("Err = %v", err)
	}
	clean := errors.New("nothing to hide")
	if s.Err(clean) != clean || s.Err(nil) != nil || secret.IsRedacted(clean) {
		t.Fatal("Err changed an error with no secret")
	}
}

// The handler redacts the message and every attribute, at every level and
// in both formats, groups and Logger.With included.
func TestHandler(t *testing.T) {
	t.Parallel()
	const tok = `tok"en\-0123456789`
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			s := secret.New()
			var buf bytes.Buffer
			opts := &slog.HandlerOptions{Level: slog.LevelDebug}
			var h slog.Handler = slog.NewTextHandler(&buf, opts)
			if format == "json" {
				h = slog.NewJSONHandler(&buf, opts)
			}
			log := slog.New(s.Handler(h))
			// Added after the logger exists: the set only grows, and the
			// logger sees what it holds when a record is written.
			s.Add(tok)
			if wrapped := log.Handler(); s.Handler(wrapped) != wrapped {
				t.Error("wrapping twice should not stack")
			}
			log = log.With("with", "w "+tok).WithGroup("g")
			log.Debug("msg "+tok, "s", tok, "err", errors.New("e "+tok), "any", []string{tok},
				slog.Group("grp", "inner", tok), "n", 42, "stringer", stringer(tok))
			log.Error("plain", "ok", "nothing")
			out := buf.String()
			for _, form := range []string{tok, `tok\"en\\-0123456789`} {
				if strings.Contains(out, form) {
					t.Fatalf("the secret (%s) is in the output:\n%s", form, out)
				}
			}
			if strings.Count(out, "<redacted>") < 7 || !strings.Contains(out, "42") || !strings.Contains(out, "nothing") {
				t.Fatalf("unexpected output:\n%s", out)
			}
		})
	}
}

type stringer string

func (s stringer) String() string { return "stringer " + string(s) }

func TestWriter(t *testing.T) {
	t.Parallel()
	s := secret.New()
	s.Add("abcd-secret-1234")
	var buf bytes.Buffer
	w := s.Writer(&buf)
	for _, line := range []string{"clean line\n", "leak abcd-secret-1234\n", "\r live line abcd-secret-1234"} {
		n, err := w.Write([]byte(line))
		if err != nil || n != len(line) {
			t.Fatalf("Write(%q) = %d, %v", line, n, err)
		}
	}
	if got, want := buf.String(), "clean line\nleak <redacted>\n\r live line <redacted>"; got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
}

func TestAddEnviron(t *testing.T) {
	t.Parallel()
	s := secret.New()
	s.AddEnviron([]string{
		"GITHUB_TOKEN=ghp_ambient0123",
		"HOME=/home/someone-long",
		"DATABASE_URL=postgres://u:pw-0123456789@db/x",
		"DOCS=https://user:pass-0123456789@example.com/",
		"SHORT_KEY=abc",
		"NOEQUALS",
	})
	for in, want := range map[string]string{
		"ghp_ambient0123":        "<redacted>",
		"/home/someone-long":     "/home/someone-long",
		"pw-0123456789":          "<redacted>",
		"pass-0123456789 leaked": "<redacted> leaked",
		"abc":                    "abc",
	} {
		if got := s.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// The scrub table (README "the scrub table"): the names a hostile test got
// through on v1 are scrubbed; what a server needs to run is kept.
func TestSensitive(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		// the seeds and the upstream project
		"API_KEY", "x_key_y", "MONKEY", "Secret", "my_token", "PassWord",
		// v1's holes
		"GH_PAT", "GITLAB_PAT", "MYSQL_PWD", "PGPASSWD", "PASSWD", "GOOGLE_APPLICATION_CREDENTIALS",
		"AWS_CREDENTIALS", "DATABASE_URL", "READONLY_DATABASE_URL", "NPM_AUTH_TOKEN", "SLACK_AUTH_TOKEN",
		// more spellings of the same
		"SMTP_PASS", "GPG_PASSPHRASE", "NPM_AUTH", "SSH_AUTH_SOCK", "SSL_PRIVATE", "SESSION_COOKIE",
		"SENTRY_DSN", "AZURE_CONNECTION_STRING", "REDIS_PW", "mysql_pwd",
		// a black-box audit's holes
		"AUTHORIZATION", "HTTP_AUTHORIZATION", "PASSPHRASE", "KEYPASSPHRASE", "PGPASS", "PGPASSWORD",
		"DBURL", "DB_URL", "MONGODBURL", "X_AMZ_SIGNATURE", "webhook_signature",
	} {
		if !secret.Sensitive(name) {
			t.Errorf("%q is not treated as a credential", name)
		}
	}
	for _, name := range []string{
		"PATH", "HOME", "LANG", "LC_ALL", "PWD", "OLDPWD", "USER", "SHELL", "TERM", "TMPDIR", "TZ",
		"GIT_AUTHOR_NAME", "XAUTHORITY", "PASS", "PAT", "SECRE", "TOKE", "DISPLAY", "NODE_OPTIONS",
		"GOPATH", "COMPASS_HOME", "PATTERN_DIR", "XDG_SESSION_TYPE",
		"PGPASSFILE", "SIGNATURE", "DB_URL_TIMEOUT", "PGHOST",
	} {
		if secret.Sensitive(name) {
			t.Errorf("%q is treated as a credential", name)
		}
	}
	for _, tc := range []struct {
		name, value string
		want        bool
	}{
		{"REDIS_URL", "redis://:pw-0123@host:6379", true},
		{"MONGO", "mongodb://user:pw@host/db", true},
		{"DOCS_URL", "https://example.com/path", false},
		{"USER_URL", "https://user@example.com/", false}, // no password
		{"HOME", "/root", false},
		{"CI_JOB_JWT", "eyJhbGciOi", true},
	} {
		if got := secret.SensitiveVar(tc.name, tc.value); got != tc.want {
			t.Errorf("SensitiveVar(%s=%s) = %v, want %v", tc.name, tc.value, got, tc.want)
		}
	}
}

// The README's scrub table says what the code does: every name of every
// list rule stands in the README's row of that rule.
func TestScrubTableMatchesTheREADME(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n| rule | matches |\n")
	if !ok {
		t.Fatal("README.md has no scrub table")
	}
	table, _, _ := strings.Cut(after, "\n\n")
	readmeRow := map[string]string{ // ScrubTable's label → the README row's start
		"name contains": "| the name contains |",
		"a word of the name (split at _, two words or more) is": "| a word of the name",
		"name ends with": "| the name ends with |",
		"never scrubbed": "| never scrubbed |",
		"value is":       "| the value is |",
	}
	prose := map[string]bool{"value is": true} // the row holds the rule's words, not a list
	for _, rule := range secret.ScrubTable() {
		start, ok := readmeRow[rule[0]]
		if !ok {
			t.Errorf("the scrub table has a rule this test does not know, %q: add its README row to readmeRow", rule[0])
			continue
		}
		var row string
		for _, r := range strings.Split(table, "\n") {
			if strings.HasPrefix(r, start) {
				row = r
			}
		}
		if row == "" {
			t.Errorf("README: no row %q in\n%s", start, table)
			continue
		}
		if prose[rule[0]] {
			words, _, _ := strings.Cut(rule[1], " (")
			if !strings.Contains(row, words) {
				t.Errorf("README: the row %q does not say %q", start, words)
			}
			continue
		}
		for _, name := range strings.Split(rule[1], ", ") {
			if !strings.Contains(row, "`"+name+"`") {
				t.Errorf("README: the row %q lacks `%s`", start, name)
			}
		}
	}
}

func TestURLCredentials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		want []string
	}{
		{"https://example.com/mcp", nil},
		{"https://user@example.com/mcp", nil},
		{"https://user:pw-0123@example.com/mcp", []string{"dXNlcjpwdy0wMTIz", "pw-0123"}},
		// The password as written and decoded; Basic credentials as Go's
		// net/http sends them (base64 of the decoded user:password), in
		// both alphabets, padded or not.
		{"http://al%69ce:p%40ss%3Fw0rd@host/mcp", []string{"YWxpY2U6cEBzcz93MHJk", "p%40ss%3Fw0rd", "p@ss?w0rd"}},
		{"http://u:pw~~~~~~@h/", []string{"dTpwd35+fn5+fg", "dTpwd35+fn5+fg==", "dTpwd35-fn5-fg", "dTpwd35-fn5-fg==", "pw~~~~~~"}},
		{"mysql://root:pw-0123@tcp(h:3306)/db", []string{"cm9vdDpwdy0wMTIz", "pw-0123"}}, // url.Parse refuses it, and quotes it
		{"https://h/mcp?api_key=k1&access-token=k2&sig=k3&Signature=k4&page=2&pass=k5&X-Amz-Signature=k6", []string{"k1", "k2", "k3", "k4", "k5", "k6"}},
		{"https://h/mcp?pwd=/tmp", nil}, // PWD alone is a folder
		{"::not a url", nil},
	} {
		got := secret.URLCredentials(tc.url)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("URLCredentials(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestArgCredentials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-y", "@modelcontextprotocol/server-everything"}, nil},
		{[]string{"--api-key=a1", "--token", "a2", "-password=a3", "--pat", "a4"}, []string{"a1", "a2", "a3", "a4"}},
		{[]string{"--token", "--verbose"}, nil}, // a flag, not a value
		{[]string{"--token"}, nil},
		{[]string{"run", "-e", "GITHUB_TOKEN=a5", "-e", "LOG_LEVEL=debug", "image"}, []string{"a5"}},
		{[]string{"--db", "postgres://u:a6@h/db", "https://h/x?key=a7"}, append(basic("u", "a6"), "a7")},
		{[]string{"--config=/etc/x.yml", "--pwd", "/tmp", "a/b=c"}, nil},
		{[]string{"-p", "5432", "-p", "port-0123456789"}, nil}, // a port, not a password
		// A URL anywhere inside an argument.
		{[]string{"--db=mysql://root:mysqlroot-1234@h/db"}, basic("root", "mysqlroot-1234")},
		{[]string{"--url=https://u:pw-12345678@h/x?X-Amz-Signature=sig-0123456789&X-Amz-Date=20240101"},
			append(basic("u", "pw-12345678"), "sig-0123456789")},
		{[]string{"a=https://u:p1-aaaaaaa@h,b=https://v:p2-bbbbbbb@g"}, append(basic("u", "p1-aaaaaaa"), basic("v", "p2-bbbbbbb")...)},
		{[]string{`--config={"url":"redis://:pw-redis-123@h:6379"}`}, basic("", "pw-redis-123")},
		// Bearer and Basic tokens anywhere, and headers named like credentials.
		{[]string{"--header", "Authorization: Bearer hdrbearer-444444"}, []string{"Bearer hdrbearer-444444", "hdrbearer-444444"}},
		{[]string{"--header", "authorization: token ghp_0123456789"}, []string{"token ghp_0123456789"}}, // Add takes the token alone
		{[]string{"serve", "Bearer bareword-bearer-1234"}, []string{"bareword-bearer-1234"}},
		{[]string{"-H", "x: basic dXNlcjpwYXNzd29yZA=="}, []string{"dXNlcjpwYXNzd29yZA=="}},
		{[]string{`--headers={"Authorization":"Bearer json.bearer_5678~/+"}`}, []string{"json.bearer_5678~/+"}},
		{[]string{"--header", "X-Api-Key: k-0123456789"}, []string{"k-0123456789"}},
		{[]string{"--header=X-Api-Key: k-9876543210"}, []string{"k-9876543210"}}, // a flag's value, as RedactArgs masks it
		{[]string{"--note=Basic authentication; a bearer tokenholder; Bearer short1; unbearer xyz-0123456789"}, nil},
	} {
		got := secret.ArgCredentials(tc.args)
		if !slices.Equal(got, tc.want) {
			t.Errorf("ArgCredentials(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// basic returns what URLCredentials finds in user:pw@: the password, then
// the base64 of user:pw in the standard and URL-safe alphabets, padded or
// not, each once.
func basic(user, pw string) []string {
	out := []string{pw}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b := enc.EncodeToString([]byte(user + ":" + pw)); !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// BenchmarkRedact redacts a log line of 150 bytes that holds no secret, with
// 20 secrets of 6 spellings or more each in the set: the cost every log
// record and every write of the harness pays.
func BenchmarkRedact(b *testing.B) {
	s := secret.New()
	for i := range 20 {
		s.Add(fmt.Sprintf("Bearer tok/%02d+secret=value%02d", i, i))
	}
	line := strings.Repeat("an ordinary log line with nothing secret in it, ", 3)
	b.ReportAllocs()
	for b.Loop() {
		if s.Redact(line) != line {
			b.Fatal("redacted")
		}
	}
}

// BenchmarkRedactSecretLine is BenchmarkRedact's line with one of the
// secrets in it: the rare case, which scans the line a second time for
// every match ([secret.Set.Redact] merges overlapping ones).
func BenchmarkRedactSecretLine(b *testing.B) {
	s := secret.New()
	for i := range 20 {
		s.Add(fmt.Sprintf("Bearer tok/%02d+secret=value%02d", i, i))
	}
	line := strings.Repeat("an ordinary log line with nothing secret in it, ", 3) + "tok/07+secret=value07"
	b.ReportAllocs()
	for b.Loop() {
		if s.Redact(line) == line {
			b.Fatal("not redacted")
		}
	}
}

// A credential in a command line or a URL is masked by its place, however
// short: a free-text search cannot find a value of five letters, but the
// flag or key before it says what it is. What is not a credential prints
// as written.
func TestRedactArgsAndURL(t *testing.T) {
	t.Parallel()
	args := []string{"--only", "echo", "--api-key=abc", "--password", "hunter2", "-p", "8080", "-e", "DB_PASSWORD=pw123",
		"NODE_ENV=production", "--header=X-Api-Key: kkk", "-H", "Authorization: Bearer x1", "--db=mysql://u:pw@h:3306/db?sslmode=off&token=t1",
		"--verbose"}
	want := []string{"--only", "echo", "--api-key=" + secret.Mask, "--password", secret.Mask, "-p", "8080", "-e", "DB_PASSWORD=" + secret.Mask,
		"NODE_ENV=production", "--header=X-Api-Key: " + secret.Mask, "-H", "Authorization: " + secret.Mask, "--db=mysql://u:" + secret.Mask + "@h:3306/db?sslmode=off&token=" + secret.Mask,
		"--verbose"}
	got := secret.RedactArgs(args)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("arg %d: %q, want %q", i, got[i], want[i])
		}
	}
	if args[2] != "--api-key=abc" {
		t.Error("RedactArgs changed its argument")
	}
	for raw, want := range map[string]string{
		"http://127.0.0.1:1/mcp?access_token=tok&x=1#f": "http://127.0.0.1:1/mcp?access_token=" + secret.Mask + "&x=1#f",
		"https://bob:pw@host/mcp":                       "https://bob:" + secret.Mask + "@host/mcp",
		"https://bob@host/mcp?page=2":                   "https://bob@host/mcp?page=2",
		"https://host/a@b?api%5Fkey=k":                  "https://host/a@b?api%5Fkey=" + secret.Mask,
		"not a url":                                     "not a url",
	} {
		if got := secret.RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
