package host_test

import (
	"testing"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
)

// FuzzParseFile feeds arbitrary bytes to the cordis.yml parser and, when
// they parse, to the checker: no input may panic, and a parsed file must
// reconcile with itself to no changes.
func FuzzParseFile(f *testing.F) {
	for _, seed := range []string{
		"- id: a\n  name: probe\n",
		"- id: a\n  name: probe\n  config: {label: x, tools: [a, b], count: 3}\n",
		"- id: a\n  name: probe\n  config:\n    secret: !!js '`Bearer ${process.env.T}`'\n    label: !!js process.env.X ?? 'd'\n",
		"- id: a\n  name: consumer\n  disabled: true\n- id: b\n  name: nope\n",
		"- &x {id: a, name: probe}\n- *x\n",
		"[]",
		"a: b",
		"- id: a\n  name: probe\n  config: {count: many}\n",
	} {
		f.Add([]byte(seed))
	}
	env := jsexpr.Env{Lookup: func(k string) (string, bool) { return "v-" + k, k != "UNSET" }, Cwd: "/"}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := host.ParseFile("cordis.yml", data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		host.Check(file, env, nil)
		if p := host.Reconcile(file.Entries, file.Entries); !p.Empty() {
			t.Fatalf("a file differs from itself: %s", p)
		}
		again, err := host.ParseFile("cordis.yml", data)
		if err != nil {
			t.Fatalf("the same bytes parsed once and failed once: %v", err)
		}
		if p := host.Reconcile(file.Entries, again.Entries); !p.Empty() {
			t.Fatalf("parsing is not deterministic: %s", p)
		}
	})
}
