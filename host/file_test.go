package host_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/harness-go/harness/host"
	"github.com/harness-go/harness/host/jsexpr"
)

func parse(t *testing.T, src string) *host.File {
	t.Helper()
	f, err := host.ParseFile("cordis.yml", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return f
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	const (
		a  = "- id: a\n  name: probe\n"
		a2 = "- id: a\n  name: probe\n  config: {label: changed}\n"
		aK = "- id: a\n  name: consumer\n"
		aD = "- id: a\n  name: probe\n  disabled: true\n"
		b  = "- id: b\n  name: probe\n"
		bD = "- id: b\n  name: probe\n  disabled: true\n"
		c  = "- id: c\n  name: probe\n"
	)
	const (
		r1  = "- id: r\n  name: relay\n  config: {label: one, speed: 1}\n"
		r1f = "- id: r\n  name: relay\n  config: {label: one, speed: 2}\n" // live key only
		r2  = "- id: r\n  name: relay\n  config: {label: two, speed: 2}\n"
		rP  = "- id: r\n  name: probe\n"
		rD  = "- id: r\n  name: relay\n  disabled: true\n  config: {label: one, speed: 3}\n"
	)
	for _, tc := range []struct {
		name            string
		running, wanted string
		stop, start     []string
		replace, update []string
		summary         string
	}{
		{"first load", "", a + b, nil, []string{"a", "b"}, nil, nil, "added a, b"},
		{"unchanged", a + b, a + b, nil, nil, nil, nil, "no changes"},
		{"config changed", a + b, a2 + b, []string{"a"}, []string{"a"}, nil, nil, "restarted a"},
		{"kind changed", a + b, aK + b, []string{"a"}, []string{"a"}, nil, nil, "restarted a"},
		{"removed", a + b + c, a, []string{"c", "b"}, nil, nil, nil, "removed b, c"},
		{"added in the middle", a + c, a + b + c, nil, []string{"b"}, nil, nil, "added b"},
		{"disabled", a + b, aD + b, []string{"a"}, nil, nil, nil, "disabled a"},
		{"enabled", aD + b, a + b, nil, []string{"a"}, nil, nil, "enabled a"},
		{"disabled entry removed", a + bD, a, nil, nil, nil, nil, "removed b"},
		{"disabled entry changed", bD, "- id: b\n  name: probe\n  disabled: true\n  config: {label: x}\n", nil, nil, nil, nil, "changed b (disabled: nothing runs)"},
		{"reordered only", a + b, b + a, nil, nil, nil, nil, "no changes"},
		{"everything at once", a + b + c, b + a2 + "- id: d\n  name: probe\n", []string{"c", "a"}, []string{"a", "d"}, nil, nil, "added d; restarted a; removed c"},
		{"a kind that makes before it breaks", r1 + a, r2 + a, nil, nil, []string{"r"}, nil, "restarted r"},
		{"live keys only", r1 + a, r1f + a, nil, nil, nil, []string{"r"}, "updated r"},
		{"to another kind: stop first", r1, rP, []string{"r"}, []string{"r"}, nil, nil, "restarted r"},
		{"disabled, with a live key changed", r1, rD, []string{"r"}, nil, nil, nil, "disabled r"},
		{"re-enabled, with its config changed", rD, r1, nil, []string{"r"}, nil, nil, "enabled r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var running []*host.Entry
			if tc.running != "" {
				running = parse(t, tc.running).Entries
			}
			p := host.Reconcile(running, parse(t, tc.wanted).Entries)
			if !slices.Equal(p.Stop, tc.stop) || !slices.Equal(p.Start, tc.start) || !slices.Equal(p.Replace, tc.replace) || !slices.Equal(p.Update, tc.update) {
				t.Fatalf("stop %v start %v replace %v update %v, want stop %v start %v replace %v update %v",
					p.Stop, p.Start, p.Replace, p.Update, tc.stop, tc.start, tc.replace, tc.update)
			}
			if p.String() != tc.summary {
				t.Fatalf("summary %q, want %q", p.String(), tc.summary)
			}
		})
	}
}

