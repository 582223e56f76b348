package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/plugins/prompts"
	"github.com/harness-go/harness/plugins/resources"
	"github.com/harness-go/harness/plugins/tools"

	// The plugin kind the bridge runs.
	_ "github.com/harness-go/harness/plugins/mcpclient"
)

// Server is one mcp-client entry of a cordis.yml.
type Server struct {
	ID         string
	ServerName string
	Command    string
	Args       []string
}

// FixtureServers returns n entries running the fixture, named s000, s001, ….
func FixtureServers(bins *Binaries, n int) []Server {
	out := make([]Server, n)
	for i := range out {
		name := fmt.Sprintf("s%03d", i)
		out[i] = Server{ID: name, ServerName: name, Command: bins.Fixture, Args: FixtureArgs}
	}
	return out
}

// RenderConfig writes the cordis.yml of the given servers, with an optional
// comment line on top (a comment changes the file's bytes but no entry).
func RenderConfig(servers []Server, comment string) []byte {
	var b strings.Builder
	if comment != "" {
		b.WriteString("# " + comment + "\n")
	}
	if len(servers) == 0 {
		b.WriteString("[]\n")
	}
	for _, s := range servers {
		args := make([]string, len(s.Args))
		for i, a := range s.Args {
			args[i] = strconv.Quote(a)
		}
		fmt.Fprintf(&b, "- id: %s\n  name: mcp-client\n  config:\n    serverName: %s\n    transport: stdio\n    command: %s\n    args: [%s]\n",
			strconv.Quote(s.ID), strconv.Quote(s.ServerName), strconv.Quote(s.Command), strings.Join(args, ", "))
	}
	return []byte(b.String())
}

// Bridge is an in-process harness: a host with the tools service and the
// mcp-client kind, configured by a cordis.yml in its own folder — what the
// harness binary runs, minus the command line.
type Bridge struct {
	Host   *host.Host
	Tools  *tools.Registry
	Config string // the path of its cordis.yml
}

// NewBridge returns a host with no entries whose cordis.yml lives in dir.
// log nil logs warnings to stderr, as the harness binary does by default.
func NewBridge(dir string, log *slog.Logger) *Bridge {
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	h := host.New(host.Options{Logger: log})
	reg := tools.New()
	h.Provide(tools.Service, reg)
	h.Provide(resources.Service, resources.New())
	h.Provide(prompts.Service, prompts.New())
	return &Bridge{Host: h, Tools: reg, Config: filepath.Join(dir, "cordis.yml")}
}

// Apply writes cordis.yml with these servers, loads it and waits until
// every entry has settled; an entry that is not ready is an error.
func (b *Bridge) Apply(ctx context.Context, servers []Server) error {
	if err := b.Write(servers, ""); err != nil {
		return err
	}
	return b.LoadAndSettle(ctx)
}

// Write writes cordis.yml (see [RenderConfig]).
func (b *Bridge) Write(servers []Server, comment string) error {
	return WriteFileAtomic(b.Config, RenderConfig(servers, comment))
}

// LoadAndSettle loads cordis.yml and waits until every entry has settled;
// an entry that is not ready is an error.
func (b *Bridge) LoadAndSettle(ctx context.Context) error {
	if _, err := b.Host.LoadFile(ctx, b.Config, true); err != nil {
		return err
	}
	if err := b.Host.Settle(ctx); err != nil {
		return err
	}
	return AllReady(b.Host)
}

// AllReady reports the first entry of h that is not ready.
func AllReady(h *host.Host) error {
	for _, e := range h.Snapshot() {
		if e.State != host.Ready {
			return fmt.Errorf("entry %q is %s: %s", e.ID, e.State, e.Error)
		}
	}
	return nil
}

// Close disposes every entry and the host.
func (b *Bridge) Close() error { return b.Host.Close(context.Background()) }

// WriteFileAtomic writes data to a temporary file beside path and renames it
// over path, as editors save.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := firstErr(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// StartBridge runs the fixture as the one entry of an in-process harness;
// its calls go through tools.Registry.Execute and the mcp-client plugin.
func StartBridge(ctx context.Context, bins *Binaries, dir string, log *slog.Logger) (Client, error) {
	b := NewBridge(dir, log)
	if err := b.Apply(ctx, []Server{{ID: "bench", ServerName: "bench", Command: bins.Fixture, Args: FixtureArgs}}); err != nil {
		b.Close()
		return nil, fmt.Errorf("bridge: %w", err)
	}
	const name = "mcp__bench__echo"
	args := json.RawMessage(`{"message":"` + EchoMessage + `"}`)
	return &funcClient{
		name: NameBridge,
		call: func(ctx context.Context) error {
			res := b.Tools.Execute(ctx, name, args)
			if res.IsError || res.Text != EchoAnswer {
				return fmt.Errorf("unexpected result %+v", res)
			}
			return nil
		},
		close: b.Close,
	}, nil
}

// QuietLogger drops every record below Error.
func QuietLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelError}))
}
