package mcpdemo

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // embedded zone database: "now" works offline on hosts without one
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const (
	serverName    = "demo"
	serverVersion = "0.1.0"

	maxUUIDCount = 100
)

// toolNames lists the registered tools in registration order.
var toolNames = []string{"now", "calc", "hash", "uuid", "base64", "wordcount"}

// newServer builds the demo MCP server with all tools registered. clock is
// the time source for "now" and for version 7 UUIDs.
func newServer(clock func() time.Time) *server.MCPServer {
	s := server.NewMCPServer(serverName, serverVersion,
		server.WithToolCapabilities(false),
		// Schemas advertise additionalProperties: false; checkArgs enforces
		// it. (The handlers validate arguments themselves rather than using
		// server.WithInputSchemaValidation, whose messages are hard for a
		// model to read.)
		server.WithStrictInputSchemaDefault(),
		server.WithRecovery(),
		server.WithInstructions("Small offline utility tools: current time, arithmetic, hashing, UUIDs, Base64 and word counts."),
	)
	t := &toolset{clock: clock, uuids: &uuidGen{clock: clock}}
	for _, st := range t.tools() {
		s.AddTool(st.Tool, checkArgs(st.Tool, st.Handler))
	}
	return s
}

// checkArgs wraps a handler so that calls whose arguments are not an object
// or include names the tool does not declare get an isError result listing
// the accepted names.
func checkArgs(tool mcp.Tool, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	accepted := slices.Sorted(maps.Keys(tool.InputSchema.Properties))
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.GetArguments()
		if args == nil && req.Params.Arguments != nil {
			return mcp.NewToolResultError("arguments must be a JSON object"), nil
		}
		var unknown []string
		for name := range args {
			if !slices.Contains(accepted, name) {
				unknown = append(unknown, strconv.Quote(name))
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return mcp.NewToolResultError(fmt.Sprintf("unknown argument(s) %s; %s accepts: %s",
				strings.Join(unknown, ", "), tool.Name, strings.Join(accepted, ", "))), nil
		}
		return h(ctx, req)
	}
}

type toolset struct {
	clock func() time.Time
	uuids *uuidGen
}

// localOnly marks a tool as reading nothing but its arguments and changing
// nothing outside the server.
func localOnly(title string) []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithTitleAnnotation(title),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	}
}

func newTool(name, title, description string, opts ...mcp.ToolOption) mcp.Tool {
	all := append([]mcp.ToolOption{mcp.WithDescription(description)}, localOnly(title)...)
	return mcp.NewTool(name, append(all, opts...)...)
}

// enumInts restricts an integer property to the given values.
func enumInts(values ...int) mcp.PropertyOption {
	return func(schema map[string]any) { schema["enum"] = values }
}