func TestDigestIgnoresFormatting(t *testing.T) {
	t.Parallel()
	x := parse(t, "- id: a # comment\n  name: probe\n  config:\n    label: one\n    tools: [x, y]\n    secret: !!js process.env.T\n")
	y := parse(t, "- {name: probe, id: a, config: {tools: ['x', \"y\"], secret: !!js \"process.env['T']\", label: \"one\"}}\n")
	if p := host.Reconcile(x.Entries, y.Entries); !p.Empty() {
		t.Fatalf("formatting counted as a change: %s", p)
	}
	z := parse(t, "- id: a\n  name: probe\n  config:\n    label: one\n    tools: [y, x]\n    secret: !!js process.env.T\n")
	if p := host.Reconcile(x.Entries, z.Entries); p.Empty() {
		t.Fatal("a reordered list must count as a change")
	}
	n := parse(t, "- id: a\n  name: probe\n  config:\n    label: '1'\n")
	m := parse(t, "- id: a\n  name: probe\n  config:\n    label: 1\n")
	if p := host.Reconcile(n.Entries, m.Entries); p.Empty() {
		t.Fatal("a string and a number are different values")
	}
}

func TestParseProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, src, want string }{
		{"entry not a mapping", "- just a string\n", "cordis.yml:1:3: an entry must be a mapping"},
		{"missing id", "- name: probe\n", `cordis.yml:1:3: id: is required`},
		{"missing name", "- id: a\n", `cordis.yml:1:3: entry "a": name: is required`},
		{"unknown entry key", "- id: a\n  name: probe\n  conifg: {}\n", `cordis.yml:3:3: entry "a": unknown entry key "conifg"`},
		{"config not a mapping", "- id: a\n  name: probe\n  config: [1]\n", `cordis.yml:3:11: entry "a": config: must be a mapping`},
		{"disabled not a bool", "- id: a\n  name: probe\n  disabled: maybe\n", `cordis.yml:3:13: entry "a": disabled: must be true or false`},
		{"id with spaces", "- id: a b\n  name: probe\n", `cordis.yml:1:7: id: must be a non-empty string`},
		// !!js makes values below config only: an id taken as the
		// expression's text would be a surprise.
		{"an expression as id", "- id: !!js process.env.HOME\n  name: probe\n", `cordis.yml:1:7: id: !!js is evaluated only below config: write the value out`},
		{"an expression as name", "- id: a\n  name: !!js process.env.KIND\n", `cordis.yml:2:9: entry "a": name: !!js is evaluated only below config`},
		{"an expression as disabled", "- id: a\n  name: probe\n  disabled: !!js process.env.OFF\n", `cordis.yml:3:13: entry "a": disabled: !!js is evaluated only below config`},
		{"custom tag", "- id: a\n  name: probe\n  config: {label: !env X}\n", `cordis.yml:3:19: entry "a": config.label: unsupported tag !env`},
		{"js in a template", "- id: a\n  name: probe\n  config:\n    label: !!js '`a ${require(1)}`'\n", `cordis.yml:4:23: entry "a": config.label: !!js: unsupported expression "require(...)"`},
		{"js double quoted", "- id: a\n  name: probe\n  config:\n    label: !!js \"process.exit()\"\n", `cordis.yml:4:18: entry "a": config.label: !!js:`},
		{"alias bomb", "- id: a\n  name: probe\n  config:\n    a: &a [x, x, x, x, x, x, x, x, x, x]\n    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n    f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n", "cordis.yml:1:1: aliases expand the file to 10 times its"},
		{"two problems", "- id: a\n- id: b\n", "2 problems:\n  cordis.yml:1:3: entry \"a\": name: is required (the plugin kind)\n  cordis.yml:2:3: entry \"b\": name: is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := host.ParseFile("cordis.yml", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "js") || !strings.Contains(tc.name, "js") {
				return
			}
			if !strings.Contains(err.Error(), jsexpr.Supported) {
				t.Fatalf("a rejected expression must list the supported forms: %v", err)
			}
		})
	}
}

