package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/harness-go/harness/internal/testkit/fakellm"
	"github.com/harness-go/harness/internal/testkit/fixture"
	"github.com/harness-go/harness/internal/testkit/oauthtest"
)

const echoEntry = `- id: echo
  name: echo
  config:
    greet: true
`

const demoEntry = `- id: demo
  name: mcp-client
  config:
    serverName: demo
    transport: stdio
    command: !!js process.execPath
    args: [mcp-demo]
`

func agentEntry(url string) string {
	return fmt.Sprintf("- id: bot\n  name: agent\n  config:\n    baseURL: %s\n    model: fake-model\n", url)
}

// entryState is the state badge of an entry's card, in JavaScript.
func entryState(id string) string {
	return fmt.Sprintf(`((document.querySelector('[data-entry=%q] .badge') || {}).dataset || {}).state`, id)
}

// The page opens with its token, and shows nothing without it.
func TestTokenGate(t *testing.T) {
	w := startWeb(t, echoEntry)
	tb := newTab(t, 1280, 800)

	tb.open(w.base + "/")
	tb.until("the sign-in notice", `!document.getElementById('signin').hidden`)
	if got := eval[bool](tb, `document.getElementById('tabs').hidden && !document.querySelector('[data-entry]')`); !got {
		t.Fatal("without the token the page shows the harness")
	}
	if code := eval[int](tb, `fetch('/api/events').then(r => r.status)`); code != http.StatusUnauthorized {
		t.Errorf("the event stream without a session: %d", code)
	}
	// A wrong token is refused, with why.
	tb.typeIn("#signin-token", "not-the-token")
	tb.click("#signin-form button")
	tb.until("the refusal", `document.getElementById('signin-error').textContent.includes('wrong')`)

	tb.open(w.url)
	tb.until("the echo entry, ready", entryState("echo")+` === 'ready'`)
	if h := eval[string](tb, `location.href`); strings.Contains(h, "token") {
		t.Errorf("the token stays in the address bar: %s", h)
	}
	if got := tb.text("#conn"); got != "live" {
		t.Errorf("the connection says %q", got)
	}
	// Keyboard: the tab list moves with the arrow keys.
	tb.do("focusing the tabs", chromedpFocus("#tab-entries"))
	tb.do("pressing →", chromedpKey("ArrowRight"))
	tb.until("the tools view, by keyboard", `!document.getElementById('view-tools').hidden && document.activeElement.id === 'tab-tools'`)
	// A reload keeps the session (the cookie), without the token.
	tb.open(w.base + "/#entries")
	tb.until("the entries after a reload", entryState("echo")+` === 'ready'`)
}

// Entries appear and change state live as cordis.yml is edited; a broken
// edit shows its problem with file:line:column.
func TestLiveEntries(t *testing.T) {
	w := startWeb(t, echoEntry)
	tb := newTab(t, 1280, 800)
	tb.open(w.url)
	tb.until("echo, ready", entryState("echo")+` === 'ready'`)

	w.write(echoEntry + demoEntry)
	tb.until("the demo entry, ready", entryState("demo")+` === 'ready'`)
	card := eval[string](tb, `document.querySelector('[data-entry=demo]').textContent`)
	for _, want := range []string{"demo 0.1.0", "stdio", "tools6"} {
		if !strings.Contains(card, want) {
			t.Errorf("the demo card lacks %q: %s", want, card)
		}
	}
	tb.until("the tools counted", `document.querySelector('.summary').textContent.includes('9 tools')`)
	tb.shoot("entries")

	// A server that cannot start: failed, with why.
	broken := strings.NewReplacer("id: demo", "id: broken", "serverName: demo", "serverName: broken", "command: !!js process.execPath", "command: no-such-server-binary").Replace(demoEntry)
	w.write(echoEntry + demoEntry + broken)
	tb.until("the broken entry, failed", entryState("broken")+` === 'failed'`)
	if msg := tb.text("[data-entry=broken] .error"); !strings.Contains(msg, "no-such-server-binary") || !strings.Contains(msg, "cordis.yml:") {
		t.Errorf("the failure says %q", msg)
	}
	// An edit of a serving entry that fails: the previous instance serves on,
	// and the card says so.
	w.write(echoEntry + strings.Replace(demoEntry, "command: !!js process.execPath", "command: no-such-server-binary", 1) + broken)
	tb.until("the failed reload's note", `document.querySelector('[data-entry=demo]').textContent.includes('the previous instance is still serving')`)
	if got := eval[string](tb, entryState("demo")); got != "ready" {
		t.Errorf("demo after a failed reload: %s", got)
	}

	// A broken file: nothing changes; the Config view says where.
	w.write(echoEntry + "- id: demo\n  name: mcp-client\n  config:\n    serverName: demo\n    transport: carrier-pigeon\n")
	tb.view("config")
	tb.until("the problem", `document.getElementById('problems') && document.getElementById('problems').textContent.includes('cordis.yml:9:16')`)
	if got := eval[string](tb, entryState("demo")); got != "ready" {
		t.Errorf("a refused edit changed the demo entry: %s", got)
	}
	tb.view("events")
	tb.until("the reload lines", `document.getElementById('event-lines').textContent.includes('reload rejected')`)
}