func (t *toolset) tools() []server.ServerTool {
	return []server.ServerTool{
		{
			Tool: newTool("now", "Current time",
				"Get the current date and time, optionally in a given time zone.\n\n"+
					"timezone is an IANA zone name such as \"Europe/Paris\" or \"America/New_York\" (default UTC). "+
					"format is rfc3339 (default, e.g. 2024-05-14T09:30:00+02:00), unix (whole seconds since "+
					"1970-01-01 UTC) or human (e.g. Tuesday, 14 May 2024, 09:30:00 CEST (UTC+02:00, Europe/Paris)).",
				mcp.WithString("timezone", mcp.Description("IANA time zone name, e.g. \"Asia/Tokyo\"; default \"UTC\""),
					mcp.DefaultString("UTC")),
				mcp.WithString("format", mcp.Description("Output format; default \"rfc3339\""),
					mcp.Enum("rfc3339", "unix", "human"), mcp.DefaultString("rfc3339")),
			),
			Handler: t.now,
		},
		{
			Tool: newTool("calc", "Calculator",
				"Evaluate an arithmetic expression such as \"sqrt(2) * (3 + 4)^2\" and return the number.\n\n"+
					"A small built-in parser does the work; nothing is executed as code. "+
					"Supports numbers (12, 2.5, .5, 1e-3), "+calcHelp+". "+
					"^ is right-associative and binds tighter than unary minus (-2^2 = -4, 2^3^2 = 512); "+
					"% is the floating-point remainder with the sign of the dividend. "+
					"The result uses the shortest decimal form that converts back to the same 64-bit float "+
					"(0.1+0.2 gives 0.30000000000000004). Errors such as division by zero or bad syntax "+
					"name a 1-based character position.",
				mcp.WithString("expression", mcp.Required(),
					mcp.Description("Expression to evaluate, e.g. \"round(1.5e3 / 7, 2) + max(2, 3)^2\"")),
			),
			Handler: t.calc,
		},
		{
			Tool: newTool("hash", "Hash text",
				"Compute the hex digest of a text with SHA-256, SHA-1, MD5 or SHA-512.\n\n"+
					"The UTF-8 bytes of text are hashed exactly as given (no newline is added). "+
					"The digest is returned as lowercase hex. MD5 and SHA-1 are for checksums and "+
					"compatibility only, not for security.",
				mcp.WithString("text", mcp.Required(), mcp.Description("Text to hash")),
				mcp.WithString("algorithm", mcp.Description("Hash algorithm; default \"sha256\""),
					mcp.Enum("sha256", "sha1", "md5", "sha512"), mcp.DefaultString("sha256")),
			),
			Handler: t.hash,
		},
		{
			Tool: newTool("uuid", "Generate UUIDs",
				"Generate random (version 4) or time-ordered (version 7) UUIDs.\n\n"+
					"Returns count UUIDs, one per line, in lowercase 8-4-4-4-12 form. Version 7 UUIDs "+
					"begin with the current Unix time in milliseconds and sort in the order they were created, "+
					"which suits database keys.",
				mcp.WithInteger("version", mcp.Description("UUID version: 4 (random) or 7 (time-ordered); default 4"),
					enumInts(4, 7), mcp.DefaultNumber(4)),
				mcp.WithInteger("count", mcp.Description("How many UUIDs to generate, 1 to 100; default 1"),
					mcp.Min(1), mcp.Max(maxUUIDCount), mcp.DefaultNumber(1)),
			),
			Handler: t.uuid,
		},
		{
			Tool: newTool("base64", "Base64 encode/decode",
				"Encode text as Base64, or decode Base64 back to text.\n\n"+
					"Encoding uses the UTF-8 bytes of text and pads with \"=\". urlSafe selects the URL- and "+
					"filename-safe alphabet (- and _ instead of + and /). Decoding accepts input with or "+
					"without \"=\" padding and ignores line breaks and surrounding whitespace; decoded bytes "+
					"that are not valid UTF-8 text are returned as hex.",
				mcp.WithString("text", mcp.Required(), mcp.Description("Text to encode, or Base64 to decode")),
				mcp.WithString("mode", mcp.Required(), mcp.Description("\"encode\" or \"decode\""),
					mcp.Enum("encode", "decode")),
				mcp.WithBoolean("urlSafe", mcp.Description("Use the URL-safe alphabet (RFC 4648 section 5); default false"),
					mcp.DefaultBool(false)),
			),
			Handler: t.base64,
		},
		{
			Tool: newTool("wordcount", "Count words",
				"Count the lines, words, characters and bytes in a text.\n\n"+
					"Words are runs of non-whitespace; characters are Unicode code points; bytes are UTF-8 "+
					"bytes. Lines are counted as an editor shows them: a last line without a trailing newline "+
					"still counts, and empty text has 0 lines.",
				mcp.WithString("text", mcp.Required(), mcp.Description("Text to count")),
			),
			Handler: t.wordcount,
		},
	}
}

// ---- argument helpers ----
//
// Schema validation runs before the handlers, but they check their own
// arguments too, so a handler is safe however it is reached.

func requiredString(req mcp.CallToolRequest, key string) (string, error) {
	v, ok := req.GetArguments()[key]
	if !ok {
		return "", fmt.Errorf("missing required argument %q", key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("argument %q must be a string", key)
	}
	return s, nil
}

func optionalString(req mcp.CallToolRequest, key, def string) (string, error) {
	if v, ok := req.GetArguments()[key]; !ok || v == nil {
		return def, nil
	}
	return requiredString(req, key)
}

// optionalChoice reads an enum-like string argument, ignoring case and
// surrounding space.
func optionalChoice(req mcp.CallToolRequest, key, def string) (string, error) {
	s, err := optionalString(req, key, def)
	return strings.ToLower(strings.TrimSpace(s)), err
}

// optionalInt accepts a JSON number with no fractional part, or a string
// holding a decimal integer.
func optionalInt(req mcp.CallToolRequest, key string, def int) (int, error) {
	v, ok := req.GetArguments()[key]
	if !ok || v == nil {
		return def, nil
	}
	bad := fmt.Errorf("argument %q must be an integer", key)
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > math.MaxInt32 {
			return 0, bad
		}
		return int(x), nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 32)
		if err != nil {
			return 0, bad
		}
		return int(n), nil
	default:
		return 0, bad
	}
}

