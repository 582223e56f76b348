package host

import (
	"reflect"

	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/host/secret"
)

// Secret configuration fields carry the struct tag `secret:"true"`: every
// string below such a field (a string, the values of a map, the items of a
// list) joins the host's secret set when the entry is checked or applied,
// and is never printed (see package secret). Two tags mark fields that are
// printed but may carry a credential: `secret:"url"` (a URL: its password,
// with the Basic header it makes, and its query values named like
// credentials join the set) and `secret:"args"` (a command line: what
// [secret.ArgCredentials] finds: values of flags named like credentials,
// NAME=value with a NAME of the scrub table, the credentials of a URL or a
// Bearer or Basic token anywhere in an argument).

// secretValues returns the strings below the fields of v tagged secret.
func secretValues(v any) []string {
	var out []string
	collect(reflect.ValueOf(v), false, &out, 0)
	return out
}

func collect(v reflect.Value, secretField bool, out *[]string, depth int) {
	if depth > 32 || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			collect(v.Elem(), secretField, out, depth+1)
		}
	case reflect.String:
		if secretField {
			*out = append(*out, v.String())
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			fv := v.Field(i)
			switch tag := f.Tag.Get("secret"); {
			case tag == "url" && fv.Kind() == reflect.String:
				*out = append(*out, secret.URLCredentials(fv.String())...)
			case tag == "args" && fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
				*out = append(*out, secret.ArgCredentials(fv.Interface().([]string))...)
			default:
				collect(fv, secretField || tag == "true", out, depth+1)
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			collect(iter.Value(), secretField, out, depth+1)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			collect(v.Index(i), secretField, out, depth+1)
		}
	}
}

// recording returns env with a Lookup that also adds every value it finds to
// set: whatever a !!js expression read from the environment is a secret,
// whichever field it lands in (process.cwd() is not).
func recording(env jsexpr.Env, set *secret.Set) jsexpr.Env {
	if set == nil || env.Lookup == nil {
		return env
	}
	lookup := env.Lookup
	env.Lookup = func(name string) (string, bool) {
		v, ok := lookup(name)
		if ok {
			set.Add(v)
		}
		return v, ok
	}
	return env
}