// A tool is called from the form its schema makes; a tool's question is
// asked on the page.
func TestToolForm(t *testing.T) {
	w := startWeb(t, echoEntry+demoEntry)
	tb := newTab(t, 1280, 800)
	tb.open(w.url)
	tb.until("demo, ready", entryState("demo")+` === 'ready'`)
	tb.view("tools")
	tb.typeIn("#tool-search", "calc")
	tb.until("the search", `document.querySelectorAll('[data-tool]').length === 1`)
	tb.click("[data-tool=mcp__demo__calc]")
	tb.typeIn("[data-field=expression]", "6*7")
	tb.click(".call-form button[type=submit]")
	tb.until("the result", `(document.querySelector('.model-text') || {}).textContent === '42'`)
	if got := tb.text(".blocks"); !strings.Contains(got, "42") {
		t.Errorf("as the server sent it: %q", got)
	}
	tb.shoot("tools")

	// greet asks a name: the page shows the form, checks it with the
	// console's rules, and sends the answer.
	tb.setValue("#tool-search", "")
	tb.typeIn("#tool-search", "greet")
	tb.click("[data-tool=greet]")
	tb.click(".call-form button[type=submit]")
	tb.until("the question", `!document.getElementById('question').hidden && document.getElementById('question').textContent.includes('How should I greet you?')`)
	tb.click("#q-send") // the name is required
	tb.until("why the answer does not fit", `document.querySelector('[data-problem=name]').textContent.includes('required')`)
	tb.typeIn("#q-name", "Ada")
	tb.click("#q-send")
	tb.until("greet's answer", `(document.querySelector('.model-text') || {}).textContent === 'Hello, Ada.'`)
	if !eval[bool](tb, `document.getElementById('question').hidden`) {
		t.Error("the question stays after its answer")
	}
}

// A resource is read and a prompt is got from their views: echo's native
// resource and prompt, a missing required argument refused with its name,
// the values the prompt suggests for an argument, the prompt's text put in
// the chat.
func TestResourcesAndPrompts(t *testing.T) {
	w := startWeb(t, echoEntry)
	tb := newTab(t, 1280, 800)
	tb.open(w.url)
	tb.until("echo, ready", entryState("echo")+` === 'ready'`)
	tb.view("resources")
	tb.until("echo's resource listed", `!!document.querySelector('[data-resource="echo://about"]')`)
	tb.click(`[data-resource="echo://about"]`)
	tb.click("#resource-read")
	tb.until("its contents", `(document.getElementById('resource-contents') || {}).textContent.includes('The echo plugin registers the tools')`)

	tb.view("prompts")
	tb.until("echo's prompt listed", `!!document.querySelector('[data-prompt=repeat]')`)
	tb.click("[data-prompt=repeat]")
	tb.click("#prompt-get")
	tb.until("the missing argument", `document.getElementById('prompt-error').textContent.includes('needs the argument "message"')`)
	// The prompt's suggestions for what is typed, in the field's list.
	tb.typeIn("#prompt-arg-message", "hel")
	tb.until("the suggested messages", `[...document.querySelectorAll('#prompt-arg-message-values option')].map((o) => o.value).join('|') === 'hello|hello world'`)
	tb.setValue("#prompt-arg-message", "")
	tb.typeIn("#prompt-arg-message", "hi")
	tb.click("#prompt-get")
	tb.until("the messages", `(document.getElementById('prompt-messages') || {}).textContent.includes('with the message "hi"')`)
	if got := tb.text("#prompt-messages"); !strings.Contains(got, "user") {
		t.Errorf("the messages lack their role: %q", got)
	}
	// Its text goes to the chat's message box, to edit and send.
	tb.click("#prompt-to-chat")
	tb.until("the prompt in the chat", `!document.getElementById('view-chat').hidden && document.getElementById('chat-input').value.includes('with the message "hi"')`)
}