// optionalBool accepts a JSON boolean or a string such as "true" or "false".
func optionalBool(req mcp.CallToolRequest, key string, def bool) (bool, error) {
	v, ok := req.GetArguments()[key]
	if !ok || v == nil {
		return def, nil
	}
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
			return b, nil
		}
	}
	return false, fmt.Errorf("argument %q must be true or false", key)
}

func errorResult(err error) *mcp.CallToolResult { return mcp.NewToolResultError(err.Error()) }

// ---- now ----

func (t *toolset) now(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	tz, err := optionalString(req, "timezone", "UTC")
	if err != nil {
		return errorResult(err), nil
	}
	format, err := optionalChoice(req, "format", "rfc3339")
	if err != nil {
		return errorResult(err), nil
	}
	loc, err := loadZone(tz)
	if err != nil {
		return errorResult(err), nil
	}
	now := t.clock().In(loc)
	switch format {
	case "rfc3339":
		return mcp.NewToolResultText(now.Format(time.RFC3339)), nil
	case "unix":
		return mcp.NewToolResultText(fmt.Sprint(now.Unix())), nil
	case "human":
		s := now.Format("Monday, 2 January 2006, 15:04:05 MST (UTC-07:00")
		if name := loc.String(); name != "UTC" {
			s += ", " + name
		}
		return mcp.NewToolResultText(s + ")"), nil
	default:
		return mcp.NewToolResultError(fmt.Sprintf("unknown format %q: use rfc3339, unix or human", format)), nil
	}
}

func loadZone(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" || strings.EqualFold(name, "UTC") {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown timezone %q: use an IANA name such as \"Europe/Paris\", \"America/New_York\" or \"UTC\"", name)
	}
	return loc, nil
}

// ---- calc ----

func (t *toolset) calc(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	expr, err := requiredString(req, "expression")
	if err != nil {
		return errorResult(err), nil
	}
	v, err := evaluate(expr)
	if err != nil {
		return errorResult(err), nil
	}
	return mcp.NewToolResultText(formatNumber(v)), nil
}

// ---- hash ----

var hashes = map[string]func() hash.Hash{
	"sha256": sha256.New,
	"sha1":   sha1.New,
	"md5":    md5.New,
	"sha512": sha512.New,
}

func (t *toolset) hash(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := requiredString(req, "text")
	if err != nil {
		return errorResult(err), nil
	}
	algo, err := optionalChoice(req, "algorithm", "sha256")
	if err != nil {
		return errorResult(err), nil
	}
	newHash, ok := hashes[strings.ReplaceAll(algo, "-", "")] // also SHA-256 etc.
	if !ok {
		return mcp.NewToolResultError(fmt.Sprintf("unknown algorithm %q: use sha256, sha1, md5 or sha512", algo)), nil
	}
	h := newHash()
	h.Write([]byte(text))
	return mcp.NewToolResultText(hex.EncodeToString(h.Sum(nil))), nil
}

// ---- uuid ----

func (t *toolset) uuid(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	version, err := optionalInt(req, "version", 4)
	if err != nil {
		return errorResult(err), nil
	}
	count, err := optionalInt(req, "count", 1)
	if err != nil {
		return errorResult(err), nil
	}
	if count < 1 || count > maxUUIDCount {
		return mcp.NewToolResultError(fmt.Sprintf("count must be from 1 to %d, got %d", maxUUIDCount, count)), nil
	}
	var gen func() string
	switch version {
	case 4:
		gen = newUUIDv4
	case 7:
		gen = t.uuids.v7
	default:
		return mcp.NewToolResultError(fmt.Sprintf("unsupported UUID version %d: use 4 or 7", version)), nil
	}
	var b strings.Builder
	for i := range count {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(gen())
	}
	return mcp.NewToolResultText(b.String()), nil
}

// newUUIDv4 returns a random UUID (RFC 9562 section 5.4).
func newUUIDv4() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (it crashes the program instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(b)
}

