package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/prompts"
)

// The console's resources and prompts (docs/rfc/0008-resources-prompts.md):
// /resources, /prompts, /prompt NAME [ARGS] (the prompt's messages are the
// next turn), @server:uri in a message (the resource's text goes with it),
// and their completion.

// resourceCommands are the console's commands of resources and prompts.
func (c *console) resourceCommands() []*command {
	hs := c.hs
	return []*command{
		{name: "/resources", help: "list the resources (@server:uri in a message attaches one)", run: func(_ context.Context, args string) error {
			writeResources(hs.ourStdout(), hs.resources, args == "--json")
			return nil
		}},
		{name: "/prompts", help: "list the prompts and their arguments", run: func(_ context.Context, args string) error {
			writePrompts(hs.ourStdout(), hs.prompts.List(), args == "--json")
			return nil
		}},
		{name: "/prompt", args: "NAME [ARGS]", help: "send a prompt's messages to the agent as the next turn",
			complete: func() []string { return promptNamesOf(hs.prompts.List()) },
			run:      c.sendPrompt, cancelled: "answer cancelled"},
	}
}

// sendPrompt is /prompt NAME [ARGS]: the prompt, rendered, is the next
// message to the agent.
func (c *console) sendPrompt(ctx context.Context, rest string) error {
	hs := c.hs
	name, argText := cutSpace(rest)
	if name == "" {
		return errors.New("usage: /prompt NAME [key=value ...]; /prompts lists them")
	}
	var words []string
	if t := strings.TrimSpace(argText); strings.HasPrefix(t, "{") {
		words = []string{t}
	} else {
		words = strings.Fields(argText)
	}
	args, err := promptArgs(words)
	if err != nil {
		return err
	}
	p, ok := hs.prompts.Lookup(name)
	if !ok {
		return fmt.Errorf("unknown prompt %q; /prompts lists them", name)
	}
	if err := checkPromptArgs(p, args); err != nil {
		return err
	}
	res, err := hs.prompts.Get(ctx, name, args)
	if err != nil {
		return fmt.Errorf("prompt %s: %w", name, err)
	}
	text := promptTurn(res)
	if text == "" {
		return fmt.Errorf("prompt %s has no messages", name)
	}
	c.reply("info", fmt.Sprintf("sending %s (%s) to the agent", name, plural(len(res.Messages), "message")))
	return c.talk(ctx, text)
}

// promptTurn is the text of a rendered prompt as one message: the messages'
// texts, each but a lone user message labelled with its role.
func promptTurn(res prompts.Result) string {
	if len(res.Messages) == 1 && res.Messages[0].Role == "user" {
		return res.Messages[0].Text()
	}
	parts := make([]string, 0, len(res.Messages))
	for _, m := range res.Messages {
		parts = append(parts, m.Role+": "+m.Text())
	}
	return strings.Join(parts, "\n\n")
}

// mention is @server:uri, at the start of a word.
var mention = regexp.MustCompile(`(^|\s)@([A-Za-z0-9_-]{1,64}):(\S+)`)

// attachMentions reads every @server:uri of line whose server has
// resources and appends each one's text; a mention of a server that has
// none is left as it is (an e-mail address, a handle). A read that fails
// stops the message, saying which.
func (c *console) attachMentions(ctx context.Context, line string) (string, error) {
	hs := c.hs
	var blocks []string
	seen := map[string]bool{}
	for _, m := range mention.FindAllStringSubmatch(line, -1) {
		server, uri := m[2], strings.TrimRight(m[3], ".,;:!?)")
		key := server + ":" + uri
		if seen[key] || !hs.resources.Has(server) {
			continue
		}
		seen[key] = true
		res, err := hs.resources.Read(ctx, server, uri)
		if err != nil {
			return "", fmt.Errorf("@%s: %s; the message was not sent", key, safe.Text(err.Error()))
		}
		var b strings.Builder
		fmt.Fprintf(&b, "[resource @%s]\n", key)
		for i, ct := range res.Contents {
			if i > 0 {
				b.WriteString("\n")
			}
			if ct.IsText() {
				b.WriteString(*ct.Text)
				continue
			}
			n, _ := base64.StdEncoding.DecodeString(ct.Blob)
			fmt.Fprintf(&b, "[binary content: %s, %d bytes, not attached]", orElse(ct.MIMEType, "unknown type"), len(n))
		}
		blocks = append(blocks, strings.TrimRight(b.String(), "\n"))
	}
	if len(blocks) == 0 {
		return line, nil
	}
	c.reply("info", fmt.Sprintf("attached %s", plural(len(blocks), "resource")))
	return line + "\n\n" + strings.Join(blocks, "\n\n"), nil
}

// completeMention completes the @ word at the end of a message: servers
// (@server:) first, then the uris of that server, and inside a URI one of
// its templates makes, the values the server suggests for the variable
// being typed.
func (c *console) completeMention(before string) ([]string, string) {
	i := strings.LastIndexFunc(before, unicode.IsSpace)
	word := before[i+1:]
	if !strings.HasPrefix(word, "@") || c.hs.resources == nil {
		return nil, ""
	}
	var candidates []string
	if server, prefix, ok := strings.Cut(word[1:], ":"); ok {
		for _, r := range c.hs.resources.List(server) {
			if strings.HasPrefix(r.URI, prefix) && safe.Line(r.URI) == r.URI {
				candidates = append(candidates, "@"+server+":"+r.URI)
			}
		}
		candidates = append(candidates, c.completeTemplateMention(server, prefix)...)
	} else {
		for _, s := range c.hs.resources.Servers() {
			if strings.HasPrefix(s, word[1:]) {
				candidates = append(candidates, "@"+s+":")
			}
		}
	}
	slices.Sort(candidates)
	return slices.Compact(candidates), word
}