// A server's resource template is read from a field per variable (the
// values the server suggests for it listed under the field), and an image
// resource shows as an image.
func TestResourceTemplate(t *testing.T) {
	srv := httptest.NewServer(fixture.HTTPHandler(fixture.Options{Resources: true, Only: []string{"echo"}}))
	t.Cleanup(srv.Close)
	w := startWeb(t, fmt.Sprintf("- id: fx\n  name: mcp-client\n  config:\n    serverName: fx\n    transport: streamable-http\n    url: %s/mcp\n", srv.URL))
	tb := newTab(t, 1280, 800)
	tb.open(w.url)
	tb.until("fx, ready", entryState("fx")+` === 'ready'`)
	tb.view("resources")
	tb.until("the template listed", `!!document.querySelector('[data-resource="fixture://notes/{name}"]')`)
	tb.click(`[data-resource="fixture://notes/{name}"]`)
	// The server's suggestions for the variable, in its field's list.
	tb.typeIn("#template-var-name", "al")
	tb.until("the suggested names", `[...document.querySelectorAll('#template-var-name-values option')].map((o) => o.value).join('|') === 'alpha'`)
	tb.setValue("#template-var-name", "")
	tb.typeIn("#template-var-name", "a b")
	tb.until("the URI made", `document.getElementById('resource-uri').value === 'fixture://notes/a%20b'`)
	tb.click("#resource-read")
	tb.until("the note", `(document.getElementById('resource-contents') || {}).textContent.includes('note a%20b')`)
	tb.click(`[data-resource="fixture://logo.png"]`)
	tb.click("#resource-read")
	tb.until("the image", `!!document.querySelector('#resource-contents img.result-image')`)
}

// A server that needs a login is logged in to from its card: the page
// shows the authorization page's link (a person's browser tab follows it
// here), the entry goes from needs-login to ready by itself, and the card
// says the login ended.
func TestLoginFromThePage(t *testing.T) {
	as := oauthtest.NewAS(t)
	var srv *httptest.Server
	srv = httptest.NewServer(as.Protect(fixture.HTTPHandler(fixture.Options{Only: []string{"echo"}}), func() string { return srv.URL + "/mcp" }))
	t.Cleanup(srv.Close)
	entry := fmt.Sprintf("- id: web\n  name: mcp-client\n  config:\n    serverName: web\n    transport: streamable-http\n    url: %s/mcp\n", srv.URL)
	w := startWeb(t, entry, "XDG_STATE_HOME="+t.TempDir())
	tb := newTab(t, 1280, 800)
	tb.open(w.url)
	tb.until("the entry, needs-login", entryState("web")+` === 'needs-login'`)
	tb.click("[data-login=web]")
	tb.until("the login page's link", `!!document.querySelector('[data-login-url=web]')`)
	link := eval[string](tb, `document.querySelector('[data-login-url=web]').href`)
	if !strings.HasPrefix(link, as.URL+"/authorize?") {
		t.Fatalf("the link %q is not the authorization server's", link)
	}
	if _, err := oauthtest.FollowHeadless(link); err != nil { // the person's tab
		t.Fatal(err)
	}
	tb.until("the entry, ready", entryState("web")+` === 'ready'`)
	tb.until("the card's note", `document.querySelector('[data-login-pane=web]').textContent.includes('Logged in.')`)
	if as.Count("token:code") != 1 {
		t.Errorf("%d code exchanges", as.Count("token:code"))
	}
}