// uuidGen makes version 7 UUIDs (RFC 9562 section 5.7) that are strictly
// increasing within the process: the 12-bit rand_a field is a counter
// (section 6.2, method 1) that starts at a random value below 2048 in each
// new millisecond and, when exhausted, borrows the next millisecond.
type uuidGen struct {
	clock func() time.Time

	mu     sync.Mutex
	lastMs int64
	seq    uint16
}

func (g *uuidGen) v7() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (it crashes the program instead)

	g.mu.Lock()
	if ms := g.clock().UnixMilli(); ms > g.lastMs {
		g.lastMs = ms
		g.seq = binary.BigEndian.Uint16(b[6:8]) & 0x07ff
	} else {
		g.seq++
		if g.seq > 0x0fff {
			g.lastMs++
			g.seq = 0
		}
	}
	ms, seq := uint64(g.lastMs), g.seq
	g.mu.Unlock()

	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], ms)
	copy(b[0:6], ts[2:8])
	b[6] = 0x70 | byte(seq>>8)
	b[7] = byte(seq)
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(b)
}

func formatUUID(b [16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// ---- base64 ----

func (t *toolset) base64(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := requiredString(req, "text")
	if err != nil {
		return errorResult(err), nil
	}
	mode, err := requiredString(req, "mode")
	if err != nil {
		return errorResult(err), nil
	}
	mode = strings.ToLower(strings.TrimSpace(mode))
	urlSafe, err := optionalBool(req, "urlSafe", false)
	if err != nil {
		return errorResult(err), nil
	}
	switch mode {
	case "encode":
		enc := base64.StdEncoding
		if urlSafe {
			enc = base64.URLEncoding
		}
		return mcp.NewToolResultText(enc.EncodeToString([]byte(text))), nil
	case "decode":
		out, err := decodeBase64(text, urlSafe)
		if err != nil {
			return errorResult(err), nil
		}
		if !utf8.Valid(out) {
			return mcp.NewToolResultText(fmt.Sprintf("decoded %d bytes that are not valid UTF-8 text; hex: %s",
				len(out), hex.EncodeToString(out))), nil
		}
		return mcp.NewToolResultText(string(out)), nil
	default:
		return mcp.NewToolResultError(fmt.Sprintf("unknown mode %q: use encode or decode", mode)), nil
	}
}

const base64Digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// decodeBase64 decodes padded or unpadded Base64. Line breaks anywhere and
// whitespace around the input are ignored. Errors give the byte offset in
// the original text.
func decodeBase64(text string, urlSafe bool) ([]byte, error) {
	const space = " \t\r\n"
	body := strings.TrimLeft(text, space)
	lead := len(text) - len(body)
	body = strings.TrimRight(strings.TrimRight(body, space), "=")
	enc, alphabet := base64.RawStdEncoding, base64Digits+"+/"
	if urlSafe {
		enc, alphabet = base64.RawURLEncoding, base64Digits+"-_"
	}
	out, err := enc.DecodeString(body)
	var corrupt base64.CorruptInputError
	if !errors.As(err, &corrupt) {
		return out, err // err is nil: CorruptInputError is the only error DecodeString returns
	}
	// A valid digit is only rejected when it starts a final group too short
	// to hold a byte.
	if int(corrupt) >= len(body) || strings.IndexByte(alphabet, body[corrupt]) >= 0 {
		return nil, errors.New("invalid base64: input ends early (truncated, or its length is wrong)")
	}
	off := lead + int(corrupt)
	c, _ := utf8.DecodeRuneInString(text[off:])
	msg := fmt.Sprintf("invalid base64: unexpected character %q at byte offset %d", c, off)
	switch {
	case !urlSafe && (c == '-' || c == '_'):
		msg += " (this looks like URL-safe base64; set urlSafe to true)"
	case urlSafe && (c == '+' || c == '/'):
		msg += " (this looks like standard base64; set urlSafe to false)"
	}
	return nil, errors.New(msg)
}

// ---- wordcount ----

func (t *toolset) wordcount(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := requiredString(req, "text")
	if err != nil {
		return errorResult(err), nil
	}
	lines := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		lines++
	}
	return mcp.NewToolResultText(fmt.Sprintf("lines: %d, words: %d, characters: %d, bytes: %d",
		lines, len(strings.Fields(text)), utf8.RuneCountInString(text), len(text))), nil
}
