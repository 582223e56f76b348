package host_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/harness-go/harness/host"
)

// greeting is a plugin kind: its exported fields are its configuration,
// New's value holds the defaults, Validate points a problem at its key.
type greeting struct {
	Text string `yaml:"text"`
}

func (g *greeting) Validate() error {
	if g.Text == "" {
		return host.FieldErrorf("text", "must not be empty")
	}
	return nil
}

// Apply sets the instance up inside its fiber; what it defers there is
// undone when the entry is removed, changed, or the host closes.
func (g *greeting) Apply(ctx *host.Context) error {
	_, err := ctx.Defer("say goodbye", func(context.Context) error { return nil })
	return err
}

// Status is what harness status shows of the instance.
func (g *greeting) Status() any { return g.Text }

func init() {
	host.Register(host.Kind{
		Name: "example-greeting",
		Doc:  "holds a greeting",
		New:  func() host.Plugin { return &greeting{Text: "hello"} },
	})
}

// A host runs the entries of a cordis.yml: here one that applies and one
// disabled. An edit it refuses changes nothing.
func Example() {
	h := host.New(host.Options{Logger: slog.New(slog.DiscardHandler)})
	defer h.Close(context.Background())

	load := func(src string) error {
		f, err := host.ParseFile("cordis.yml", []byte(src))
		if err != nil {
			return err
		}
		if _, err := h.Load(context.Background(), f); err != nil {
			return err
		}
		return h.Settle(context.Background())
	}
	if err := load(`
- id: hi
  name: example-greeting
  config: {text: hi there}
- id: later
  name: example-greeting
  disabled: true
`); err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range h.Snapshot() {
		fmt.Printf("%s: %s %v\n", e.ID, e.State, e.Details)
	}

	fmt.Println(load(`
- id: hi
  name: example-greeting
  config: {text: ""}
`))
	fmt.Println(h.Snapshot()[0].Details)
	// Output:
	// hi: ready hi there
	// later: disabled <nil>
	// cordis.yml:4:18: entry "hi": config.text: must not be empty
	// hi there
}