// A chat turn with the fake model: its tool call folds open to arguments
// and result, the answer streams, usage shows; Cancel ends a turn whose
// stream stalls, and the model's request ends with it.
func TestChat(t *testing.T) {
	if skip != "" {
		t.Skip(skip)
	}
	llm := fakellm.Start(t,
		fakellm.Call(fakellm.ToolCallSpec{ID: "call-1", Name: "mcp__demo__calc", Arguments: `{"expression":"6*7"}`}),
		fakellm.Stream(fakellm.Reasoning("The calculator said 42."), fakellm.Text("It is "), fakellm.Text("42."), fakellm.Finish("stop"), fakellm.Usage(120, 7, 100)),
		fakellm.Reply{Chunks: fakellm.Text("Let me think about that at length"), Stall: true},
	)
	w := startWeb(t, echoEntry+demoEntry+agentEntry(llm.URL))
	tb := newTab(t, 1280, 800)
	tb.open(w.url)
	tb.until("demo, ready", entryState("demo")+` === 'ready'`)
	tb.view("chat")
	tb.until("the agent", `document.getElementById('chat-agent').value === 'bot'`)

	tb.typeIn("#chat-input", "what is 6*7? use the calculator\n")
	tb.until("the answer", `document.querySelector('.answer') && document.querySelector('.answer').textContent === 'It is 42.'`)
	tb.until("the end of the turn", `document.getElementById('chat-cancel').hidden`)
	call := eval[string](tb, `document.querySelector('[data-call=call-1]').textContent`)
	for _, want := range []string{"mcp__demo__calc", `"expression": "6*7"`, "42"} {
		if !strings.Contains(call, want) {
			t.Errorf("the tool call's fold lacks %q: %s", want, call)
		}
	}
	if u := tb.text(".usage"); !strings.Contains(u, "(100 cached)") || !strings.Contains(u, "2 steps, 1 tool call") {
		t.Errorf("usage: %q", u)
	}
	if r := tb.text(".reasoning-fold"); !strings.Contains(r, "The calculator said 42.") {
		t.Errorf("the reasoning's fold: %q", r)
	}
	tb.click("[data-call=call-1] summary")
	tb.shoot("chat")

	tb.typeIn("#chat-input", "and now think\n")
	tb.until("the streamed text, while the turn runs", `[...document.querySelectorAll('.answer')].some(e => e.textContent.includes('at length')) && !document.getElementById('chat-cancel').hidden`)
	tb.click("#chat-cancel")
	tb.until("the cancelled turn", `document.querySelector('.cancelled') && document.getElementById('chat-cancel').hidden`)
	reqs := llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	select {
	case <-reqs[2].Done():
	case <-timeout():
		t.Fatal("the model's request went on after Cancel")
	}
	// New conversation: the transcript empties.
	tb.click("#chat-new")
	tb.until("a new conversation", `document.querySelectorAll('.turn').length === 0`)
}

// A page on another origin cannot drive the harness, even with the
// session's cookie in the browser (another port is the same site).
func TestCrossOriginPost(t *testing.T) {
	w := startWeb(t, echoEntry)
	evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/evil.js":
			rw.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(rw, `
const target = new URLSearchParams(location.search).get('target');
const body = JSON.stringify({id: 'echo'});
Promise.allSettled([
  fetch(target + '/api/restart', {method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'Content-Type': 'text/plain'}, body}),
  fetch(target + '/api/restart', {method: 'POST', credentials: 'include', headers: {'Content-Type': 'application/json', 'X-CSRF-Token': 'guess'}, body}),
]).then(rs => { document.title = 'done ' + rs.map(r => r.status).join(' '); });
`)
		default:
			fmt.Fprint(rw, `<!doctype html><title>evil</title><script src="/evil.js"></script>`)
		}
	}))
	t.Cleanup(evil.Close)

	tb := newTab(t, 1280, 800)
	tb.open(w.url) // the browser holds a session
	tb.until("echo, ready", entryState("echo")+` === 'ready'`)
	tb.open(evil.URL + "/?target=" + w.base)
	tb.until("the evil page's requests", `document.title.startsWith('done')`)
	w.waitErr("refused a request from another origin", "/api/restart")
	if strings.Contains(w.err.Text(), `msg="entry stopped" entry=echo`) {
		t.Errorf("a page of another origin restarted echo:\n%s", w.err.Text())
	}
}

// A phone's screen: the page fits its width, every view is reachable.
func TestPhone(t *testing.T) {
	w := startWeb(t, echoEntry+demoEntry)
	tb := newTab(t, 390, 844)
	tb.open(w.url)
	tb.until("demo, ready", entryState("demo")+` === 'ready'`)
	for _, v := range []string{"entries", "tools", "chat", "events", "config"} {
		tb.view(v)
		if over := eval[int](tb, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
			t.Errorf("the %s view is %d px wider than the screen", v, over)
		}
	}
	tb.view("entries")
	tb.shoot("phone")

	// Light and dark follow the system's preference.
	if bg := eval[string](tb, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(247, 247, 245)" {
		t.Errorf("the light background is %s", bg)
	}
	tb.do("asking for dark", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
		})
		return err
	}))
	tb.until("the dark colours", `getComputedStyle(document.body).backgroundColor === 'rgb(22, 25, 28)'`)
	tb.shoot("phone-dark")
}