// completePromptArgs completes the arguments of /prompt NAME: the names
// not given yet, as key=; after key=, the values the prompt's server
// suggests (completePromptValue).
func (c *console) completePromptArgs(name, rest string) ([]string, string) {
	p, ok := c.hs.prompts.Lookup(name)
	if !ok {
		return nil, ""
	}
	i := strings.LastIndexFunc(rest, unicode.IsSpace)
	word := rest[i+1:]
	given := map[string]string{}
	for _, w := range strings.Fields(rest[:i+1]) {
		k, v, _ := strings.Cut(w, "=")
		given[k] = v
	}
	if key, value, ok := strings.Cut(word, "="); ok {
		return c.completePromptValue(p, key, value, given), word
	}
	var candidates []string
	for _, a := range p.Arguments {
		if _, done := given[a.Name]; !done && strings.HasPrefix(a.Name, word) && safe.Line(a.Name) == a.Name {
			candidates = append(candidates, a.Name+"=")
		}
	}
	return candidates, word
}

// completeTimeout bounds the server's answer to a Tab: a completion that
// comes later is of a line the person has gone on typing.
const completeTimeout = 2 * time.Second

// completePromptValue is key=value for each value the server of prompt p
// suggests for its argument key after value (completion/complete, the
// arguments given as its context): those that go on from value and fit in
// one word of the line (a /prompt argument ends at a space). None when the
// server offers no completion or does not answer within completeTimeout;
// a failure is logged, not shown (a Tab prints nothing but choices).
func (c *console) completePromptValue(p prompts.Prompt, key, value string, given map[string]string) []string {
	if !slices.ContainsFunc(p.Arguments, func(a prompts.Argument) bool { return a.Name == key }) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	res, err := c.hs.prompts.CompleteArgument(ctx, p.Name, key, value, given)
	if err != nil {
		c.hs.log.Debug("completion failed", "prompt", p.Name, "argument", key, "err", err)
		return nil
	}
	var candidates []string
	for _, v := range res.Values {
		if strings.HasPrefix(v, value) && v != "" && !strings.ContainsFunc(v, unicode.IsSpace) && safe.Line(v) == v {
			candidates = append(candidates, key+"="+v)
		}
	}
	return candidates
}

// completeTemplateMention is @server:uri for each value server suggests
// for the variable of one of its templates that typed ends in
// (completion/complete, the variables before it as its context). Only
// templates of plain {var} expressions are matched: typed must follow the
// template's literal parts, and a variable runs to the next literal's
// first byte.
func (c *console) completeTemplateMention(server, typed string) []string {
	if !c.hs.resources.Completes(server) {
		return nil
	}
	var out []string
	for _, t := range c.hs.resources.Templates(server) {
		arg, raw, given, ok := templateVariableAt(t.URITemplate, typed)
		if !ok {
			continue
		}
		value, err := url.PathUnescape(raw)
		if err != nil {
			value = raw
		}
		ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
		res, err := c.hs.resources.CompleteTemplate(ctx, server, t.URITemplate, arg, value, given)
		cancel()
		if err != nil {
			c.hs.log.Debug("completion failed", "server", server, "template", t.URITemplate, "variable", arg, "err", err)
			continue
		}
		base := typed[:len(typed)-len(raw)]
		for _, v := range res.Values {
			e := escapeSimple(v)
			if strings.HasPrefix(e, raw) && e != "" && safe.Line(e) == e {
				out = append(out, "@"+server+":"+base+e)
			}
		}
	}
	return out
}

// templateVariableAt reads typed as the start of a URI the template
// expands to, and reports the variable typed ends in, its value so far as
// typed (escaped), and the values of the variables before it (unescaped);
// ok false when typed does not
// follow the template, ends in a literal part, or the template has an
// expression other than a plain {var}.
func templateVariableAt(template, typed string) (arg, value string, given map[string]string, ok bool) {
	given = map[string]string{}
	rest := template
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return "", "", nil, false // typed would end in the last literal
		}
		lit := rest[:i]
		if !strings.HasPrefix(typed, lit) {
			return "", "", nil, false // typed leaves the template, or ends in lit
		}
		typed = typed[len(lit):]
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "", "", nil, false
		}
		name := rest[i+1 : i+j]
		if name == "" || strings.ContainsAny(name, "+#./;?&,*:=!@|") {
			return "", "", nil, false
		}
		rest = rest[i+j+1:]
		end := len(typed)
		if rest != "" {
			if k := strings.IndexByte(typed, rest[0]); k >= 0 {
				end = k
			}
		}
		if end == len(typed) {
			return name, typed, given, true
		}
		if v, err := url.PathUnescape(typed[:end]); err == nil {
			given[name] = v
		}
		typed = typed[end:]
	}
}

// escapeSimple is v as RFC 6570's simple expansion writes it: unreserved
// characters as they are, every other byte percent-encoded.
func escapeSimple(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || strings.IndexByte("-._~", ch) >= 0 {
			b.WriteByte(ch)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", ch)
	}
	return b.String()
}