func TestCheckReportsWarningsAndDuplicates(t *testing.T) {
	t.Parallel()
	f := parse(t, `
- id: one
  name: probe
  config:
    reserve: github
    label: !!js process.env.UNSET_LABEL
- id: two
  name: probe
  config:
    reserve: github
- id: three
  name: probe
  disabled: true
  config:
    reserve: github
- id: four
  name: probe
  config:
    secret: !!js '`+"`Bearer ${process.env.NO_TOKEN}`"+`'
- id: five
  name: probe
  config:
    needsLabel: true
    label: !!js process.env.NEEDED_LABEL
`)
	env := jsexpr.Env{Lookup: func(string) (string, bool) { return "", false }, Cwd: "/"}
	r := host.Check(f, env, nil)
	if len(r.Errors) != 1 || r.Errors[0].Error() != `cordis.yml:10:14: entry "two": config.reserve: "github" is already used by entry "one" (cordis.yml:5:14); it must be unique among enabled entries` {
		t.Fatalf("errors %v", r.Errors)
	}
	var warnings []string
	for _, w := range r.Warnings {
		warnings = append(warnings, w.Error())
	}
	want := []string{
		`cordis.yml:6:12: entry "one": config.label: undefined (UNSET_LABEL not set): the key is left out`,
		`cordis.yml:19:13: entry "four": config.secret: !!js: process.env.NO_TOKEN is not set (used in a template literal)`,
		// A key that is required, left out: the entry fails when applied,
		// not the file.
		`cordis.yml:24:12: entry "five": config.label: undefined (NEEDED_LABEL not set): the key is left out`,
		`cordis.yml:23:5: entry "five": config.label: is required (a !!js value is undefined, its key left out: process.env.NEEDED_LABEL is not set)`,
	}
	if !slices.Equal(warnings, want) {
		t.Fatalf("warnings\n%s\nwant\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
}

func TestKindRegistry(t *testing.T) {
	t.Parallel()
	k, ok := host.LookupKind("probe-alias")
	if !ok || k.Name != "probe" {
		t.Fatalf("alias lookup: %v %v", k, ok)
	}
	names := host.KindNames()
	if !slices.Contains(names, "probe") || !slices.Contains(names, "probe-alias") || !slices.IsSorted(names) {
		t.Fatalf("names %v", names)
	}
	for _, k := range host.Kinds() {
		if k.Name == "probe-alias" {
			t.Fatal("Kinds lists an alias as a kind")
		}
	}
	for name, k := range map[string]host.Kind{
		"duplicate":                          {Name: "probe", New: func() host.Plugin { return nil }},
		"bad name":                           {Name: "has space", New: func() host.Plugin { return nil }},
		"nil New":                            {Name: "fresh-kind"},
		"make before break without TakeOver": {Name: "mbb-no-successor", MakeBeforeBreak: true, New: func() host.Plugin { return &probe{} }},
		"make before break providing a service": {Name: "mbb-provider", MakeBeforeBreak: true, Provides: []string{"x"},
			New: func() host.Plugin { return &relay{} }},
		"live keys without Reconfigure": {Name: "live-no-reconfigurer", Live: []string{"label"}, New: func() host.Plugin { return &probe{} }},
		"a live key that is no config key": {Name: "live-misspelt", Live: []string{"sped"}, MakeBeforeBreak: true,
			New: func() host.Plugin { return &relay{} }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			host.Register(k)
		}()
	}
}

// A Live key is checked against the configuration's keys at Register: a
// misspelt one would otherwise make every edit of that key a restart.
func TestRegisterNamesAMisspeltLiveKey(t *testing.T) {
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, `Live names "sped", not a key of config:`) {
			t.Errorf("Register panicked with %q", msg)
		}
	}()
	host.Register(host.Kind{Name: "live-misspelt-named", Live: []string{"speed", "sped"}, MakeBeforeBreak: true,
		New: func() host.Plugin { return &relay{} }})
}
